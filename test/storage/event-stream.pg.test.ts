import { sql } from "kysely";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import {
  migrate,
  openPostgres,
  PgAutomationStore,
  PgOpenLineageStore,
  STREAM_START,
  type EventCursor,
  type PostgresHandle,
} from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-services.js";
import { resetDatabase } from "../support/reset.js";
import { commitEvents, eventStreamContract, readIds, readToEnd } from "./event-stream.contract.js";

/** A session of its own with a transaction left open, as an analyst's idle psql would keep it. */
async function openTransaction(url: string): Promise<{ client: pg.Client; xid: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("begin");
  const { rows } = await client.query<{ xid: string }>("select pg_current_xact_id()::text as xid");
  return { client, xid: rows[0]!.xid };
}

/** Inserts an event in a client's open transaction; returns its id. */
async function insertIn(client: pg.Client, key: string): Promise<number> {
  const { rows } = await client.query<{ id: string }>(
    "insert into events (kind, asset_key, partition_key) values ('external', 'stream/a', $1) returning id",
    [key],
  );
  return Number(rows[0]!.id);
}

/** Whether a reader going below the oldest running transaction of the cluster would be held back by `xid`. */
async function holdsXmin(db: PostgresHandle["db"], xid: string): Promise<boolean> {
  const { rows } = await sql<{ held: boolean }>`select pg_snapshot_xmin(pg_current_snapshot()) <= ${xid}::xid8 as held`.execute(db);
  return rows[0]!.held;
}

/**
 * A migrated database on a cluster of this file's own. The stream keeps the cluster's running transactions pending,
 * so on the shared cluster the transactions of suites running beside this one would show up in its cursors.
 */
function usePrivateCluster(): {
  readonly url: string;
  readonly db: PostgresHandle["db"];
  scratchDatabase(): Promise<{ url: string; drop(): Promise<void> }>;
} {
  let cluster: PrivatePostgres | undefined;
  let handle: PostgresHandle | undefined;
  let scratch = 0;
  beforeAll(async () => {
    cluster = await startPrivatePostgres();
    handle = await openPostgres({ kind: "postgres", url: cluster.url() });
    await migrate(handle.db);
  }, 180_000);
  afterAll(async () => {
    await handle?.close();
    await cluster?.destroy();
  });
  const started = () => {
    if (!cluster || !handle) throw new Error("usePrivateCluster(): the cluster runs only from beforeAll to afterAll");
    return { cluster, handle };
  };
  return {
    get url() {
      return started().cluster.url();
    },
    get db() {
      return started().handle.db;
    },
    async scratchDatabase() {
      const { cluster } = started();
      const name = `scratch_${++scratch}`;
      await cluster.query(`create database ${name}`);
      return { url: cluster.url(name), drop: async () => void (await cluster.query(`drop database ${name} with (force)`)) };
    },
  };
}

const pendingIds = (cursor: EventCursor) => cursor.pending.map((p) => p.txId);

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32), so a failing interleaving can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Writer {
  readonly client: pg.Client;
  open: boolean;
  ids: number[];
}

/**
 * Writers on sessions of their own begin, take their xid (sometimes only at
 * their first insert), insert, commit or roll back in a random interleaving;
 * `between` runs after every step. Returns the ids committed, per transaction.
 */
async function interleave(
  url: string,
  seed: number,
  options: { writers: number; steps: number },
  between: (next: () => number) => Promise<void>,
): Promise<number[][]> {
  const next = random(seed);
  const writers: Writer[] = [];
  const committed: number[][] = [];
  try {
    for (let i = 0; i < options.writers; i++) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      writers.push({ client, open: false, ids: [] });
    }
    let key = 0;
    const end = async (w: Writer, commit: boolean) => {
      await w.client.query(commit ? "commit" : "rollback");
      if (commit && w.ids.length > 0) committed.push(w.ids);
      w.open = false;
      w.ids = [];
    };
    for (let step = 0; step < options.steps; step++) {
      const w = writers[Math.floor(next() * writers.length)]!;
      if (!w.open) {
        await w.client.query("begin");
        // An xid taken now, long before commit: the order of xids is not the order of commits.
        if (next() < 0.5) await w.client.query("select pg_current_xact_id()");
        w.open = true;
      } else if (next() < 0.6) {
        w.ids.push(await insertIn(w.client, `k${key++}`));
      } else {
        await end(w, next() < 0.8);
      }
      await between(next);
    }
    for (const w of writers) if (w.open) await end(w, true);
    return committed;
  } finally {
    await Promise.all(writers.map((w) => w.client.end().catch(() => undefined)));
  }
}

describePostgres("the event stream on Postgres", () => {
  const database = usePrivateCluster();
  const clients: pg.Client[] = [];
  const handles: PostgresHandle[] = [];
  const drops: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    await resetDatabase(database.db);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => undefined);
    for (const h of handles.splice(0)) await h.close().catch(() => undefined);
    for (const drop of drops.splice(0)) await drop();
  });

  eventStreamContract("postgres", async () => {
    await resetDatabase(database.db);
    return { db: database.db };
  });

  it("a transaction open in another database of the cluster holds nothing back; its commit changes nothing", async () => {
    const other = await database.scratchDatabase();
    drops.push(other.drop);
    const idle = await openTransaction(other.url);
    clients.push(idle.client);
    const db = database.db;
    const before = await readToEnd(db, STREAM_START, 100);
    // A reader below the oldest running transaction would wait for this one.
    expect(await holdsXmin(db, idle.xid)).toBe(true);

    const a = await commitEvents(db, ["1"]);
    const b = await commitEvents(db, ["2", "3"]);
    const read = await readToEnd(db, before.cursor, 100);
    expect(read.ids).toEqual([...a.ids, ...b.ids]);
    // Still running when the position passed it: pending (it could have written events, for all the reader knows).
    expect(pendingIds(read.cursor)).toContain(idle.xid);
    expect(await holdsXmin(db, idle.xid)).toBe(true);

    await idle.client.query("commit");
    const after = await readIds(db, read.cursor, 100);
    expect(after.ids).toEqual([]);
    expect(pendingIds(after.cursor)).not.toContain(idle.xid);
    expect(after.cursor).toMatchObject({ txId: b.txId, id: b.ids[1] });
  });

  it("a long transaction of ours: later commits are read at once, its events once when it commits, none when it rolls back", async () => {
    const db = database.db;
    for (const outcome of ["commit", "rollback"] as const) {
      const start = (await readToEnd(db, STREAM_START, 100)).cursor;
      const long = await openTransaction(database.url);
      clients.push(long.client);
      const early = await insertIn(long.client, `long-${outcome}`);
      // One that writes no event but holds an xid too (an unrelated update in our database).
      const unrelated = await openTransaction(database.url);
      clients.push(unrelated.client);
      await unrelated.client.query("insert into cursors (name, value) values ($1, '{}')", [`unrelated-${outcome}`]);

      const a = await commitEvents(db, ["later-1"]);
      const first = await readToEnd(db, start, 100);
      expect(first.ids).toEqual(a.ids);
      expect(pendingIds(first.cursor)).toEqual(expect.arrayContaining([long.xid, unrelated.xid]));
      const b = await commitEvents(db, ["later-2"]);
      const second = await readToEnd(db, first.cursor, 100);
      expect(second.ids).toEqual(b.ids);

      await unrelated.client.query("commit");
      await long.client.query(outcome);
      const third = await readToEnd(db, second.cursor, 100);
      expect(third.ids).toEqual(outcome === "commit" ? [early] : []);
      expect(pendingIds(third.cursor)).not.toContain(long.xid);
      expect(pendingIds(third.cursor)).not.toContain(unrelated.xid);
      expect((await readToEnd(db, third.cursor, 100)).ids).toEqual([]);
    }
  });

  it("keeps at most maxPending transactions pending: past that the position waits, and nothing is lost", async () => {
    const db = database.db;
    const start = (await readToEnd(db, STREAM_START, 100)).cursor;
    const committed: number[] = [];
    const open: { client: pg.Client; xid: string }[] = [];
    for (let i = 0; i < 3; i++) {
      committed.push(...(await commitEvents(db, [`c${i}`])).ids);
      const t = await openTransaction(database.url);
      clients.push(t.client);
      open.push(t);
    }
    const last = await commitEvents(db, ["c3"]);
    committed.push(...last.ids);
    // Reading `last` would put all three open transactions below the position: one more than allowed.
    const read = await readIds(db, start, 100, 2);
    expect(read.ids).not.toContain(last.ids[0]);
    expect(read.cursor.pending.length).toBeLessThanOrEqual(2);
    expect(committed.slice(0, read.ids.length)).toEqual(read.ids);

    await open[0]!.client.query("commit");
    let cursor = read.cursor;
    const ids = [...read.ids];
    // Room again: it moves on (other sessions of the cluster may take some of the room for a while).
    for (const deadline = Date.now() + 30_000; !ids.includes(last.ids[0]!) && Date.now() < deadline;) {
      const page = await readIds(db, cursor, 100, 2);
      ids.push(...page.ids);
      cursor = page.cursor;
      if (!ids.includes(last.ids[0]!)) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(ids).toEqual(committed);
    for (const t of open.slice(1)) await t.client.query("commit");
  });

  it("pages with a small limit while writers interleave: every committed event once, each transaction's in id order", async () => {
    const db = database.db;
    for (const seed of [1, 2, 3, 4]) {
      let cursor = (await readToEnd(db, STREAM_START, 100)).cursor;
      const delivered: number[] = [];
      const committed = await interleave(database.url, seed, { writers: 6, steps: 250 }, async (next) => {
        if (next() >= 0.4) return;
        const page = await readIds(db, cursor, 3);
        delivered.push(...page.ids);
        cursor = page.cursor;
      });
      const duringRun = delivered.length;
      const rest = await readToEnd(db, cursor, 3);
      delivered.push(...rest.ids);
      const all = committed.flat();
      expect(all.length, `seed ${seed}`).toBeGreaterThan(20);
      // Read while transactions were open, not only once they had all ended.
      expect(duringRun, `seed ${seed}`).toBeGreaterThan(0);
      expect(new Set(delivered).size, `seed ${seed}: no event twice`).toBe(delivered.length);
      expect(
        [...delivered].sort((x, y) => x - y),
        `seed ${seed}: every committed event, nothing else`,
      ).toEqual([...all].sort((x, y) => x - y));
      for (const ids of committed)
        expect(
          delivered.filter((id) => ids.includes(id)),
          `seed ${seed}`,
        ).toEqual(ids);
      expect((await readIds(db, rest.cursor, 3)).ids).toEqual([]);
    }
  });

  it("two readers taking the automation lease in turn deliver each event once in total, a reader that lost the lease none", async () => {
    const stores = await Promise.all(
      ["rec-a", "rec-b"].map(async (owner) => {
        const handle = await openPostgres({ kind: "postgres", url: database.url, applicationName: owner });
        handles.push(handle);
        return { owner, store: new PgAutomationStore(handle.db) };
      }),
    );
    const ttlMs = 15_000;
    let clock = Date.parse("2025-03-12T12:00:00Z");
    const delivered: number[] = [];
    let refused = 0;
    /** One tick of one reader: lease, a page, commit; its events count only if the commit went through. */
    const tick = async (reader: (typeof stores)[number], next: () => number) => {
      const now = new Date((clock += 10));
      const lease = await reader.store.acquireLease(reader.owner, now, ttlMs);
      if (!lease.acquired) return;
      const page = await reader.store.readEvents(lease.cursor, 3);
      if (next() < 0.15) {
        // This reader stalls past its lease: the other takes over and commits first.
        clock += ttlMs + 1;
        const other = stores.find((s) => s !== reader)!;
        await tick(other, () => 1);
      }
      const ok = await reader.store.commitTick(
        reader.owner,
        { tick: lease.tick, cursor: page.cursor, snapshotVersion: 1, states: new Map(), evaluations: [] },
        new Date((clock += 1)),
      );
      if (ok) delivered.push(...page.events.map((e) => e.id));
      else refused++;
      if (next() < 0.3) await reader.store.releaseLease(reader.owner);
    };
    const committed = await interleave(database.url, 7, { writers: 5, steps: 300 }, async (next) => {
      // Both try at once; the lease lets one through.
      if (next() < 0.3) await Promise.all(stores.map((s) => tick(s, next)));
      else if (next() < 0.6) await tick(stores[Math.floor(next() * 2)]!, next);
    });
    // The writers are done: one reader reads to the end.
    await stores[1]!.store.releaseLease(stores[1]!.owner);
    for (let full = true; full;) {
      const before = delivered.length;
      await tick(stores[0]!, () => 1);
      full = delivered.length - before === 3;
    }
    const all = committed.flat();
    expect(refused).toBeGreaterThan(0);
    expect(new Set(delivered).size).toBe(delivered.length);
    expect([...delivered].sort((x, y) => x - y)).toEqual([...all].sort((x, y) => x - y));
  });

  it("OpenLineage reads past a transaction open in another database too", async () => {
    const other = await database.scratchDatabase();
    drops.push(other.drop);
    const idle = await openTransaction(other.url);
    clients.push(idle.client);
    const store = new PgOpenLineageStore(database.db);
    const a = await commitEvents(database.db, ["1"], "observation");
    const page = await store.readEvents({ stream: STREAM_START, partial: null }, 10);
    expect(page.entries.map((e) => e.record.eventId)).toEqual(a.ids);
    await idle.client.query("commit");
  });
});

// The cache of folded partition statuses behind Asset.partitionStatus.ranges: every write that changes a
// recorded status (of the asset, or of an upstream it read) is seen by the next answer, the unfinished
// steps are always read fresh, and a time space growing with `now` shows its new partitions.
import { sql, type Kysely, type KyselyPlugin } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import { Catalog, createApiApp } from "../../src/api/index.js";
import type { SnapshotAsset } from "../../src/graph/index.js";
import { asset, dep, hourly, type AssetDefinition } from "../../src/index.js";
import { PartitionStatusCache, partitionStatusSummary, type PartitionStatusSummary } from "../../src/api/partition-status-summary.js";
import { GraphCache, PgDefinitionStore, PgPartitionStatusStore, type Database } from "../../src/storage/index.js";
import { PartitionSubset } from "../../src/partitions/index.js";
import { CHANGES_KEPT_PER_ASSET, prunePartitionStatusChanges } from "../../src/storage/runs/partition-status.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { useTestPglite } from "../support/pglite.js";
import { apiServicesOn } from "../support/api-services.js";
import { chainSource, storeDefinitions } from "./graphql-fixture.js";

const noop = async () => null;
const hours = hourly({ start: "2025-01-01T00:00", end: "2025-01-02T00:00" });
const upDef = asset({ key: "c/up", partitions: hours }, noop);
const downDef = (codeVersion: string) => asset({ key: "c/down", partitions: hours, codeVersion, deps: { up: dep(upDef) } }, noop);
const snapshot = (d: AssetDefinition): SnapshotAsset => ({ ...d.spec, file: "defs.ts", exportName: d.key.replace(/\W/g, "_") });
const up = snapshot(upDef);
const down = snapshot(downDef("v1"));

/** 24 hourly partitions of 2025-01-01; at 06:00 the first six exist. */
const at = (hour: number) => new Date(Date.UTC(2025, 0, 1, hour));
const key = (hour: number) => `2025-01-01-${String(hour).padStart(2, "0")}:00`;

/** The suite on a database: `concurrent` where two sessions can hold transactions at once (not PGlite's one). */
function cacheSuite(database: { readonly db: Kysely<Database> }, concurrent: boolean): void {
  /** A test that holds a transaction open while another session reads: on a database that allows it. */
  const itConcurrent = (name: string, fn: () => Promise<void>) => {
    if (concurrent) it(name, fn);
  };
  let store: PgPartitionStatusStore;
  let cache: PartitionStatusCache;
  /** Per cached answer: whether the store read all the keys, derived the hours of some partitions again, or neither. */
  let reads: string[];
  beforeEach(async () => {
    reads = [];
    store = new PgPartitionStatusStore(database.db);
    cache = new PartitionStatusCache();
    await sql`truncate partition_status, partition_status_changes, partition_status_changes_pruned_assets, event_inputs, events, steps, runs cascade`.execute(
      database.db,
    );
    // What an earlier test pruned is gone with the rows: a later test's reads must not depend on it.
    await sql`insert into partition_status_changes_pruned (singleton, through_tx) values (true, 0)
              on conflict (singleton) do update set through_tx = 0`.execute(database.db);
  });

  const summaryOf = (a: SnapshotAsset, now: Date, cached: boolean): Promise<PartitionStatusSummary> => {
    const base = { counts: () => Promise.reject(new Error("counts only")), withRanges: true, now, dynamicKeys: async () => [] };
    if (!cached) return partitionStatusSummary(a, { ...base, store });
    const recordedStatusOfMany: PgPartitionStatusStore["recordedStatusOfMany"] = async (assets) => {
      const out = await store.recordedStatusOfMany(assets);
      for (const read of out.values()) {
        const changed = [...(read.changed?.keys() ?? [])].map((k) => k.slice(11, 13)).sort();
        reads.push(read.recorded ? "keys" : changed.length > 0 ? `changed ${changed.join(",")}` : "cached");
      }
      return out;
    };
    const caching = {
      recordedStatusOfMany,
      storedSummaries: store.storedSummaries.bind(store),
      storeSummaries: store.storeSummaries.bind(store),
    };
    return partitionStatusSummary(a, { ...base, store: caching, cache });
  };
  /** The cached answer, checked against an answer derived from scratch. */
  const summary = async (a: SnapshotAsset, now = at(6)): Promise<PartitionStatusSummary> => {
    const cached = await summaryOf(a, now, true);
    expect(cached).toEqual(await summaryOf(a, now, false));
    // Counts alone (what `assets { partitionStatus { counts } }` reads) come from the same fold: exact, where the
    // uncached aggregate also counts records of partitions that do not exist yet.
    const folded = await partitionStatusSummary(a, { withRanges: false, now, dynamicKeys: async () => [], store, cache });
    expect(folded).toEqual({ counts: cached.counts });
    return cached;
  };
  const ranges = async (a: SnapshotAsset, now?: Date) =>
    (await summary(a, now)).ranges!.map((r) => `${r.status} ${r.from.slice(11)}–${r.to.slice(11)}`);

  /** A materialisation of `asset`'s partition `hour` that read the given upstream partitions at their latest events. */
  const materialize = async (assetKey: string, hour: number, options: { codeVersion?: string; reads?: string[] } = {}) => {
    const { rows } = await sql<{ id: string }>`
      insert into events (kind, asset_key, partition_key, code_version) values ('materialization', ${assetKey}, ${key(hour)}, ${options.codeVersion ?? null})
      returning id`.execute(database.db);
    const id = Number(rows[0]!.id);
    for (const upstream of options.reads ?? []) {
      await sql`
        insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
        select ${id}, ${upstream}, ${key(hour)},
               (select last_materialization_event_id from partition_status where asset_key = ${upstream} and partition_key = ${key(hour)})`.execute(
        database.db,
      );
    }
    await sql`
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version)
      values (${assetKey}, ${key(hour)}, 'materialized', ${id}, ${options.codeVersion ?? null})
      on conflict (asset_key, partition_key) do update set status = 'materialized', last_materialization_event_id = excluded.last_materialization_event_id,
        code_version = excluded.code_version`.execute(database.db);
  };
  const fail = (assetKey: string, hour: number) =>
    sql`update partition_status set status = 'failed' where asset_key = ${assetKey} and partition_key = ${key(hour)}`.execute(database.db);

  it("a new materialisation and a failure show at once; an unchanged asset is answered from the cache", async () => {
    for (const h of [0, 1, 2]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–02:00", "missing 03:00–05:00"]);
    expect(cache.size).toBe(1);

    await materialize("c/up", 3);
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    // A failure keeps the partition's latest event: only its status changes.
    await fail("c/up", 1);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "failed 01:00–01:00", "materialized 02:00–03:00", "missing 04:00–05:00"]);

    // After the first read, each write's partition alone was derived again; nothing changed since, so the cache answers.
    expect(reads).toEqual(["keys", "changed 03", "changed 01"]);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "failed 01:00–01:00", "materialized 02:00–03:00", "missing 04:00–05:00"]);
    expect(reads).toEqual(["keys", "changed 03", "changed 01", "cached"]);
  });

  it("derives again only the partitions written since, however many writes there were", async () => {
    for (const h of [0, 1, 2, 3]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    await materialize("c/up", 4);
    await fail("c/up", 0);
    await sql`update partition_status set status = 'timed_out' where asset_key = 'c/up' and partition_key in (${key(2)}, ${key(3)})`.execute(
      database.db,
    );
    await materialize("c/up", 2);
    expect(await ranges(up)).toEqual([
      "failed 00:00–00:00",
      "materialized 01:00–02:00",
      "timed_out 03:00–03:00",
      "materialized 04:00–04:00",
      "missing 05:00–05:00",
    ]);
    expect(reads).toEqual(["keys", "changed 00,02,03,04"]);
  });

  it("a statement writing more than 1 000 partitions of the asset has it read in full", async () => {
    await materialize("c/up", 0);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    // Keys outside the asset's partitions (left out of every answer) make the number.
    await sql`
      insert into partition_status (asset_key, partition_key, status)
      select 'c/up', 'x' || lpad(i::text, 4, '0'), 'failed' from generate_series(1, 1001) as i`.execute(database.db);
    await fail("c/up", 0);
    expect(await ranges(up)).toEqual(["failed 00:00–00:00", "missing 01:00–05:00"]);
    expect(reads).toEqual(["keys", "keys"]);
    await materialize("c/up", 1);
    expect(await ranges(up)).toEqual(["failed 00:00–00:00", "materialized 01:00–01:00", "missing 02:00–05:00"]);
    expect(reads).toEqual(["keys", "keys", "changed 01"]);
  });

  it("more than 10 000 partitions written since, a few at a time, have the asset read in full too", async () => {
    await materialize("c/up", 0);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    // 11 statements of 1 000 partitions (outside the asset's, left out of every answer) and one failure.
    for (let from = 1; from <= 11_000; from += 1_000) {
      await sql`
        insert into partition_status (asset_key, partition_key, status)
        select 'c/up', 'x' || lpad(i::text, 5, '0'), 'failed' from generate_series(${from}::int, ${from + 999}::int) as i`.execute(
        database.db,
      );
    }
    await fail("c/up", 0);
    expect(await ranges(up)).toEqual(["failed 00:00–00:00", "missing 01:00–05:00"]);
    expect(reads).toEqual(["keys", "keys"]);
  });

  it("an upstream materialised again makes the partitions that read it stale", async () => {
    for (const h of [0, 1, 2]) await materialize("c/up", h);
    for (const h of [0, 1, 2]) await materialize("c/down", h, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(down)).toEqual(["materialized 00:00–02:00", "missing 03:00–05:00"]);
    // Only c/up's rows change: the version covers the upstreams the asset's latest events read, and the partitions
    // derived again are those that read the written ones.
    await materialize("c/up", 1);
    await materialize("c/up", 4);
    expect(await ranges(down)).toEqual([
      "materialized 00:00–00:00",
      "stale 01:00–01:00",
      "materialized 02:00–02:00",
      "missing 03:00–05:00",
    ]);
    await materialize("c/down", 1, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(down)).toEqual(["materialized 00:00–02:00", "missing 03:00–05:00"]);
    expect(reads).toEqual(["keys", "changed 01", "changed 01"]);
  });

  it("an upstream the asset did not read before is followed once a new materialisation reads it", async () => {
    const other = asset({ key: "c/other", partitions: hours }, noop);
    for (const h of [0, 1]) await materialize("c/other", h);
    await materialize("c/down", 0, { codeVersion: "v1" });
    expect(await ranges(down)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    await materialize("c/down", 1, { codeVersion: "v1", reads: [other.key] });
    expect(await ranges(down)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    await materialize("c/other", 1);
    expect(await ranges(down)).toEqual(["materialized 00:00–00:00", "stale 01:00–01:00", "missing 02:00–05:00"]);
    expect(reads).toEqual(["keys", "changed 01", "changed 01"]);
  });

  it("a new code version makes every partition materialised with another one stale", async () => {
    for (const h of [0, 1]) await materialize("c/down", h, { codeVersion: "v1" });
    expect(await ranges(down)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    expect(await ranges(snapshot(downDef("v2")))).toEqual(["stale 00:00–01:00", "missing 02:00–05:00"]);
    await materialize("c/down", 0, { codeVersion: "v2" });
    expect(await ranges(snapshot(downDef("v2")))).toEqual(["materialized 00:00–00:00", "stale 01:00–01:00", "missing 02:00–05:00"]);
    expect(await ranges(down)).toEqual(["stale 00:00–00:00", "materialized 01:00–01:00", "missing 02:00–05:00"]);
  });

  it("unfinished steps are read every time: materializing over a cached status", async () => {
    for (const h of [0, 1]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    const { rows } = await sql<{ id: string }>`
      insert into runs (status, origin, snapshot_version, plan) values ('running', 'manual', 1, '{}') returning id`.execute(database.db);
    const runId = rows[0]!.id;
    await sql`insert into steps (run_id, asset_key, partition_key, state) values (${runId}, 'c/up', ${key(1)}, 'running'), (${runId}, 'c/up', ${key(4)}, 'queued')`.execute(
      database.db,
    );
    expect(await ranges(up)).toEqual([
      "materialized 00:00–00:00",
      "materializing 01:00–01:00",
      "missing 02:00–03:00",
      "materializing 04:00–04:00",
      "missing 05:00–05:00",
    ]);
    expect((await summary(up)).counts).toEqual({
      missing: 3,
      materializing: 2,
      materialized: 1,
      failed: 0,
      stale: 0,
      timed_out: 0,
      erased: 0,
      total: 6,
    });
    await sql`update runs set status = 'success'`.execute(database.db);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
  });

  it("a time space growing with now shows its new partitions, recorded or not", async () => {
    // Hour 8 is recorded before it exists (say, reported early): it shows once it does.
    for (const h of [0, 8]) await materialize("c/up", h);
    expect(await ranges(up, at(6))).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    expect(await ranges(up, at(10))).toEqual([
      "materialized 00:00–00:00",
      "missing 01:00–07:00",
      "materialized 08:00–08:00",
      "missing 09:00–09:00",
    ]);
    expect((await summary(up, at(10))).counts.total).toBe(10);
  });

  it("a deleted status row shows at once, and a write that changes nothing is still a new version", async () => {
    for (const h of [0, 1]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    await sql`delete from partition_status where asset_key = 'c/up' and partition_key = ${key(1)}`.execute(database.db);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    await sql`update partition_status set updated_at = now() where asset_key = 'c/up'`.execute(database.db);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    expect(reads).toEqual(["keys", "changed 01", "changed 00"]);
  });

  const changeCounts = async () => {
    const { rows } = await sql<{ asset_key: string; n: number }>`
      select asset_key, count(*)::int as n from partition_status_changes group by asset_key order by asset_key`.execute(database.db);
    return Object.fromEntries(rows.map((r) => [r.asset_key, r.n]));
  };

  it("pruning keeps the newest change rows of each asset and those of the last minute; an answer after it is exact", async () => {
    for (let round = 0; round < 3; round++) for (const h of [0, 1, 2, 3]) await materialize("c/up", h);
    await materialize("c/down", 0, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    const before = await changeCounts();
    expect(before["c/up"]).toBeGreaterThan(CHANGES_KEPT_PER_ASSET);
    // Every row is younger than a minute: nothing goes.
    expect(await prunePartitionStatusChanges(database.db)).toBe(0);

    // Two pruners at once: one prunes, the other skips.
    const pruned = await Promise.all([
      prunePartitionStatusChanges(database.db, { minAgeMs: 0 }),
      prunePartitionStatusChanges(database.db, { minAgeMs: 0 }),
    ]);
    expect(pruned.reduce((a, b) => a + b)).toBe(before["c/up"]! - CHANGES_KEPT_PER_ASSET);
    expect(await changeCounts()).toEqual({ ...before, "c/up": CHANGES_KEPT_PER_ASSET });
    expect(await prunePartitionStatusChanges(database.db, { minAgeMs: 0 })).toBe(0);

    // The rows pruned were all seen by the cached read, and the answer is exact (ranges() checks it against one derived
    // from scratch). Whether the cache knows they were seen depends on the server's other sessions: it does when no
    // transaction that began before the pruned writes was still running as the cache was filled (on a server that other
    // test files share, one may have been; PGlite has no other session), and otherwise reads the asset in full.
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    if (concurrent) expect(["cached", "keys"]).toContain(reads[1]);
    else expect(reads).toEqual(["keys", "cached"]);
    expect(reads).toHaveLength(2);
  });

  it("change rows pruned since a read have the asset read in full only when they are its own or an upstream's", async () => {
    await materialize("c/up", 0);
    await materialize("c/down", 0, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(down)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    // Another asset's rows, written and pruned since: what c/down's version watches is all still there.
    for (let i = 0; i <= CHANGES_KEPT_PER_ASSET; i++) await materialize("c/other", 1);
    expect(await prunePartitionStatusChanges(database.db, { minAgeMs: 0 })).toBe(1);
    await materialize("c/up", 1);
    expect(await ranges(down)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    expect(reads).toEqual(["keys", "cached"]);
    // The upstream's rows, written and pruned since: c/down is read in full.
    for (let i = 0; i <= CHANGES_KEPT_PER_ASSET; i++) await materialize("c/up", 0);
    expect(await prunePartitionStatusChanges(database.db, { minAgeMs: 0 })).toBeGreaterThan(0);
    expect(await ranges(down)).toEqual(["stale 00:00–00:00", "missing 01:00–05:00"]);
    expect(reads).toEqual(["keys", "cached", "keys"]);
    const { rows } = await sql<{
      asset_key: string;
    }>`select asset_key from partition_status_changes_pruned_assets order by asset_key`.execute(database.db);
    expect(rows.map((r) => r.asset_key)).toEqual(["c/other", "c/up"]);
  });

  itConcurrent("a change pruned before a reader looked again has the asset read in full, even one committed late", async () => {
    for (const h of [0, 1, 2, 3]) await materialize("c/up", h);
    // A writer whose transaction is open while the cache is filled, and stays open while others write.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let written!: () => void;
    const wasWritten = new Promise<void>((r) => (written = r));
    const writer = database.db.transaction().execute(async (trx) => {
      await sql`update partition_status set status = 'failed' where asset_key = 'c/up' and partition_key = ${key(0)}`.execute(trx);
      written();
      await released;
    });
    await wasWritten;
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    for (let i = 0; i <= CHANGES_KEPT_PER_ASSET; i++) await materialize("c/up", 1 + (i % 3));
    release();
    await writer;
    // The late writer's change row is older than the newest kept: pruned, so no reader can learn what it wrote.
    expect(await prunePartitionStatusChanges(database.db, { minAgeMs: 0 })).toBeGreaterThan(0);
    expect(await ranges(up)).toEqual(["failed 00:00–00:00", "materialized 01:00–03:00", "missing 04:00–05:00"]);
    expect(reads).toEqual(["keys", "keys"]);
  });

  itConcurrent("a write not yet committed when the cache is filled shows once it commits", async () => {
    await materialize("c/up", 0);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let written!: () => void;
    const wasWritten = new Promise<void>((r) => (written = r));
    const writer = database.db.transaction().execute(async (trx) => {
      await sql`insert into partition_status (asset_key, partition_key, status, last_materialization_event_id) values ('c/up', ${key(2)}, 'materialized', 1)`.execute(
        trx,
      );
      await sql`update partition_status set status = 'failed' where asset_key = 'c/up' and partition_key = ${key(0)}`.execute(trx);
      written();
      await released;
    });
    await wasWritten;
    // Read (and cached) while the write is pending: the committed state only.
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    release();
    await writer;
    expect(await ranges(up)).toEqual(["failed 00:00–00:00", "missing 01:00–01:00", "materialized 02:00–02:00", "missing 03:00–05:00"]);
  });

  it("through GraphQL: a server's requests share the cache, even with services built per request", async () => {
    const removeDefinitions = await storeDefinitions(database.db, chainSource(2));
    try {
      // What each statement of the cache did: read all the keys, looked for changes, or derived changed partitions.
      const statements: string[] = [];
      const plugin: KyselyPlugin = {
        transformQuery: (args) => {
          const text = JSON.stringify(args.node);
          if (text.includes("pg_visible_in_snapshot")) statements.push("changes");
          else if (text.includes("json_build_object")) statements.push("keys");
          else if (text.includes("'status' as kind")) statements.push("derived");
          return args.node;
        },
        transformResult: async (args) => args.result,
      };
      const db = database.db.withPlugin(plugin);
      const definitions = new PgDefinitionStore(db);
      const catalog = new Catalog(new GraphCache(definitions, 0), definitions);
      const now = new Date("2025-01-06T12:00:00Z");
      const context = () => ({ ...apiServicesOn(db, { definitions, catalog }), now: () => now });
      // A new app (and services, and stores) per request: only the catalog is shared.
      const apps = () => createApiApp({ context: context(), ping: async () => {}, version: "test" });
      const ranges = async () => {
        const res = await apps().request("/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: `{ asset(key: "chain/a001") { partitionStatus { ranges { status from to count } } } }` }),
        });
        const body = (await res.json()) as {
          data: { asset: { partitionStatus: { ranges: { status: string; from: string; count: number }[] } } };
        };
        return body.data.asset.partitionStatus.ranges.map((r) => `${r.status} ${r.from} ${r.count}`);
      };
      await sql`
        insert into partition_status (asset_key, partition_key, status, last_materialization_event_id)
        values ('chain/a001', '2025-01-02', 'materialized', 1), ('chain/a001', '2025-01-03', 'failed', null)`.execute(database.db);
      expect(await ranges()).toEqual(["MISSING 2025-01-01 1", "MATERIALIZED 2025-01-02 1", "FAILED 2025-01-03 1", "MISSING 2025-01-04 2"]);
      expect(await ranges()).toEqual(["MISSING 2025-01-01 1", "MATERIALIZED 2025-01-02 1", "FAILED 2025-01-03 1", "MISSING 2025-01-04 2"]);
      await sql`update partition_status set status = 'failed' where asset_key = 'chain/a001' and partition_key = '2025-01-02'`.execute(
        database.db,
      );
      expect(await ranges()).toEqual(["MISSING 2025-01-01 1", "FAILED 2025-01-02 2", "MISSING 2025-01-04 2"]);
      expect(statements).toEqual(["keys", "changes", "changes", "derived"]);
    } finally {
      await removeDefinitions();
    }
  });
}

describePostgres("partition status ranges: the cache of folded statuses (Postgres)", () => {
  cacheSuite(useTestDatabase(), true);
});

describe("partition status ranges: the cache of folded statuses (PGlite)", () => {
  cacheSuite(useTestPglite(), false);
});

it("keeps the counts of many assets within its budget of ranges, dropping the least recently used", () => {
  const cache = new PartitionStatusCache({ maxRanges: 100 });
  const version = { snapshot: "1:1:", upstreamAssetKeys: [] };
  // 30 ranges of materialised partitions (every other index), then the entry itself: 31 each.
  const subsets = new Map([["materialized", PartitionSubset.fromIndices(Array.from({ length: 30 }, (_, i) => 2 * i))]] as const);
  for (const key of ["a", "b", "c"]) cache.fill(key, version, subsets);
  expect(cache.size).toBe(3);
  cache.lookup("a"); // now the most recently used
  cache.fill("d", version, subsets);
  expect(cache.size).toBe(3);
  expect(cache.lookup("b")).toBeUndefined();
  expect(cache.lookup("a")).toBeDefined();
  // An entry larger than the whole budget is still kept: it is what was just asked for.
  cache.fill("huge", version, new Map([["failed", PartitionSubset.fromIndices(Array.from({ length: 200 }, (_, i) => 2 * i))]] as const));
  expect(cache.size).toBe(1);
  expect(cache.lookup("huge")).toBeDefined();
});

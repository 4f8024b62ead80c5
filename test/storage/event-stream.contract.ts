// The event stream's cursor (readEventStream and the two stores that read through it): cases every engine runs.
// What needs transactions open while the stream is read (another session) is in event-stream.pg.test.ts.
import { sql, type Kysely } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import {
  parseEventCursor,
  PgAutomationStore,
  PgOpenLineageStore,
  readEventStream,
  STREAM_START,
  toJson,
  type Database,
  type EventCursor,
} from "../../src/storage/index.js";

export interface EventStreamSubject {
  /** A migrated database with no events. */
  db: Kysely<Database>;
}

export interface Written {
  readonly txId: string;
  readonly ids: number[];
}

/** Commits one transaction writing an event per partition key (kind `external` unless given). */
export async function commitEvents(db: Kysely<Database>, keys: readonly string[], kind = "external"): Promise<Written> {
  return db.transaction().execute((trx) => insertEvents(trx, keys, kind));
}

export async function insertEvents(db: Kysely<Database>, keys: readonly string[], kind = "external"): Promise<Written> {
  const ids: number[] = [];
  let txId = "";
  for (const key of keys) {
    const { rows } = await sql<{ id: string; tx_id: string }>`
      insert into events (kind, asset_key, partition_key) values (${kind}, 'stream/a', ${key}) returning id, tx_id::text as tx_id`.execute(
      db,
    );
    ids.push(Number(rows[0]!.id));
    txId = rows[0]!.tx_id;
  }
  return { txId, ids };
}

/** One page of event ids after `after`. */
export async function readIds(
  db: Kysely<Database>,
  after: EventCursor,
  limit: number,
  maxPending?: number,
): Promise<{ ids: number[]; cursor: EventCursor }> {
  const page = await readEventStream(db, {
    after,
    limit,
    ...(maxPending === undefined ? {} : { maxPending }),
    select: async (trx, ids) =>
      (await sql<{ id: string; tx_id: string }>`select e.id, e.tx_id::text as tx_id from events e where e.id in (${ids})`.execute(trx))
        .rows,
  });
  return { ids: page.entries.map((e) => Number(e.row.id)), cursor: page.end };
}

/** Reads page after page until one is not full: every event visible now. */
export async function readToEnd(db: Kysely<Database>, after: EventCursor, limit: number): Promise<{ ids: number[]; cursor: EventCursor }> {
  const ids: number[] = [];
  let cursor = after;
  for (;;) {
    const page = await readIds(db, cursor, limit);
    ids.push(...page.ids);
    cursor = page.cursor;
    if (page.ids.length < limit) return { ids, cursor };
  }
}

export function eventStreamContract(name: string, open: () => Promise<EventStreamSubject>): void {
  describe(`event stream contract: ${name}`, () => {
    let db: Kysely<Database>;
    beforeEach(async () => {
      ({ db } = await open());
    });

    it("reads committed events in (transaction, id) order, page by page, each once", async () => {
      const a = await commitEvents(db, ["1", "2"]);
      const b = await commitEvents(db, ["3", "4", "5"]);
      const c = await commitEvents(db, ["6"]);
      const pages: number[][] = [];
      let cursor = STREAM_START;
      for (;;) {
        const page = await readIds(db, cursor, 2);
        pages.push(page.ids);
        cursor = page.cursor;
        if (page.ids.length < 2) break;
      }
      expect(pages).toEqual([[a.ids[0], a.ids[1]], [b.ids[0], b.ids[1]], [b.ids[2], c.ids[0]], []]);
      expect(cursor).toEqual({ txId: c.txId, id: c.ids[0], pending: [] });
      // Nothing new: the cursor stays.
      expect(await readIds(db, cursor, 2)).toEqual({ ids: [], cursor });
    });

    it("reads an ended pending transaction from the last of its events read, a page at a time, then drops it", async () => {
      const a = await commitEvents(db, ["1", "2", "3"]);
      const b = await commitEvents(db, ["4"]);
      // As if the position had passed `a` while it was still running.
      const start: EventCursor = { txId: b.txId, id: b.ids[0]!, pending: [{ txId: a.txId, id: 0 }] };
      const first = await readIds(db, start, 2);
      expect(first).toEqual({ ids: a.ids.slice(0, 2), cursor: { ...start, pending: [{ txId: a.txId, id: a.ids[1] }] } });
      const c = await commitEvents(db, ["5"]);
      // The rest of `a`, then what came after the position.
      const second = await readIds(db, first.cursor, 5);
      expect(second).toEqual({ ids: [a.ids[2], c.ids[0]], cursor: { txId: c.txId, id: c.ids[0], pending: [] } });
      expect((await readIds(db, second.cursor, 5)).ids).toEqual([]);
    });

    it("passes over an event the consumer's select leaves out, without taking the page for the last one", async () => {
      const a = await commitEvents(db, ["skip", "2", "3"]);
      const b = await commitEvents(db, ["4"]);
      const start: EventCursor = { txId: b.txId, id: b.ids[0]!, pending: [{ txId: a.txId, id: 0 }] };
      const read = (after: EventCursor) =>
        readEventStream(db, {
          after,
          limit: 2,
          select: async (trx, ids) =>
            (
              await sql<{ id: string; partition_key: string }>`
                select e.id, e.partition_key from events e where e.id in (${ids}) and e.partition_key <> 'skip'`.execute(trx)
            ).rows,
        });
      const first = await read(start);
      expect(first.entries.map((e) => e.row.partition_key)).toEqual(["2"]);
      // Two events were read: `a` may have more, so it stays pending.
      expect(first.end).toEqual({ ...start, pending: [{ txId: a.txId, id: a.ids[1] }] });
      const second = await read(first.end);
      expect(second.entries.map((e) => e.row.partition_key)).toEqual(["3"]);
      expect(second.end).toEqual({ ...start, pending: [] });
    });

    it("drops a pending transaction that ended without events: rolled back, or one that wrote none", async () => {
      let rolledBack = "";
      await db
        .transaction()
        .execute(async (trx) => {
          rolledBack = (await insertEvents(trx, ["gone"])).txId;
          throw new Error("roll back");
        })
        .catch(() => undefined);
      const quiet = await db
        .transaction()
        .execute(async (trx) => (await sql<{ x: string }>`select pg_current_xact_id()::text as x`.execute(trx)).rows[0]!.x);
      const later = await commitEvents(db, ["kept"]);
      const start: EventCursor = {
        txId: later.txId,
        id: later.ids[0]!,
        pending: [
          { txId: rolledBack, id: 0 },
          { txId: quiet, id: 0 },
        ],
      };
      expect(await readIds(db, start, 10)).toEqual({ ids: [], cursor: { txId: later.txId, id: later.ids[0], pending: [] } });
    });

    it("reads cursor values stored before pending transactions were kept", () => {
      expect(parseEventCursor({ txId: "812", id: 40 })).toEqual({ txId: "812", id: 40, pending: [] });
      expect(parseEventCursor(undefined)).toEqual(STREAM_START);
      expect(parseEventCursor({ txId: "9", id: 1, pending: [{ txId: "7", id: 3 }] })).toEqual({
        txId: "9",
        id: 1,
        pending: [{ txId: "7", id: 3 }],
      });
    });

    it("automation: reads every event kind through the cursor and keeps the cursor, pending included, in its row", async () => {
      const store = new PgAutomationStore(db);
      const now = new Date("2025-03-12T12:00:00Z");
      const a = await commitEvents(db, ["1"], "external");
      const b = await commitEvents(db, ["2"], "planned");
      const lease = await store.acquireLease("rec-a", now, 15_000);
      expect(lease).toMatchObject({ acquired: true, tick: 1, cursor: STREAM_START });
      const page = await store.readEvents(lease.cursor, 10);
      expect(page.events.map((e) => [e.id, e.kind, e.partitionKey])).toEqual([
        [a.ids[0], "external", "1"],
        [b.ids[0], "planned", "2"],
      ]);
      expect(page.cursor).toEqual({ txId: b.txId, id: b.ids[0], pending: [] });
      const cursor: EventCursor = { ...page.cursor, pending: [{ txId: a.txId, id: 0 }] };
      const tick = { tick: 1, cursor, snapshotVersion: 1, states: new Map(), evaluations: [] };
      expect(await store.commitTick("rec-a", tick, now)).toBe(true);
      expect((await store.acquireLease("rec-a", now, 15_000)).cursor).toEqual(cursor);
      // A row written before the cursor kept pending transactions.
      await sql`update cursors set value = ${toJson({ tick: 2, txId: b.txId, id: b.ids[0], owner: null, until: null })}::jsonb
                where name = 'automation'`.execute(db);
      expect((await store.acquireLease("rec-b", now, 15_000)).cursor).toEqual({ txId: b.txId, id: b.ids[0], pending: [] });
    });

    it("OpenLineage: reads its kinds only, the partly sent entry first, and keeps stream and partial entry in its row", async () => {
      const store = new PgOpenLineageStore(db);
      const now = new Date("2025-03-12T12:00:00Z");
      const a = await commitEvents(db, ["1"], "external");
      await commitEvents(db, ["2"], "planned");
      const c = await commitEvents(db, ["3"], "observation");
      const lease = await store.acquireLease("rec-a", now, 60_000);
      expect(lease).toMatchObject({ acquired: true, cursor: { stream: STREAM_START, partial: null } });
      const page = await store.readEvents(lease.cursor, 10);
      expect(page.entries.map((e) => [e.record.eventId, e.record.kind])).toEqual([
        [a.ids[0], "external"],
        [c.ids[0], "observation"],
      ]);
      expect(page.entries.map((e) => e.after)).toEqual([
        { txId: a.txId, id: a.ids[0], pending: [] },
        { txId: c.txId, id: c.ids[0], pending: [] },
      ]);
      expect(page.end).toEqual(page.entries[1]!.after);

      // `a` sent in part: it comes again first, then the stream after it.
      const partly = { stream: page.entries[0]!.after, partial: { txId: a.txId, id: a.ids[0]!, sent: 1 } };
      const again = await store.readEvents(partly, 10);
      expect(again.entries.map((e) => e.record.eventId)).toEqual([a.ids[0], c.ids[0]]);
      expect(again.entries[0]!.after).toEqual(partly.stream);
      expect(await store.advance("rec-a", partly, [], now, 60_000)).toBe(true);
      expect((await store.acquireLease("rec-a", now, 60_000)).cursor).toEqual(partly);

      // A row written before `partial`: the entry at (txId, id) sent in part unless done.
      await sql`update cursors set value = ${toJson({ txId: a.txId, id: a.ids[0], sent: 1, done: false, owner: null, until: null })}::jsonb
                where name = 'openlineage'`.execute(db);
      expect((await store.acquireLease("rec-b", now, 60_000)).cursor).toEqual({
        stream: { txId: a.txId, id: a.ids[0], pending: [] },
        partial: { txId: a.txId, id: a.ids[0], sent: 1 },
      });
      await sql`update cursors set value = ${toJson({ txId: a.txId, id: a.ids[0], sent: 1, done: true, owner: null, until: null })}::jsonb
                where name = 'openlineage'`.execute(db);
      expect((await store.acquireLease("rec-c", now, 60_000)).cursor).toEqual({
        stream: { txId: a.txId, id: a.ids[0], pending: [] },
        partial: null,
      });
    });
  });
}

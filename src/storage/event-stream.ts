import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Database } from "./database.js";
import { toJson } from "./json.js";

// The event stream as its consumers (automation, the OpenLineage emitter) read it.
//
// Event ids are taken before commit, so a reader going by id alone would skip an event whose transaction commits
// after a later one. Events are therefore read in (tx_id, id) order, tx_id being the writer's pg_current_xact_id(),
// and a reader remembers which transactions were still running when its position passed them: a cursor with gaps.
// Each read takes one snapshot and reads, with it, the events of every transaction that snapshot sees as finished —
// after the position, and those of the pending transactions that have ended since. Transactions still running stay
// pending. So the position follows the newest committed work, whatever stays open elsewhere on the cluster (an idle
// psql in another database, a long report); a transaction of ours that commits late is read when it commits, once;
// one that rolls back simply leaves the pending list.
//
// Order, which the consumers rely on: the events of one transaction come in id order (the order they were written),
// and a transaction that began writing after another committed comes after it (its xid is higher, and it cannot be
// visible before the other is: a check result after the materialisation it judges, a retry's failure after the
// previous try's). Concurrent transactions come in no particular order (commit order is not tracked).

/** A consumer's position in the event stream. */
export interface EventCursor {
  /**
   * Every event up to (txId, id) in (tx_id, id) order has been read, except
   * those of `pending`. txId is an xid8 as decimal text; "0" before the first event.
   */
  readonly txId: string;
  readonly id: number;
  /**
   * Transactions below the position that were still running when the position
   * passed them, each with the last of its events read (0 for none), in txId order.
   */
  readonly pending: readonly PendingTransaction[];
}

export interface PendingTransaction {
  readonly txId: string;
  readonly id: number;
}

export const STREAM_START: EventCursor = { txId: "0", id: 0, pending: [] };

/**
 * Most transactions a cursor keeps pending. A cluster rarely runs that many at
 * once; when it does, the position stops short of the running transaction that
 * would exceed it (waiting for it, as a reader below the oldest running
 * transaction would) until some of the pending ones have ended.
 */
export const MAX_PENDING_TRANSACTIONS = 1_000;

/** An event a page holds, and the cursor that has read it and every event before it in the page. */
export interface StreamEntry<R> {
  readonly row: R;
  readonly after: EventCursor;
}

export interface StreamPage<R> {
  /** In (tx_id, id) order: events of pending transactions that ended, then newer ones. */
  readonly entries: readonly StreamEntry<R>[];
  /** The cursor after the whole page (pending transactions that ended without events drop out, even from an empty page). */
  readonly end: EventCursor;
}

/** What the consumer's select must return per event, besides its own columns. */
export interface StreamRow {
  readonly id: string | number;
}

export interface ReadStreamOptions<R extends StreamRow> {
  readonly after: EventCursor;
  /** Most events in the page (at least 1). */
  readonly limit: number;
  /** Most transactions the cursor keeps pending (default MAX_PENDING_TRANSACTIONS). */
  readonly maxPending?: number;
  /** Which events this consumer reads: a condition on `e` (an events row); all when absent. */
  readonly filter?: RawBuilder<boolean>;
  /**
   * Reads the consumer's columns of the page's events: `ids` is a subquery
   * giving their `id`s. It runs in the read's transaction (use `db`), so it sees
   * the same snapshot. An event it leaves out is passed over, not read again.
   */
  readonly select: (db: Kysely<Database>, ids: RawBuilder<unknown>) => Promise<R[]>;
}

/**
 * Reads the next page of the event stream after `options.after`. Runs as a
 * read-only repeatable-read transaction: the snapshot it takes first is the
 * one the page is read with, so "finished" and "visible" agree exactly (a
 * transaction shows as committed in pg_xact a moment before snapshots stop
 * listing it as running; going by the snapshot alone never drops a
 * transaction whose events are not visible yet).
 *
 * @example
 * import { sql, type Kysely } from "kysely";
 * // given db: Kysely<Database>
 * const page = await readEventStream(db, {
 *   after: STREAM_START,
 *   limit: 100,
 *   select: async (trx, ids) =>
 *     (await sql<{ id: string; tx_id: string; kind: string }>`
 *       select e.id, e.tx_id::text as tx_id, e.kind from events e where e.id in (${ids})`.execute(trx)).rows,
 * });
 * // store page.end; page.entries[i].row.kind …
 */
export async function readEventStream<R extends StreamRow>(db: Kysely<Database>, options: ReadStreamOptions<R>): Promise<StreamPage<R>> {
  const limit = Math.max(1, Math.floor(options.limit));
  const after = options.after;
  return db
    .transaction()
    .setIsolationLevel("repeatable read")
    .setAccessMode("read only")
    .execute(async (trx) => {
      const { rows } = await sql<{ snapshot: string }>`select pg_current_snapshot()::text as snapshot`.execute(trx);
      const plan = planRead(after, parseSnapshot(rows[0]!.snapshot), options.maxPending ?? MAX_PENDING_TRANSACTIONS);
      const filter = options.filter ?? sql<boolean>`true`;
      const forward = sql`(select e.id, e.tx_id from events e
        where (e.tx_id, e.id) > (${after.txId}::xid8, ${after.id}::bigint) and e.tx_id < ${plan.bound.toString()}::xid8 and ${filter}
        order by e.tx_id, e.id limit ${limit})`;
      // Each ended pending transaction from the last of its events read: the (tx_id, id) index serves both parts.
      const ended = plan.ended.map((p) => ({ tx_id: p.txId, id: p.id }));
      const page =
        ended.length === 0
          ? forward
          : sql`${forward} union all (select x.id, x.tx_id
              from jsonb_to_recordset(${toJson(ended)}::jsonb) as p(tx_id text, id bigint)
              cross join lateral (select e.id, e.tx_id from events e where e.tx_id = p.tx_id::xid8 and e.id > p.id and ${filter}
                                  order by e.id limit ${limit}) x)`;
      const { rows: positions } = await sql<Position>`
        select page.id::text as id, page.tx_id::text as tx_id from (${page}) page order by page.tx_id, page.id limit ${limit}`.execute(trx);
      const ids = sql`select jsonb_array_elements_text(${toJson(positions.map((r) => r.id))}::jsonb)::bigint`;
      const selected = positions.length === 0 ? [] : await options.select(trx, ids);
      return pageOf(after, plan, positions, new Map(selected.map((r) => [String(r.id), r])), limit);
    });
}

/**
 * A stored cursor value (a `cursors` row's jsonb) as an EventCursor; values
 * written before cursors kept pending transactions have none.
 */
export function parseEventCursor(value: { txId?: unknown; id?: unknown; pending?: unknown } | null | undefined): EventCursor {
  if (!value || value.txId === undefined) return STREAM_START;
  const pending = Array.isArray(value.pending)
    ? (value.pending as { txId?: unknown; id?: unknown }[]).map((p) => ({ txId: String(p.txId), id: Number(p.id ?? 0) }))
    : [];
  return { txId: String(value.txId), id: Number(value.id ?? 0), pending };
}

interface Snapshot {
  readonly xmax: bigint;
  readonly running: ReadonlySet<bigint>;
}

/** pg_snapshot's text form: `xmin:xmax:xip,xip,…`. */
function parseSnapshot(text: string): Snapshot {
  const [, xmax, xip = ""] = text.split(":");
  return { xmax: BigInt(xmax!), running: new Set(xip === "" ? [] : xip.split(",").map((x) => BigInt(x))) };
}

interface ReadPlan {
  /** Pending transactions the snapshot sees as finished: their events are all visible now. */
  readonly ended: readonly PendingTransaction[];
  /** Pending transactions still running. */
  readonly running: readonly PendingTransaction[];
  /** Transactions after the position still running: they become pending as the position passes them. */
  readonly runningAfter: readonly bigint[];
  /** Events after the position are read below this transaction id. */
  readonly bound: bigint;
}

function planRead(after: EventCursor, snapshot: Snapshot, maxPending: number): ReadPlan {
  const position = BigInt(after.txId);
  const ended: PendingTransaction[] = [];
  const running: PendingTransaction[] = [];
  for (const p of after.pending) {
    const x = BigInt(p.txId);
    // pg_visible_in_snapshot's test: below xmax and not listed as running.
    (x < snapshot.xmax && !snapshot.running.has(x) ? ended : running).push(p);
  }
  const runningAfter = [...snapshot.running].filter((x) => x > position).sort(compareBigint);
  const room = Math.max(0, maxPending - running.length);
  // Past the room the pending list has, the position stops short of the first running transaction that would not fit.
  const bound = runningAfter.length > room ? runningAfter[room]! : snapshot.xmax;
  return { ended, running, runningAfter, bound };
}

/** Where an event of the page is in the stream. */
interface Position {
  readonly id: string;
  readonly tx_id: string;
}

function pageOf<R extends StreamRow>(
  after: EventCursor,
  plan: ReadPlan,
  positions: readonly Position[],
  selected: ReadonlyMap<string, R>,
  limit: number,
): StreamPage<R> {
  const position = BigInt(after.txId);
  let txId = after.txId;
  let id = after.id;
  // Ended pending transactions not yet known to be read to their end, with the last of their events read.
  const owed = new Map(plan.ended.map((p) => [p.txId, p.id]));
  let passed = 0; // how many of plan.runningAfter lie below the position
  let pending = pendingOf(plan.running, owed, plan.runningAfter, passed);
  const entries: StreamEntry<R>[] = [];
  for (const at of positions) {
    const x = BigInt(at.tx_id);
    let changed = false;
    if (x < position) {
      // An event of an ended pending transaction (those are all below the position).
      owed.set(at.tx_id, Number(at.id));
      changed = true;
    } else {
      txId = at.tx_id;
      id = Number(at.id);
      while (passed < plan.runningAfter.length && plan.runningAfter[passed]! < x) {
        passed++;
        changed = true;
      }
    }
    // The page is in (tx_id, id) order: a transaction below this event's has had all its events in the page read.
    for (const t of owed.keys()) {
      if (BigInt(t) < x) {
        owed.delete(t);
        changed = true;
      }
    }
    if (changed) pending = pendingOf(plan.running, owed, plan.runningAfter, passed);
    const row = selected.get(at.id);
    if (row) entries.push({ row, after: { txId, id, pending } });
  }
  // A page that is not full holds every visible event: the ended transactions have been read to their end.
  if (positions.length < limit && owed.size > 0) {
    owed.clear();
    pending = pendingOf(plan.running, owed, plan.runningAfter, passed);
  }
  return { entries, end: { txId, id, pending } };
}

function pendingOf(
  running: readonly PendingTransaction[],
  owed: ReadonlyMap<string, number>,
  runningAfter: readonly bigint[],
  passed: number,
): PendingTransaction[] {
  const out: PendingTransaction[] = [...running, ...[...owed].map(([txId, id]) => ({ txId, id }))];
  for (let i = 0; i < passed; i++) out.push({ txId: runningAfter[i]!.toString(), id: 0 });
  return out.sort((a, b) => compareBigint(BigInt(a.txId), BigInt(b.txId)));
}

function compareBigint(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

import { sql, type Kysely, type RawBuilder } from "kysely";
import { releaseCursorLease, takeCursorLease } from "./cursor-lease.js";
import type { Database } from "./database.js";
import { parseEventCursor, readEventStream, STREAM_START, type PendingTransaction } from "./event-stream.js";
import { toJson } from "./json.js";
import type {
  LineageCursor,
  LineageEventRecord,
  LineageLease,
  LineageLiveStep,
  LineagePage,
  LineagePartial,
  LineageStreamEntry,
  LineageTry,
  LineageTryMark,
  OpenLineageStore,
} from "./openlineage-store.js";

const CURSOR = "openlineage";
const START: LineageCursor = { stream: STREAM_START, partial: null };

/** The stream cursor's fields, the partial entry, the lease and the marks. */
interface CursorValue {
  readonly txId: string;
  readonly id: number;
  /** Absent in cursors written before the stream kept pending transactions. */
  readonly pending?: readonly PendingTransaction[];
  readonly partial?: LineagePartial | null;
  /** Cursors written before `partial`: the entry at (txId, id) was sent in part (its first `sent`) unless `done`. */
  readonly sent?: number;
  readonly done?: boolean;
  readonly owner: string | null;
  readonly until: string | null;
  /** The marks, compactly: [stepId, tryNumber, ended ? 1 : 0]. Absent in cursors written before marks existed. */
  readonly tries?: readonly (readonly [number, number, number])[];
}

// Step outcomes (materialisations and failures written by a step), observations and external reports.
const LINEAGE_EVENTS = sql<boolean>`((e.kind in ('materialization', 'failure') and e.step_id is not null and e.run_id is not null)
                                     or e.kind in ('observation', 'external'))`;

type TryJson = { tryNumber: number; state: string; startedAt: string | null; endedAt: string | null; errorMessage: string | null };

interface EventRow {
  id: string;
  tx_id: string;
  kind: "materialization" | "failure" | "observation" | "external";
  asset_key: string;
  partition_key: string;
  run_id: string | null;
  step_id: string | null;
  try_number: number | null;
  created_at: Date;
  job_name: string | null;
  canceled: boolean;
  error_message: string | null;
  data_version: string | null;
  metadata: Record<string, unknown>;
  tries: TryJson[];
  inputs: { assetKey: string; partitionKey: string }[];
}

interface LiveRow {
  id: string;
  run_id: string;
  asset_key: string;
  partition_key: string;
  job_name: string | null;
  state: string;
  try_number: number;
  ended_at: Date | null;
  tries: TryJson[];
}

/** OpenLineageStore in Postgres SQL (server Postgres and PGlite); the cursor is the `openlineage` row of `cursors`. */
export class PgOpenLineageStore implements OpenLineageStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async acquireLease(owner: string, now: Date, ttlMs: number): Promise<LineageLease> {
    const initial: CursorValue = { ...STREAM_START, partial: null, owner: null, until: null };
    const row = await takeCursorLease<CursorValue>(this.#db, CURSOR, initial, owner, now, ttlMs);
    if (!row) return { acquired: false, cursor: START, marks: [] };
    const v = row.value;
    return {
      acquired: true,
      cursor: { stream: parseEventCursor(v), partial: partialOf(v) },
      marks: (v.tries ?? []).map(([stepId, tryNumber, ended]) => ({
        stepId: Number(stepId),
        tryNumber: Number(tryNumber),
        ended: ended === 1,
      })),
    };
  }

  async readEvents(after: LineageCursor, limit: number): Promise<LineagePage> {
    // The entry sent in part comes first, so that the emitter's next delivery completes it; the stream after it
    // fills the rest of the batch.
    const partial = after.partial ? await this.#records(this.#db, sql`e.id = ${after.partial.id}`) : [];
    const page = await readEventStream(this.#db, {
      after: after.stream,
      limit: Math.max(1, limit - partial.length),
      filter: LINEAGE_EVENTS,
      select: (trx, ids) => this.#records(trx, sql`e.id in (${ids})`),
    });
    const entries: LineageStreamEntry[] = [
      ...partial.map((r) => ({ record: toRecord(r), after: after.stream })),
      ...page.entries.map((entry) => ({ record: toRecord(entry.row), after: entry.after })),
    ];
    return { entries, end: page.end };
  }

  async #records(db: Kysely<Database>, which: RawBuilder<boolean>): Promise<EventRow[]> {
    const { rows } = await sql<EventRow>`
      select e.id, e.tx_id::text as tx_id, e.kind, e.asset_key, e.partition_key, e.run_id, e.step_id, e.try_number, e.created_at,
             r.job_name, r.cancel_requested_at is not null as canceled, e.metadata->'error'->>'message' as error_message,
             e.data_version, e.metadata,
             coalesce((select jsonb_agg(jsonb_build_object('tryNumber', t.try_number, 'state', t.state, 'startedAt', t.started_at,
                                                           'endedAt', t.ended_at, 'errorMessage', t.error->>'message')
                                        order by t.try_number)
                       from step_tries t where t.step_id = e.step_id and t.try_number <= coalesce(e.try_number, 0)), '[]') as tries,
             coalesce((select jsonb_agg(jsonb_build_object('assetKey', i.upstream_asset_key, 'partitionKey', i.upstream_partition_key)
                                        order by i.upstream_asset_key, i.upstream_partition_key)
                       from event_inputs i where i.event_id = e.id), '[]') as inputs
      from events e left join runs r on r.id = e.run_id
      where ${which} and ${LINEAGE_EVENTS}
      order by e.tx_id, e.id`.execute(db);
    return rows;
  }

  async readLiveSteps(marks: readonly LineageTryMark[], limit: number): Promise<LineageLiveStep[]> {
    const sent = toJson(marks.map((m) => ({ step_id: m.stepId, try_number: m.tryNumber, ended: m.ended })));
    // In flight: the unfinished states (their partial index), with a started try that is not marked, or
    // marked started but over (the emitter's liveStepEvents must agree). Skipped or removed with a mark: those
    // steps get no outcome event.
    const { rows } = await sql<LiveRow>`
      with sent as (
        select * from jsonb_to_recordset(${sent}::jsonb) as x(step_id bigint, try_number int, ended boolean)
      ), live as (
        select s.id from steps s
        where s.state in ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule', 'deferred') and s.try_number > 0
          -- A check's step writes no dataset: it is not an OpenLineage job run; nor is a mapped step (its
          -- partition's expanded step is, and completes when it gathered them).
          and s.check_name is null and s.map_index < 0
          and exists (select 1 from step_tries t left join sent x on x.step_id = t.step_id and x.try_number = t.try_number
                      where t.step_id = s.id and t.state <> 'queued'
                        and (x.step_id is null
                             or (not x.ended and t.state <> 'running'
                                 -- the try a deferred or rescheduled step waits in is not over
                                 and not (t.try_number = s.try_number and s.state in ('deferred', 'up_for_reschedule')))))
        union
        select s.id from steps s where s.id in (select step_id from sent) and s.state in ('skipped', 'removed') and s.check_name is null
          and s.map_index < 0
      )
      select s.id, s.run_id, s.asset_key, s.partition_key, r.job_name, s.state, s.try_number, s.ended_at,
             coalesce((select jsonb_agg(jsonb_build_object('tryNumber', t.try_number, 'state', t.state, 'startedAt', t.started_at,
                                                           'endedAt', t.ended_at, 'errorMessage', t.error->>'message')
                                        order by t.try_number)
                       from step_tries t where t.step_id = s.id and t.state <> 'queued'), '[]') as tries
      from live join steps s on s.id = live.id left join runs r on r.id = s.run_id
      order by s.id
      limit ${limit}`.execute(this.#db);
    return rows.map((r) => ({
      stepId: Number(r.id),
      runId: r.run_id,
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      jobName: r.job_name,
      state: r.state,
      tryNumber: r.try_number,
      endedAt: r.ended_at === null ? null : new Date(r.ended_at),
      tries: r.tries.map(toTry),
    }));
  }

  async advance(owner: string, cursor: LineageCursor, marks: readonly LineageTryMark[], now: Date, ttlMs: number): Promise<boolean> {
    const next: CursorValue = {
      ...cursor.stream,
      partial: cursor.partial,
      tries: marks.map((m) => [m.stepId, m.tryNumber, m.ended ? 1 : 0] as const),
      owner,
      until: new Date(now.getTime() + ttlMs).toISOString(),
    };
    const result = await sql`update cursors set value = ${toJson(next)}::jsonb, updated_at = ${now}
                             where name = ${CURSOR} and value->>'owner' = ${owner}`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0n) > 0;
  }

  async releaseLease(owner: string): Promise<void> {
    await releaseCursorLease(this.#db, CURSOR, owner);
  }
}

function partialOf(v: CursorValue): LineagePartial | null {
  if (v.partial) return { txId: String(v.partial.txId), id: Number(v.partial.id), sent: Number(v.partial.sent) };
  // Written before `partial`: (txId, id) was the position, and the entry there was sent in part unless done.
  if (v.done === false) return { txId: String(v.txId), id: Number(v.id), sent: Number(v.sent ?? 0) };
  return null;
}

function toRecord(r: EventRow): LineageEventRecord {
  if (r.kind === "observation" || r.kind === "external") {
    return {
      txId: r.tx_id,
      eventId: Number(r.id),
      kind: r.kind,
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      dataVersion: r.data_version,
      metadata: r.metadata,
      createdAt: new Date(r.created_at),
    };
  }
  return {
    txId: r.tx_id,
    eventId: Number(r.id),
    kind: r.kind,
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    runId: r.run_id!,
    stepId: Number(r.step_id),
    tryNumber: r.try_number ?? 0,
    createdAt: new Date(r.created_at),
    jobName: r.job_name,
    canceled: r.canceled,
    errorMessage: r.error_message,
    tries: r.tries.map(toTry),
    inputs: r.inputs,
  };
}

function toTry(t: TryJson): LineageTry {
  const date = (v: string | null): Date | null => (v === null ? null : new Date(v));
  return { ...t, startedAt: date(t.startedAt), endedAt: date(t.endedAt) };
}

import { sql, type Kysely } from "kysely";
import type { Database, EventKind } from "./database.js";
import type {
  ErasureQuery,
  ErasureRows,
  ImpactedPartition,
  LineageEdge,
  LineageEvent,
  LineageStore,
  RunLineage,
  RunLineageQuery,
} from "./lineage-store.js";
import { LINEAGE_EVENT_KINDS } from "./lineage-store.js";
import { withPlannerSettings } from "./planner-settings.js";

type Id = string | number;

interface EventRow {
  id: Id;
  depth: number;
  kind: EventKind;
  asset_key: string;
  partition_key: string;
  run_id: string | null;
  step_id: Id | null;
  try_number: number | null;
  data_version: string | null;
  code_version: string | null;
  created_at: Date;
}

interface EdgeRow {
  event_id: Id;
  upstream_asset_key: string;
  upstream_partition_key: string;
  upstream_event_id: Id | null;
}

interface ImpactRow {
  asset_key: string;
  partition_key: string;
  is_source: boolean;
  event_id: Id | null;
  kind: EventKind | null;
  run_id: string | null;
  run_status: string | null;
  step_id: Id | null;
  try_number: number | null;
  data_version: string | null;
  created_at: Date | null;
  storage_ref: string | null;
  inline: boolean | null;
  size_bytes: Id | null;
}

/**
 * LineageStore in Postgres SQL (server Postgres and PGlite). Read-only. A run
 * lineage walk is two statements (events, then the edges between them), an
 * erasure closure one; recursion stays inside the database and every step of
 * it is an index lookup (event_inputs by event, by upstream event or by
 * upstream partition; events and partition_status by key).
 */
export class PgLineageStore implements LineageStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async runLineage(query: RunLineageQuery): Promise<RunLineage> {
    const upstream = query.direction === "upstream";
    // A walk row is (event, depth): UNION drops repeats of a pair, and the
    // LIMIT stops the recursion early (Postgres evaluates it lazily).
    const step = upstream
      ? sql`select ei.upstream_event_id, w.depth + 1 from walk w join event_inputs ei on ei.event_id = w.id
            where w.depth < ${query.depth} and ei.upstream_event_id is not null`
      : sql`select ei.event_id, w.depth + 1 from walk w join event_inputs ei on ei.upstream_event_id = w.id
            where w.depth < ${query.depth}`;
    const { rows } = await sql<EventRow>`
      with recursive start as (
        select id from events
        where asset_key = ${query.assetKey} and partition_key = ${query.partitionKey} and kind = any(${[...LINEAGE_EVENT_KINDS]}::text[])
        order by id desc limit 1
      ), walk(id, depth) as (
        select id, 0 from start
        union
        ${step}
      ), reached as (
        select id, min(depth) as depth from (select * from walk limit ${query.limit + 1}) w group by id
      )
      select e.id, r.depth, e.kind, e.asset_key, e.partition_key, e.run_id, e.step_id, e.try_number, e.data_version,
             e.code_version, e.created_at
      from reached r join events e on e.id = r.id
      order by r.depth, e.id`.execute(this.#db);
    const events = rows.slice(0, query.limit).map(toEvent);
    const start = events[0]?.depth === 0 ? events[0] : null;
    if (!start) return { start: null, events: [], edges: [], truncated: false };

    // Edges out of every event short of the depth limit (their far ends are all in `events`, or unrecorded).
    const inner = events.filter((e) => e.depth < query.depth).map((e) => e.eventId);
    const { rows: edgeRows } = await sql<EdgeRow>`
      select ei.event_id, ei.upstream_asset_key, ei.upstream_partition_key, ei.upstream_event_id
      from event_inputs ei
      where ${upstream ? sql`ei.event_id` : sql`ei.upstream_event_id`} = any(${inner}::bigint[])
      order by ei.event_id, ei.upstream_asset_key, ei.upstream_partition_key
      limit ${query.limit + 1}`.execute(this.#db);
    const edges = edgeRows.slice(0, query.limit).map(toEdge);
    return { start, events, edges, truncated: rows.length > query.limit || edgeRows.length > query.limit };
  }

  async erasureImpact(query: ErasureQuery): Promise<ErasureRows> {
    const keys = [...new Set(query.partitionKeys)];
    // The planner cannot estimate a recursive step (it takes each level for one row) and would hash the whole of
    // events, partition_status and event_inputs at every level; the closure is a walk from the previous level's
    // partitions through indexes, so joins by index are forced, for this statement only (settings local to its transaction).
    // JIT off too: the statement's cost estimate is that of a walk over every level at once, and compiling it took
    // longer than running it.
    const rows = await withPlannerSettings(this.#db, { enable_hashjoin: "off", enable_mergejoin: "off", jit: "off" }, (trx) =>
      impactRows(trx, query, keys),
    );
    const sources = new Map<string, ImpactedPartition>();
    const impacted: ImpactedPartition[] = [];
    for (const r of rows) {
      if (r.is_source) sources.set(r.partition_key, toImpacted(r));
      else impacted.push(toImpacted(r));
    }
    return {
      sources: keys.map((k) => sources.get(k)!),
      impacted: impacted.slice(0, query.limit),
      truncated: impacted.length > query.limit,
    };
  }
}

/**
 * The closure over partitions (not events): a partition is impacted when its
 * LATEST materialisation read an impacted partition, whichever version of it,
 * since the data it holds was derived from it. UNION without a depth column
 * visits each partition once.
 */
async function impactRows(db: Kysely<Database>, query: ErasureQuery, keys: readonly string[]): Promise<ImpactRow[]> {
  // The walk carries each partition's latest event, which it had to find anyway to follow it, and goes from an input
  // straight to the partition whose latest event read it (partition_status_latest_event_idx): the answer then reads
  // events by id only.
  const { rows } = await sql<ImpactRow>`
    with recursive impacted(asset_key, partition_key, event_id) as (
      select ${query.assetKey}::text, k, ps.last_materialization_event_id
      from unnest(${keys}::text[]) as k
      left join partition_status ps on ps.asset_key = ${query.assetKey} and ps.partition_key = k
      union
      select ps.asset_key, ps.partition_key, ps.last_materialization_event_id
      from impacted i
      join event_inputs ei on ei.upstream_asset_key = i.asset_key and ei.upstream_partition_key = i.partition_key
      join partition_status ps on ps.last_materialization_event_id = ei.event_id
    ), limited as (
      select * from impacted limit ${query.limit + keys.length + 1}
    )
    select l.asset_key, l.partition_key,
           (l.asset_key = ${query.assetKey} and l.partition_key = any(${keys}::text[])) as is_source,
           e.id as event_id, e.kind, e.run_id, r.status as run_status, e.step_id, e.try_number, e.data_version,
           e.created_at, o.storage_ref, o.inline_value is not null as inline, o.size_bytes
    from limited l
    left join events e on e.id = l.event_id
    left join runs r on r.id = e.run_id
    -- By asset and partition too, so the outputs index serves the lookup.
    left join outputs o on o.asset_key = e.asset_key and o.partition_key = e.partition_key
                        and o.step_id = e.step_id and o.try_number = e.try_number`.execute(db);
  return rows;
}

const num = (v: Id | null): number | null => (v === null ? null : Number(v));

function toEvent(r: EventRow): LineageEvent {
  return {
    eventId: Number(r.id),
    kind: r.kind,
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    runId: r.run_id,
    stepId: num(r.step_id),
    tryNumber: r.try_number,
    dataVersion: r.data_version,
    codeVersion: r.code_version,
    createdAt: r.created_at,
    depth: Number(r.depth),
  };
}

function toEdge(r: EdgeRow): LineageEdge {
  return {
    eventId: Number(r.event_id),
    upstreamAssetKey: r.upstream_asset_key,
    upstreamPartitionKey: r.upstream_partition_key,
    upstreamEventId: num(r.upstream_event_id),
  };
}

function toImpacted(r: ImpactRow): ImpactedPartition {
  return {
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    eventId: num(r.event_id),
    eventKind: r.kind,
    runId: r.run_id,
    runStatus: r.run_status,
    stepId: num(r.step_id),
    tryNumber: r.try_number,
    dataVersion: r.data_version,
    materializedAt: r.created_at,
    output: r.size_bytes === null ? null : { storageRef: r.storage_ref, inline: r.inline === true, sizeBytes: Number(r.size_bytes) },
  };
}

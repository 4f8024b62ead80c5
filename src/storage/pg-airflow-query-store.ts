import { sql, type Kysely, type RawBuilder } from "kysely";
import { InputError } from "../errors/index.js";
import type { Database } from "./database.js";
import {
  MAX_AIRFLOW_PAGE,
  type AirflowPage,
  type AirflowQueryStore,
  type JobRunFilter,
  type JobRunOrder,
  type JobRunRow,
  type PartitionRunRow,
  type StepAttributesRow,
  type StepOutputRow,
} from "./airflow-query-store.js";

/** AirflowQueryStore in Postgres SQL (server Postgres and PGlite). */
export class PgAirflowQueryStore implements AirflowQueryStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async listRunsOfAssets(
    assetKeys: readonly string[],
    page: AirflowPage,
    filter: JobRunFilter = {},
    order: JobRunOrder = { by: "createdAt", descending: true },
  ): Promise<{ rows: JobRunRow[]; total: number }> {
    checkPage(page);
    if (assetKeys.length === 0) return { rows: [], total: 0 };
    const keys = [...assetKeys];
    const conditions = filterConditions(filter);
    const where = conditions.length === 0 ? sql`` : sql`and ${sql.join(conditions, sql` and `)}`;
    // Newest runs first (runs_created_idx), each checked through the steps' (run_id, asset_key, partition_key) key:
    // a page stops after `limit` matching runs instead of aggregating every step of the assets. The run filters
    // apply to the run row before its steps are looked at.
    const [rows, count] = await Promise.all([
      sql<JobRunRow>`
        select r.id, r.status, r.origin, r.created_at as "createdAt", r.started_at as "startedAt", r.ended_at as "endedAt",
               k.first_key as "firstPartitionKey", k.last_key as "lastPartitionKey"
        from runs r
        cross join lateral (
          select min(s.partition_key) as first_key, max(s.partition_key) as last_key
          from steps s where s.run_id = r.id and s.asset_key = any(${keys}::text[])) k
        where k.first_key is not null ${where}
        order by ${orderBy(order)}
        limit ${page.limit} offset ${page.offset}`.execute(this.#db),
      conditions.length === 0
        ? sql<{ n: number }>`select count(distinct run_id)::int as n from steps where asset_key = any(${keys}::text[])`.execute(this.#db)
        : sql<{ n: number }>`
            select count(*)::int as n
            from (select run_id, min(partition_key) as first_key from steps where asset_key = any(${keys}::text[]) group by run_id) k
            join runs r on r.id = k.run_id
            where true ${where}`.execute(this.#db),
    ]);
    return { rows: rows.rows, total: count.rows[0]?.n ?? 0 };
  }

  async stepAttributes(stepIds: readonly number[]): Promise<StepAttributesRow[]> {
    if (stepIds.length === 0) return [];
    const rows = await sql<StepAttributesRow>`
      select id as "stepId", queue, executor, pool_slots as "poolSlots", updated_at as "updatedAt" from steps
      where id = any(${[...stepIds]}::bigint[]) order by id`.execute(this.#db);
    return rows.rows.map((r) => ({ ...r, stepId: Number(r.stepId) }));
  }

  async latestRunsOfPartitions(partitions: readonly { assetKey: string; partitionKey: string }[]): Promise<PartitionRunRow[]> {
    if (partitions.length === 0) return [];
    // One index probe per partition (steps_asset_partition_idx: asset_key, partition_key, id desc).
    const rows = await sql<PartitionRunRow>`
      select p.asset_key as "assetKey", p.partition_key as "partitionKey", s.run_id as "runId"
      from unnest(${partitions.map((p) => p.assetKey)}::text[], ${partitions.map((p) => p.partitionKey)}::text[]) as p(asset_key, partition_key)
      cross join lateral (
        select run_id from steps where asset_key = p.asset_key and partition_key = p.partition_key order by id desc limit 1) s`.execute(
      this.#db,
    );
    return rows.rows;
  }

  async stepOutputs(stepIds: readonly number[]): Promise<StepOutputRow[]> {
    if (stepIds.length === 0) return [];
    const rows = await sql<StepOutputRow>`
      select step_id as "stepId", try_number as "tryNumber", size_bytes as "sizeBytes", created_at as "createdAt" from outputs
      where step_id = any(${[...stepIds]}::bigint[]) order by step_id, try_number`.execute(this.#db);
    return rows.rows;
  }
}

/** The filter as SQL conditions on the run row `r` and its first partition key `k.first_key`. */
function filterConditions(f: JobRunFilter): RawBuilder<unknown>[] {
  const out: RawBuilder<unknown>[] = [];
  if (f.statuses !== undefined) out.push(sql`r.status = any(${[...f.statuses]}::text[])`);
  if (f.firstKeyRange?.gte !== undefined) out.push(sql`k.first_key >= ${f.firstKeyRange.gte}`);
  if (f.firstKeyRange?.lte !== undefined) out.push(sql`k.first_key <= ${f.firstKeyRange.lte}`);
  if (f.firstKeyIn !== undefined) out.push(sql`k.first_key = any(${[...f.firstKeyIn]}::text[])`);
  const ranges = [
    [sql.ref("r.created_at"), f.createdAt],
    [sql.ref("r.started_at"), f.startedAt],
    [sql.ref("r.ended_at"), f.endedAt],
    [sql.ref("r.updated_at"), f.updatedAt],
  ] as const;
  for (const [column, range] of ranges) {
    if (range?.gte !== undefined) out.push(sql`${column} >= ${range.gte}`);
    if (range?.lte !== undefined) out.push(sql`${column} <= ${range.lte}`);
  }
  return out;
}

function checkPage(page: AirflowPage): void {
  if (!Number.isInteger(page.limit) || page.limit < 1 || page.limit > MAX_AIRFLOW_PAGE) {
    throw new InputError(`limit: ${page.limit} must be a whole number from 1 to ${MAX_AIRFLOW_PAGE}`, { location: { field: "limit" } });
  }
  if (!Number.isInteger(page.offset) || page.offset < 0) {
    throw new InputError(`offset: ${page.offset} must be a whole number from 0`, { location: { field: "offset" } });
  }
}

function orderBy(order: JobRunOrder): RawBuilder<unknown> {
  const dir = order.descending ? sql`desc` : sql`asc`;
  const byCreation = sql`r.created_at ${dir}, r.id ${dir}`;
  if (order.by === "firstKey") return sql`k.first_key ${dir}, ${byCreation}`;
  if (order.by === "keyRank") return sql`array_position(${[...order.keys]}::text[], k.first_key) ${dir} nulls last, ${byCreation}`;
  return byCreation;
}

import { sql, type Kysely, type RawBuilder } from "kysely";
import { InputError } from "../errors/index.js";
import type { Database } from "./database.js";
import {
  MATERIALIZATION_KINDS,
  MAX_READ_PAGE,
  type MaterializationQuery,
  type MaterializationQueryStore,
  type MaterializationView,
  type ReadPage,
  type RunAssetSummary,
  type RunPageQuery,
} from "./materialization-query-store.js";
import type { RunSummary } from "./run-store.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Decoded cursors: `m:<event id>` and `r:<created_at in µs since the epoch>:<run id>`. */
const EVENT_CURSOR = /^m:([1-9]\d{0,17})$/;
const RUN_CURSOR = /^r:(-?\d{1,19}):([0-9a-f-]{36})$/i;

type EventRow = MaterializationView & { ord: number };
type AskedPage = MaterializationQuery & { ord: number; afterId: string };

const MAX_BIGINT = "9223372036854775807";
/** One partition's events: the (asset_key, partition_key, id desc) index yields them newest first. */
const PARTITION_SCAN = sql`
  select * from events e
  where e.asset_key = q.asset_key and e.partition_key = q.partition_key and e.id < q.after_id
    and e.kind = any(${[...MATERIALIZATION_KINDS]}::text[])
  order by e.id desc limit q.lim`;
/** All of an asset's events: newest first of each kind from the (asset_key, kind, id desc) index, then merged. */
const ASSET_SCAN = sql`
  select * from (${sql.join(
    MATERIALIZATION_KINDS.map(
      (kind) =>
        sql`(select * from events e where e.asset_key = q.asset_key and e.kind = ${kind} and e.id < q.after_id order by e.id desc limit q.lim)`,
    ),
    sql` union all `,
  )}) e
  order by e.id desc limit q.lim`;
type RunRow = RunSummary & { createdUs: string };

/**
 * MaterializationQueryStore in Postgres SQL (server Postgres and PGlite).
 * Cursors are the decoded forms above in base64url, so clients treat them as
 * opaque; runs page on (created_at, id) with created_at to the microsecond.
 */
export class PgMaterializationQueryStore implements MaterializationQueryStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async materializations(queries: readonly MaterializationQuery[]): Promise<ReadPage<MaterializationView>[]> {
    for (const q of queries) checkFirst(q.first);
    const asked = queries.map((q, i) => ({
      ...q,
      ord: i + 1,
      afterId: q.after === undefined ? MAX_BIGINT : decode(q.after, EVENT_CURSOR, "materialization")[1]!,
    }));
    const rows = (
      await Promise.all([
        this.#pages(
          asked.filter((q) => q.partitionKey !== undefined),
          PARTITION_SCAN,
        ),
        this.#pages(
          asked.filter((q) => q.partitionKey === undefined),
          ASSET_SCAN,
        ),
      ])
    ).flat();
    const byQuery = queries.map((): MaterializationView[] => []);
    for (const { ord, ...view } of rows) byQuery[ord - 1]!.push(view);
    return byQuery.map((views, i) => pageOf(views, queries[i]!.first, (v) => encode(`m:${v.id}`)));
  }

  /** One statement for many pages: `scan` runs once per asked page (q), one row more than asked telling whether another page follows. */
  async #pages(asked: readonly AskedPage[], scan: RawBuilder<unknown>): Promise<EventRow[]> {
    if (asked.length === 0) return [];
    const { rows } = await sql<EventRow>`
      select q.ord::int as ord, e.id, e.kind, e.asset_key as "assetKey", e.partition_key as "partitionKey",
             e.run_id as "runId", e.step_id as "stepId", e.data_version as "dataVersion", e.code_version as "codeVersion",
             e.metadata, e.created_at as "createdAt"
      from unnest(${asked.map((q) => q.ord)}::int[], ${asked.map((q) => q.assetKey)}::text[], ${asked.map((q) => q.partitionKey ?? null)}::text[],
                  ${asked.map((q) => q.afterId)}::bigint[], ${asked.map((q) => q.first + 1)}::int[])
           as q(ord, asset_key, partition_key, after_id, lim)
      cross join lateral (${scan}) e
      order by q.ord, e.id desc`.execute(this.#db);
    return rows;
  }

  async runPage(query: RunPageQuery): Promise<ReadPage<RunSummary>> {
    checkFirst(query.first);
    const conditions = runConditions(query);
    if (query.after !== undefined) {
      const [, us, id] = decode(query.after, RUN_CURSOR, "run");
      conditions.push(sql`(r.created_at, r.id) < (timestamptz 'epoch' + ${us}::bigint * interval '1 microsecond', ${id}::uuid)`);
    }
    const where = conditions.length > 0 ? sql`where ${sql.join(conditions, sql` and `)}` : sql``;
    const { rows } = await sql<RunRow>`
      select r.id, r.status, r.origin, r.snapshot_version as "snapshotVersion", r.job_name as "jobName", r.priority, r.tags,
             r.steps_total as "stepsTotal", r.steps_done as "stepsDone", r.steps_failed as "stepsFailed",
             r.steps_active as "stepsActive", r.created_at as "createdAt", r.started_at as "startedAt", r.ended_at as "endedAt",
             r.cancel_requested_at as "cancelRequestedAt", r.backfill_id as "backfillId",
             (extract(epoch from r.created_at) * 1000000)::bigint::text as "createdUs"
      from runs r ${where}
      order by r.created_at desc, r.id desc
      limit ${query.first + 1}`.execute(this.#db);
    const page = pageOf(rows, query.first, (r) => encode(`r:${r.createdUs}:${r.id}`));
    return { ...page, nodes: page.nodes.map(({ createdUs: _, ...run }) => run) };
  }

  async runAssets(runIds: readonly string[]): Promise<ReadonlyMap<string, readonly RunAssetSummary[]>> {
    const ids = runIds.filter((id) => UUID.test(id));
    const out = new Map<string, RunAssetSummary[]>();
    if (ids.length === 0) return out;
    const { rows } = await sql<RunAssetSummary & { runId: string }>`
      select run_id as "runId", asset_key as "assetKey", count(*)::int as steps,
             min(partition_key collate "C") as "minPartition", max(partition_key collate "C") as "maxPartition"
      from steps where run_id = any(${ids}::uuid[])
      group by run_id, asset_key order by run_id, asset_key`.execute(this.#db);
    for (const { runId, ...summary } of rows) {
      const list = out.get(runId) ?? [];
      list.push(summary);
      out.set(runId, list);
    }
    return out;
  }
}

function runConditions(f: RunPageQuery): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  if (f.status !== undefined) conditions.push(sql`r.status = ${f.status}`);
  if (f.origin !== undefined) conditions.push(sql`r.origin = ${f.origin}`);
  // A backfill id that is no uuid matches no run (rather than a cast error).
  if (f.backfillId !== undefined) conditions.push(UUID.test(f.backfillId) ? sql`r.backfill_id = ${f.backfillId}::uuid` : sql`false`);
  if (f.assetKey !== undefined) conditions.push(sql`exists (select 1 from steps s where s.run_id = r.id and s.asset_key = ${f.assetKey})`);
  if (f.createdAfter !== undefined) conditions.push(sql`r.created_at >= ${f.createdAfter}`);
  if (f.createdBefore !== undefined) conditions.push(sql`r.created_at < ${f.createdBefore}`);
  return conditions;
}

function pageOf<T>(rows: readonly T[], first: number, cursorOf: (last: T) => string): ReadPage<T> {
  const nodes = rows.slice(0, first);
  const last = nodes[nodes.length - 1];
  return { nodes, endCursor: last === undefined ? null : cursorOf(last), hasNextPage: rows.length > first };
}

function checkFirst(first: number): void {
  if (!Number.isInteger(first) || first < 1 || first > MAX_READ_PAGE) {
    throw new InputError(`first: ${first} must be a whole number from 1 to ${MAX_READ_PAGE}`, { location: { field: "first" } });
  }
}

function encode(cursor: string): string {
  return Buffer.from(cursor).toString("base64url");
}

function decode(cursor: string, shape: RegExp, what: string): RegExpExecArray {
  const match = shape.exec(Buffer.from(cursor, "base64url").toString());
  if (!match) {
    throw new InputError(`after: "${cursor}" is not a ${what} cursor; pass the endCursor of the previous page`, {
      location: { field: "after" },
    });
  }
  return match;
}

import { sql, type Kysely, type RawBuilder } from "kysely";
import { InputError } from "../errors/index.js";
import type { CheckResultQuery, CheckResultStore, CheckResultView } from "./check-result-store.js";
import type { Database } from "./database.js";
import { MAX_READ_PAGE, type ReadPage } from "./materialization-query-store.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Decoded cursor: `k:<check result id>`. */
const RESULT_CURSOR = /^k:([1-9]\d{0,17})$/;
const MAX_BIGINT = "9223372036854775807";

const COLUMNS = sql`r.id, r.asset_key as "assetKey", r.check_name as "checkName", r.partition_key as "partitionKey", r.run_id as "runId",
  r.step_id as "stepId", r.event_id as "eventId", r.passed, r.severity, r.blocking, r.metadata, r.error, r.try_number as "tryNumber",
  r.created_at as "createdAt"`;
/** Asset, partition and check all given: the (asset_key, partition_key, check_name, id desc) index yields them newest first. */
const EXACT_SCAN = sql`
  select * from check_results r
  where r.asset_key = q.asset_key and r.partition_key = q.partition_key and r.check_name = q.check_name and r.id < q.after_id
  order by r.id desc limit q.lim`;
/** Any of check and partition left open. */
const OPEN_SCAN = sql`
  select * from check_results r
  where r.asset_key = q.asset_key and (q.partition_key is null or r.partition_key = q.partition_key)
    and (q.check_name is null or r.check_name = q.check_name) and r.id < q.after_id
  order by r.id desc limit q.lim`;

type AskedPage = CheckResultQuery & { ord: number; afterId: string };

/** CheckResultStore in Postgres SQL (server Postgres and PGlite); cursors are base64url so clients treat them as opaque. */
export class PgCheckResultStore implements CheckResultStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async checkResults(queries: readonly CheckResultQuery[]): Promise<ReadPage<CheckResultView>[]> {
    for (const q of queries) checkFirst(q.first);
    const asked = queries.map((q, i) => ({ ...q, ord: i + 1, afterId: q.after === undefined ? MAX_BIGINT : decode(q.after)[1]! }));
    const exact = (q: AskedPage) => q.checkName !== undefined && q.partitionKey !== undefined;
    const rows = (
      await Promise.all([
        this.#pages(asked.filter(exact), EXACT_SCAN),
        this.#pages(
          asked.filter((q) => !exact(q)),
          OPEN_SCAN,
        ),
      ])
    ).flat();
    const byQuery = queries.map((): CheckResultView[] => []);
    for (const { ord, ...view } of rows) byQuery[ord - 1]!.push(view);
    return byQuery.map((views, i) => pageOf(views, queries[i]!.first));
  }

  /** One statement for many pages: `scan` runs once per asked page (q), one row more than asked telling whether another page follows. */
  async #pages(asked: readonly AskedPage[], scan: RawBuilder<unknown>): Promise<(CheckResultView & { ord: number })[]> {
    if (asked.length === 0) return [];
    const { rows } = await sql<CheckResultView & { ord: number }>`
      select q.ord::int as ord, ${COLUMNS}
      from unnest(${asked.map((q) => q.ord)}::int[], ${asked.map((q) => q.assetKey)}::text[], ${asked.map((q) => q.checkName ?? null)}::text[],
                  ${asked.map((q) => q.partitionKey ?? null)}::text[], ${asked.map((q) => q.afterId)}::bigint[], ${asked.map((q) => q.first + 1)}::int[])
           as q(ord, asset_key, check_name, partition_key, after_id, lim)
      cross join lateral (${scan}) r
      order by q.ord, r.id desc`.execute(this.#db);
    return rows;
  }

  async resultsOfRuns(runIds: readonly string[]): Promise<ReadonlyMap<string, readonly CheckResultView[]>> {
    const ids = runIds.filter((id) => UUID.test(id));
    const out = new Map<string, CheckResultView[]>();
    if (ids.length === 0) return out;
    const { rows } = await sql<CheckResultView>`
      select ${COLUMNS} from check_results r where r.run_id = any(${ids}::uuid[]) order by r.id`.execute(this.#db);
    for (const row of rows) {
      const list = out.get(row.runId!) ?? [];
      list.push(row);
      out.set(row.runId!, list);
    }
    return out;
  }
}

function pageOf(rows: readonly CheckResultView[], first: number): ReadPage<CheckResultView> {
  const nodes = rows.slice(0, first);
  const last = nodes[nodes.length - 1];
  return {
    nodes,
    endCursor: last === undefined ? null : Buffer.from(`k:${last.id}`).toString("base64url"),
    hasNextPage: rows.length > first,
  };
}

function checkFirst(first: number): void {
  if (!Number.isInteger(first) || first < 1 || first > MAX_READ_PAGE) {
    throw new InputError(`first: ${first} must be a whole number from 1 to ${MAX_READ_PAGE}`, { location: { field: "first" } });
  }
}

function decode(cursor: string): RegExpExecArray {
  const match = RESULT_CURSOR.exec(Buffer.from(cursor, "base64url").toString());
  if (!match) {
    throw new InputError(`after: "${cursor}" is not a check result cursor; pass the endCursor of the previous page`, {
      location: { field: "after" },
    });
  }
  return match;
}

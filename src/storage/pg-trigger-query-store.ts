import { sql, type Kysely, type RawBuilder } from "kysely";
import { InputError } from "../errors/index.js";
import type { Database, TriggerStatus } from "./database.js";
import type { JsonValue } from "./json.js";
import {
  MAX_TRIGGER_PAGE,
  TRIGGER_STATUSES,
  type ListTriggersOptions,
  type TriggerCounts,
  type TriggerFilter,
  type TriggerPage,
  type TriggerQueryStore,
  type TriggerView,
} from "./trigger-query-store.js";

/** Cursors are `<group>:<id>`: group 0 the waiting triggers, 1 the ended ones (listings show waiting ones first). */
const CURSOR = /^([01]):([1-9]\d{0,17})$/;

interface ViewRow {
  id: string;
  kind: string;
  args: Record<string, unknown>;
  status: TriggerStatus;
  step_id: string | null;
  run_id: string | null;
  asset_key: string | null;
  partition_key: string | null;
  partition_window: { start: string; end: string } | null;
  attempts: number;
  poll_interval_ms: number;
  soft_fail: boolean;
  next_check_at: Date;
  timeout_at: Date | null;
  last_checked_at: Date | null;
  last_result: JsonValue | null;
  payload: JsonValue | null;
  error: JsonValue | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  created_at: Date;
  ended_at: Date | null;
  grp: number;
}

/**
 * TriggerQueryStore in Postgres SQL (server Postgres and PGlite). A step's
 * trigger takes its asset and partition from the step when it does not carry
 * them itself, so filtering by asset finds deferred steps and source
 * observations alike.
 */
export class PgTriggerQueryStore implements TriggerQueryStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async listTriggers(options: ListTriggersOptions): Promise<TriggerPage> {
    if (!Number.isInteger(options.limit) || options.limit < 1 || options.limit > MAX_TRIGGER_PAGE) {
      throw new InputError(`limit: ${options.limit} must be a whole number from 1 to ${MAX_TRIGGER_PAGE}`, {
        location: { field: "limit" },
      });
    }
    const after = options.after === undefined ? undefined : parseCursor(options.after);
    const conditions = [
      ...filterConditions(options),
      ...(after ? [sql`(${GROUP} > ${after.group} or (${GROUP} = ${after.group} and t.id < ${after.id}))`] : []),
    ];
    // One row more than asked for tells whether another page follows.
    const rows = await this.#select(conditions, sql`order by grp, t.id desc limit ${options.limit + 1}`);
    const nodes = rows.slice(0, options.limit);
    const last = rows.length > 0 ? nodes[nodes.length - 1] : undefined;
    return {
      nodes: nodes.map(toView),
      endCursor: last ? `${last.grp}:${last.id}` : null,
      hasNextPage: rows.length > options.limit,
    };
  }

  async triggersById(ids: readonly number[]): Promise<ReadonlyMap<number, TriggerView>> {
    if (ids.length === 0) return new Map();
    const rows = await this.#select([sql`t.id = any(${[...new Set(ids)]}::bigint[])`], sql``);
    return new Map(rows.map((r) => [Number(r.id), toView(r)]));
  }

  async currentTriggersOfSteps(stepIds: readonly number[]): Promise<ReadonlyMap<number, TriggerView>> {
    if (stepIds.length === 0) return new Map();
    // steps.trigger_id, not triggers.step_id: a step deferred twice keeps its older triggers.
    const rows = await this.#select(
      [sql`t.id in (select trigger_id from steps where id = any(${[...new Set(stepIds)]}::bigint[]))`],
      sql``,
    );
    return new Map(rows.filter((r) => r.step_id !== null).map((r) => [Number(r.step_id), toView(r)]));
  }

  async countTriggers(filter: Omit<TriggerFilter, "status"> = {}): Promise<TriggerCounts> {
    const conditions = filterConditions(filter);
    const { rows } = await sql<{ status: TriggerStatus; n: string }>`
      select t.status, count(*) as n
      from triggers t left join steps s on s.id = t.step_id
      ${where(conditions)}
      group by t.status`.execute(this.#db);
    const counts = Object.fromEntries(TRIGGER_STATUSES.map((s) => [s, 0])) as Record<TriggerStatus, number>;
    for (const r of rows) counts[r.status] = Number(r.n);
    return counts;
  }

  async #select(conditions: readonly RawBuilder<unknown>[], tail: RawBuilder<unknown>): Promise<ViewRow[]> {
    const { rows } = await sql<ViewRow>`
      select t.id, t.kind, t.args, t.status, t.step_id, s.run_id,
             coalesce(t.asset_key, s.asset_key) as asset_key,
             coalesce(t.partition_key, s.partition_key) as partition_key,
             t.partition_window, t.attempts, t.poll_interval_ms, t.soft_fail, t.next_check_at, t.timeout_at,
             t.last_checked_at, t.last_result, t.payload, t.error, t.lease_owner, t.lease_expires_at,
             t.created_at, t.ended_at, ${GROUP} as grp
      from triggers t left join steps s on s.id = t.step_id
      ${where(conditions)}
      ${tail}`.execute(this.#db);
    return rows;
  }
}

const GROUP = sql<number>`(case when t.status = 'waiting' then 0 else 1 end)`;

function filterConditions(filter: TriggerFilter): RawBuilder<unknown>[] {
  return [
    ...(filter.status !== undefined ? [sql`t.status = ${filter.status}`] : []),
    ...(filter.assetKey !== undefined ? [sql`coalesce(t.asset_key, s.asset_key) = ${filter.assetKey}`] : []),
    ...(filter.kind !== undefined ? [sql`t.kind = ${filter.kind}`] : []),
  ];
}

function where(conditions: readonly RawBuilder<unknown>[]): RawBuilder<unknown> {
  return conditions.length === 0 ? sql`` : sql`where ${sql.join(conditions, sql` and `)}`;
}

function parseCursor(cursor: string): { group: number; id: string } {
  const m = CURSOR.exec(cursor);
  if (!m) {
    throw new InputError(`after: "${cursor}" is not a trigger cursor; pass the endCursor of the previous page`, {
      location: { field: "after" },
    });
  }
  return { group: Number(m[1]), id: m[2]! };
}

function toView(r: ViewRow): TriggerView {
  return {
    id: Number(r.id),
    kind: r.kind,
    args: r.args,
    status: r.status,
    stepId: r.step_id === null ? null : Number(r.step_id),
    runId: r.run_id,
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    partitionWindow: r.partition_window,
    attempts: r.attempts,
    pollIntervalMs: r.poll_interval_ms,
    softFail: r.soft_fail,
    nextCheckAt: r.status === "waiting" ? r.next_check_at : null,
    timeoutAt: r.timeout_at,
    lastCheckedAt: r.last_checked_at,
    lastResult: r.last_result,
    payload: r.payload,
    error: r.error,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    createdAt: r.created_at,
    endedAt: r.ended_at,
  };
}

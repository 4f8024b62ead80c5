import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import type {
  ActiveRunStatus,
  DispatchLatencies,
  DispatchLatencyOptions,
  MetricsQueryStore,
  MetricsSnapshot,
  TriggerStatusCounts,
  UnfinishedStepState,
} from "./metrics-query-store.js";
import { UNFINISHED_STEP_STATES } from "./partition-status-store.js";

/** History tables whose size is worth watching; estimated, never counted. */
const ESTIMATED_TABLES = ["runs", "steps", "step_tries", "events", "triggers"] as const;

// Literals, not parameters: the planner proves the partial index
// steps_asset_unfinished_idx applies only when it sees the same constant list.
const UNFINISHED = sql.join(UNFINISHED_STEP_STATES.map((state) => sql.lit(state)));

/**
 * The metrics queries on Postgres and PGlite. Each reads a partial index
 * (unfinished steps, scheduled steps, active runs, waiting triggers), a
 * small table (pools) or the catalog (row estimates).
 */
export class PgMetricsQueryStore implements MetricsQueryStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async snapshot(now: Date): Promise<MetricsSnapshot> {
    return this.#db.connection().execute(async (db) => {
      const steps = await sql<{ state: UnfinishedStepState; n: number }>`
        select state, count(*)::int as n from steps where state in (${UNFINISHED}) group by state`.execute(db);
      const queues = await sql<{ executor: string; queue: string | null; n: number }>`
        select executor, queue, count(*)::int as n from steps where state = 'scheduled'
        group by executor, queue order by executor, queue`.execute(db);
      const pools = await sql<{ pool: string; n: number }>`
        select pool, count(*)::int as n from steps where state = 'scheduled' group by pool order by pool`.execute(db);
      const handedOver = await sql<{ executor: string; queue: string | null; n: number }>`
        select executor, queue, count(*)::int as n from steps where state = 'queued'
        group by executor, queue order by executor, queue`.execute(db);
      const runs = await sql<{ status: ActiveRunStatus; n: number }>`
        select status, count(*)::int as n from runs where status in ('queued', 'running') group by status`.execute(db);
      const slots = await sql<{ name: string; slots: number; occupied: number }>`
        select name, slots, occupied_slots as occupied from pools order by name`.execute(db);
      const triggers = await sql<{ kind: string; waiting: number; due: number }>`
        select kind, count(*)::int as waiting, (count(*) filter (where next_check_at <= ${now}))::int as due
        from triggers where status = 'waiting' group by kind order by kind`.execute(db);
      const estimates = await sql<{ table: string; rows: number }>`
        select c.relname as table, c.reltuples::float8 as rows
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = current_schema() and c.relkind = 'r' and c.relname in (${sql.join(ESTIMATED_TABLES.map((t) => sql.lit(t)))})
          and c.reltuples >= 0
        order by c.relname`.execute(db);
      const stepsByState = Object.fromEntries(UNFINISHED_STEP_STATES.map((state) => [state, 0])) as Record<UnfinishedStepState, number>;
      for (const row of steps.rows) stepsByState[row.state] = row.n;
      const runsByStatus: Record<ActiveRunStatus, number> = { queued: 0, running: 0 };
      for (const row of runs.rows) runsByStatus[row.status] = row.n;
      return {
        stepsByState,
        queueDepth: queues.rows.map((r) => ({ executor: r.executor, queue: r.queue, steps: r.n })),
        runsByStatus,
        pools: slots.rows,
        queuedByPool: pools.rows.map((r) => ({ pool: r.pool, steps: r.n })),
        handedOver: handedOver.rows.map((r) => ({ executor: r.executor, queue: r.queue, steps: r.n })),
        waitingTriggers: triggers.rows,
        tableRowEstimates: estimates.rows.map((r) => ({ table: r.table, rows: Number(r.rows) })),
      };
    });
  }

  async triggerCounts(afterId: number, settleUpTo: number): Promise<TriggerStatusCounts> {
    // One statement, so the counts and the bounds see the same snapshot. The oldest waiting
    // trigger comes from a partial index (every waiting trigger is in it), the newest from the
    // primary key; the counts read a range of the primary key above what the caller has settled.
    const { rows } = await sql<{
      first_waiting: string | null;
      newest: string | null;
      kind: string | null;
      status: string;
      n: number;
      settled: number;
    }>`
      with b as (
        select (select min(id) from triggers where status = 'waiting') as first_waiting, (select max(id) from triggers) as newest
      )
      select b.first_waiting, b.newest, g.kind, g.status, g.n, g.settled
      from b left join lateral (
        select kind, status, count(*)::int as n,
               (count(*) filter (where id <= least(${settleUpTo}::bigint, coalesce(b.first_waiting - 1, b.newest))))::int as settled
        from triggers where id > ${afterId}::bigint group by kind, status
      ) g on true
      order by g.kind, g.status`.execute(this.#db);
    const b = rows[0];
    const settledBelow = b?.first_waiting != null ? Number(b.first_waiting) - 1 : b?.newest != null ? Number(b.newest) : null;
    return {
      counts: rows.flatMap((r) => (r.kind === null ? [] : [{ kind: r.kind, status: r.status, triggers: r.n, settled: r.settled }])),
      settledBelow,
    };
  }

  async dispatchLatencies(options: DispatchLatencyOptions): Promise<DispatchLatencies> {
    // The first read starts `limit` tries before the newest: never a scan of the whole history.
    const after =
      options.afterTryId === null
        ? sql`(select coalesce(max(id), 0) - ${options.limit}::bigint from step_tries)`
        : sql`${options.afterTryId}::bigint`;
    const { rows } = await sql<{ id: string; ms: number | null }>`
      select t.id,
             -- steps.scheduled_at belongs to the step's latest try only.
             case when s.try_number = t.try_number and s.scheduled_at <= t.queued_at
                  then (extract(epoch from t.queued_at - s.scheduled_at) * 1000)::float8 end as ms
      from step_tries t join steps s on s.id = t.step_id
      where t.id > ${after} and t.queued_at >= ${options.since}
      order by t.id limit ${options.limit}::int`.execute(this.#db);
    const last = rows.at(-1);
    return {
      lastTryId: last ? Number(last.id) : options.afterTryId,
      latenciesMs: rows.flatMap((r) => (r.ms === null ? [] : [Number(r.ms)])),
    };
  }
}

import { sql } from "kysely";
import type { RunStatus } from "../../database.js";
import type { ClaimHolder, FiredTrigger } from "../../run-store.js";
import type { Trx } from "../step-rows.js";

// The claim's raw statements: the candidate pick is a SKIP LOCKED batch ranked by subqueries, and the hand-out
// moves steps, try rows, pool slots and run counters in one data-modifying CTE; the builder expresses neither.
//
// The pick locks the steps it chose by id, testing their state with `(…) is true`: it means the same as the bare
// test, but the planner cannot prove from it that a partial index on scheduled steps covers the rows. With
// statistics taken before a large run was created, the planner believes such an index nearly empty and, given the
// bare test, read it whole once for every id (a claim of 500 steps among 4 000 scheduled ones: 11 000 buffers,
// 10–50 ms) instead of looking each id up in the primary key.

export interface Candidate {
  id: number;
  run_id: string;
  asset_key: string;
  pool: string;
  pool_slots: number;
  executor: string;
  max_concurrency: number | null;
  priority: number;
  depth: number;
  aged: boolean;
  run_status: RunStatus;
  cancel_requested_at: Date | null;
  max_active_steps: number | null;
  steps_active: number;
}

/**
 * Scheduled steps of these executor kinds, locked (skipping rows other claims hold): the best `limit` by
 * priority, depth and age of id, plus the `agingLimit` longest-waiting (marked aged); or, with onlyIds, just
 * those steps.
 */
export async function selectCandidates(
  trx: Trx,
  scope: {
    readonly kindNames: readonly string[];
    readonly limit: number;
    readonly agingLimit: number;
    readonly onlyIds?: readonly number[];
    /** Steps of onlyIds this transaction found runnable but left pending (see propagate's holdRunnable). */
    readonly pendingRunnable?: readonly number[];
  },
): Promise<Candidate[]> {
  const { kindNames, limit, agingLimit } = scope;
  const { rows } = scope.onlyIds
    ? await sql<Candidate>`
        select s.id, s.run_id, s.asset_key, s.pool, s.pool_slots, s.executor, s.max_concurrency, s.priority, s.depth,
               false as aged, r.status as run_status, r.cancel_requested_at, r.max_active_steps, r.steps_active
        from steps s join runs r on r.id = s.run_id
        where s.id = any(${scope.onlyIds}::bigint[]) and s.executor = any(${kindNames}::text[])
          and (s.state = 'scheduled' or (s.state = 'pending' and s.id = any(${[...(scope.pendingRunnable ?? [])]}::bigint[]))) is true
        for no key update of s skip locked`.execute(trx)
    : await sql<Candidate>`
        select s.id, s.run_id, s.asset_key, s.pool, s.pool_slots, s.executor, s.max_concurrency, s.priority, s.depth,
               (s.id in (select id from steps where state = 'scheduled' and executor = any(${kindNames}::text[])
                         order by scheduled_at, id limit ${agingLimit}::int)) as aged,
               r.status as run_status, r.cancel_requested_at, r.max_active_steps, r.steps_active
        from steps s join runs r on r.id = s.run_id
        -- The two candidate lists as one array, looked up by primary key: as \`id in (…) or id in (…)\` the planner
        -- visited every scheduled step on each claim.
        where (s.state = 'scheduled') is true
          and s.id = any(array(select id from steps where state = 'scheduled' and executor = any(${kindNames}::text[])
                               order by priority desc, depth desc, id limit ${limit}::int)
                         || array(select id from steps where state = 'scheduled' and executor = any(${kindNames}::text[])
                                  order by scheduled_at, id limit ${agingLimit}::int))
        for no key update of s skip locked`.execute(trx);
  return rows;
}

/** A step as the hand-out leaves it: queued at its next try. */
export interface HandedOut {
  id: number;
  run_id: string;
  try_number: number;
  asset_key: string;
  partition_key: string;
  map_index: number;
  executor: string;
  queue: string | null;
  timeout_ms: number | null;
  last_try: number;
  snapshot_version: number;
  wait_started_at: Date | null;
  resumed: FiredTrigger[] | null;
  check_name: string | null;
  map_item: unknown;
  map_label: string | null;
}

/**
 * Hands out the admitted steps: state, try row, pool slots and run counters in one statement. Steps of the
 * holder's kinds are recorded as held by it (`worker_id`) until they start. Steps of `pendingRunnable` go
 * straight from pending, becoming runnable now.
 */
export async function handOutSteps(
  trx: Trx,
  admitted: readonly number[],
  now: Date,
  holder: ClaimHolder | undefined,
  pendingRunnable: readonly number[] = [],
): Promise<HandedOut[]> {
  const { rows } = await sql<HandedOut>`
    with upd as (
      update steps set state = 'queued', queued_at = ${now}, try_number = try_number + 1, updated_at = ${now},
                       error = null, started_at = null, ended_at = null, heartbeat_at = null, skip_reason = null,
                       scheduled_at = case when state = 'pending' then ${now}::timestamptz else scheduled_at end,
                       worker_id = case when executor = any(${[...(holder?.kinds ?? [])]}::text[]) then ${holder?.id ?? null}::text end
      where id = any(${[...admitted]}::bigint[])
        and (state = 'scheduled' or (state = 'pending' and id = any(${[...pendingRunnable]}::bigint[])))
      returning id, run_id, try_number, asset_key, partition_key, map_index, executor, queue, timeout_ms, pool, pool_slots,
                max_tries + tries_before as last_try, trigger_id, wait_started_at, check_name, map_item, map_label
    ), tries as (
      insert into step_tries (step_id, run_id, try_number, state, executor, queued_at)
      select id, run_id, try_number, 'queued', executor, ${now} from upd
    ), pool_use as (
      update pools set occupied_slots = occupied_slots + u.n, updated_at = ${now}
      from (select pool, sum(pool_slots)::int as n from upd group by pool) u where pools.name = u.pool
    ), run_use as (
      update runs set steps_active = steps_active + u.n, updated_at = ${now}
      from (select run_id, count(*)::int as n from upd group by run_id) u where runs.id = u.run_id
      returning runs.id, runs.snapshot_version
    )
    select upd.id, upd.run_id, upd.try_number, upd.asset_key, upd.partition_key, upd.map_index, upd.executor, upd.queue,
           upd.timeout_ms, upd.last_try, run_use.snapshot_version, upd.wait_started_at, upd.check_name, upd.map_item, upd.map_label,
           -- A step that deferred gets back what its fired triggers found.
           case when upd.trigger_id is null then null else (
             select jsonb_agg(jsonb_build_object('kind', t.kind, 'args', t.args, 'payload', t.payload) order by t.id)
             from triggers t where t.step_id = upd.id and t.status = 'fired') end as resumed
    from upd join run_use on run_use.id = upd.run_id`.execute(trx);
  return rows;
}

import { sql, type Kysely } from "kysely";
import type { Database } from "../../database.js";
import { toJson } from "../../json.js";
import { HOUSEKEEPING_BATCH, type Trx } from "../step-rows.js";

// Housekeeping's batches: each takes at most HOUSEKEEPING_BATCH rows and skips rows a claim or completion holds
// (FOR NO KEY UPDATE SKIP LOCKED in a subquery), which the builder does not express.

/** Retries and reschedules whose time has come become scheduled. Returns the steps moved. */
export async function scheduleDueRetries(trx: Trx, now: Date): Promise<{ id: number }[]> {
  const { rows } = await sql<{ id: number }>`
    update steps set state = 'scheduled', scheduled_at = ${now}, next_retry_at = null, updated_at = ${now}
    where id in (select id from steps where state in ('up_for_retry', 'up_for_reschedule') and next_retry_at <= ${now}
                 order by next_retry_at limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked)
    returning id`.execute(trx);
  return rows;
}

/** Running steps not heard from since `zombieBefore`, locked. */
export async function lockZombies(
  trx: Trx,
  zombieBefore: Date,
): Promise<{ id: number; try_number: number; worker_id: string | null; heartbeat_at: Date | null }[]> {
  const { rows } = await sql<{ id: number; try_number: number; worker_id: string | null; heartbeat_at: Date | null }>`
    select id, try_number, worker_id, heartbeat_at from steps
    where state = 'running' and coalesce(heartbeat_at, started_at, queued_at) < ${zombieBefore}
    order by id limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked`.execute(trx);
  return rows;
}

/** Steps handed out before `queuedBefore` and never started, scheduled again. Returns the steps moved. */
export async function requeueUnstarted(trx: Trx, queuedBefore: Date, now: Date): Promise<RequeuedStep[]> {
  const { rows } = await sql<RequeuedStep>`
    update steps set state = 'scheduled', scheduled_at = ${now}, tries_before = tries_before + 1, updated_at = ${now}
    where id in (select id from steps where state = 'queued' and queued_at < ${queuedBefore}
                 order by id limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked)
    returning id, run_id, try_number, pool, pool_slots`.execute(trx);
  return rows;
}

/**
 * Queued steps held by a reconciler (`worker_id`, see ClaimHolder) that has not heartbeated within `deadAfterMs`
 * by the database's clock, or that stopped, scheduled again. Returns the steps moved.
 */
export async function requeueHeldByGone(trx: Trx, deadAfterMs: number, now: Date): Promise<(RequeuedStep & { holder: string })[]> {
  const { rows } = await sql<RequeuedStep & { holder: string }>`
    update steps set state = 'scheduled', scheduled_at = ${now}, tries_before = tries_before + 1, updated_at = ${now}
    where id in (select s.id from steps s
                 where s.state = 'queued' and s.worker_id is not null
                   and not exists (select 1 from component_heartbeats h
                                   where h.id = s.worker_id and h.kind = 'reconciler'
                                     and h.heartbeat_at > now() - make_interval(secs => ${deadAfterMs / 1000}::float8))
                 order by s.id limit ${HOUSEKEEPING_BATCH}::int for no key update of s skip locked)
      and state = 'queued'
    returning id, run_id, try_number, pool, pool_slots, worker_id as holder`.execute(trx);
  return rows;
}

/** A step that was handed out again: what the pools and run counters give back. */
export interface RequeuedStep {
  readonly id: number;
  readonly run_id: string;
  readonly try_number: number;
  readonly pool: string;
  readonly pool_slots: number;
}

/**
 * These tries, if their step is still `queued` on that try (not started, not handed out again meanwhile), scheduled
 * again. Returns the steps moved.
 */
export async function requeueListed(
  trx: Trx,
  tries: readonly { readonly stepId: number; readonly tryNumber: number }[],
  now: Date,
): Promise<RequeuedStep[]> {
  if (tries.length === 0) return [];
  const { rows } = await sql<RequeuedStep>`
    update steps set state = 'scheduled', scheduled_at = ${now}, tries_before = tries_before + 1, updated_at = ${now}
    where id in (select s.id from steps s
                 join jsonb_to_recordset(${toJson(tries.map((t) => ({ step_id: t.stepId, try_number: t.tryNumber })))}::jsonb)
                   as x(step_id bigint, try_number int) on x.step_id = s.id and x.try_number = s.try_number
                 where s.state = 'queued'
                 order by s.id for no key update of s skip locked)
    returning id, run_id, try_number, pool, pool_slots`.execute(trx);
  return rows;
}

/** Steps of these executor kinds handed out before `queuedBefore` and not started: their tries, oldest first. */
export async function queuedBefore(
  db: Kysely<Database>,
  executors: readonly string[],
  before: Date,
  limit: number,
): Promise<{ step_id: number; run_id: string; try_number: number; queue: string | null; executor: string }[]> {
  const { rows } = await sql<{ step_id: number; run_id: string; try_number: number; queue: string | null; executor: string }>`
    select id as step_id, run_id, try_number, queue, executor from steps
    where state = 'queued' and queued_at < ${before} and executor = any(${[...executors]}::text[])
    order by queued_at limit ${limit}::int`.execute(db);
  return rows;
}

/** Queued runs not being canceled, best first, locked: those waiting for their job's maxActiveRuns. */
export async function lockQueuedRuns(trx: Trx): Promise<{ id: string }[]> {
  const { rows } = await sql<{ id: string }>`
    select id from runs where status = 'queued' and cancel_requested_at is null
    order by priority desc, created_at limit 100 for no key update skip locked`.execute(trx);
  return rows;
}

/** Waiting triggers whose step is no longer deferred, canceled. Returns how many. */
export async function cancelUnneededWaits(trx: Trx, now: Date): Promise<bigint | undefined> {
  const result = await sql`
    update triggers set status = 'canceled', ended_at = ${now}, lease_owner = null, lease_expires_at = null,
                        updated_at = ${now}
    where id in (select t.id from triggers t join steps s on s.id = t.step_id
                 where t.status = 'waiting' and s.state <> 'deferred'
                 order by t.id limit ${HOUSEKEEPING_BATCH}::int for no key update of t skip locked)`.execute(trx);
  return result.numAffectedRows;
}

import { sql, type Kysely } from "kysely";
import type { Database } from "../../database.js";
import { toJson } from "../../json.js";
import { HOUSEKEEPING_BATCH, type Trx } from "../step-rows.js";

// Housekeeping's batches: each takes at most HOUSEKEEPING_BATCH rows and skips rows a claim or completion holds
// (FOR NO KEY UPDATE SKIP LOCKED in a subquery), which the builder does not express. What each batch takes is one
// condition, which choresDue also asks about.

/** Steps (of `steps`) whose retry or reschedule is due. */
const retryDue = (now: Date) => sql`state in ('up_for_retry', 'up_for_reschedule') and next_retry_at <= ${now}`;
/** Running steps (of `steps`) not heard from since `before`. */
const zombie = (before: Date) => sql`state = 'running' and coalesce(heartbeat_at, started_at, queued_at) < ${before}`;
/** Steps (of `steps`) handed out before `before` and not started. */
const unstarted = (before: Date) => sql`state = 'queued' and queued_at < ${before}`;
/** Queued steps (`steps s`) held by a reconciler without a heartbeat within `deadAfterMs` (by the database's clock). */
const heldByGone = (deadAfterMs: number) => sql`s.state = 'queued' and s.worker_id is not null
  and not exists (select 1 from component_heartbeats h
                  where h.id = s.worker_id and h.kind = 'reconciler'
                    and h.heartbeat_at > now() - make_interval(secs => ${deadAfterMs / 1000}::float8))`;
/** Queued runs (of `runs`) not being canceled. */
const queuedRun = sql`status = 'queued' and cancel_requested_at is null`;
/** Runs (of `runs`) being canceled. */
const cancelingRun = sql`cancel_requested_at is not null and status in ('queued', 'running')`;
/** Waiting triggers (`triggers t`) whose step (`steps s`) is no longer deferred. */
const unneededWait = sql`t.status = 'waiting' and s.state <> 'deferred'`;

/** Which chores would find something now (see the conditions above). */
export interface ChoresDue {
  readonly retries: boolean;
  readonly zombies: boolean;
  readonly unstarted: boolean;
  /** False when no `deadAfterMs` was given. */
  readonly heldByGone: boolean;
  readonly queuedRuns: boolean;
  readonly canceling: boolean;
  readonly unneededWaits: boolean;
  /** `steps` has grown well past what its planner statistics describe (see staleStatistics). */
  readonly staleStatistics: boolean;
}

/**
 * `steps` has grown by 1 MB at least since Postgres last analysed it (relpages is what the last ANALYZE or VACUUM
 * found), and has doubled, or was analysed while it held less than a row a page. Claims and completions are planned
 * from those statistics: taken before a backfill created its steps, they have every claim sort or scan all the
 * scheduled steps (a claim of 100 among 200 000 new ones took 126 ms instead of 7.5). Autovacuum analyses a large
 * table only after a while, and the embedded database never.
 *
 * Doubling, not a tenth: an analysis costs the database about a fifth of a second of CPU whatever the table's size, and
 * a table of steps grows by its updates too (each step's row is rewritten two or three times), so a tenth came round
 * every few thousand steps on a young database (4–8 % of the database's CPU per step in the execution benchmarks).
 * Less than a row a page: most rows were invisible to the analysis, dead or not yet committed. An analysis that ran
 * while a run's steps were being inserted counts their pages but not their rows, and has the completions planned as
 * over an empty table (W1 ran at a tenth of its speed until the next analysis).
 */
const staleStatistics = sql`exists (
  select 1 from pg_class c, lateral (select pg_relation_size(c.oid) / current_setting('block_size')::int as pages) p
  where c.oid = 'steps'::regclass and p.pages >= c.relpages + 128 and (p.pages >= c.relpages * 2 or c.reltuples < c.relpages))`;

/** Has Postgres analyse the tables whose statistics plan the claims and completions, unless another session does. */
export async function analyzeStepTables(db: Kysely<Database>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // Two reconcilers need not both analyse: the second would only wait for the first and do it again.
    const { rows } = await sql<{ mine: boolean }>`
      select pg_try_advisory_xact_lock(hashtext('tributary.steps.analyze')) as mine`.execute(trx);
    if (rows[0]!.mine) await sql`analyze steps, step_deps`.execute(trx);
  });
}

/**
 * Whether each chore has anything to do, in one read: an idle database costs this statement instead of a
 * transaction per chore. A row that appears after it is found by the next housekeeping, as it would be had it
 * appeared after that chore ran.
 */
export async function choresDue(
  db: Kysely<Database>,
  at: { readonly now: Date; readonly zombieBefore: Date; readonly queuedBefore: Date; readonly deadAfterMs: number | undefined },
): Promise<ChoresDue> {
  const { rows } = await sql<ChoresDue>`
    select exists (select 1 from steps where ${retryDue(at.now)}) as retries,
           exists (select 1 from steps where ${zombie(at.zombieBefore)}) as zombies,
           exists (select 1 from steps where ${unstarted(at.queuedBefore)}) as unstarted,
           ${at.deadAfterMs === undefined ? sql`false` : sql`exists (select 1 from steps s where ${heldByGone(at.deadAfterMs)})`} as "heldByGone",
           exists (select 1 from runs where ${queuedRun}) as "queuedRuns",
           exists (select 1 from runs where ${cancelingRun}) as canceling,
           exists (select 1 from triggers t join steps s on s.id = t.step_id where ${unneededWait}) as "unneededWaits",
           ${staleStatistics} as "staleStatistics"`.execute(db);
  return rows[0]!;
}

/** Retries and reschedules whose time has come become scheduled. Returns the steps moved. */
export async function scheduleDueRetries(trx: Trx, now: Date): Promise<{ id: number }[]> {
  const { rows } = await sql<{ id: number }>`
    update steps set state = 'scheduled', scheduled_at = ${now}, next_retry_at = null, updated_at = ${now}
    where id in (select id from steps where ${retryDue(now)}
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
    where ${zombie(zombieBefore)}
    order by id limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked`.execute(trx);
  return rows;
}

/** Steps handed out before `queuedBefore` and never started, scheduled again. Returns the steps moved. */
export async function requeueUnstarted(trx: Trx, queuedBefore: Date, now: Date): Promise<RequeuedStep[]> {
  const { rows } = await sql<RequeuedStep>`
    update steps set state = 'scheduled', scheduled_at = ${now}, tries_before = tries_before + 1, updated_at = ${now}
    where id in (select id from steps where ${unstarted(queuedBefore)}
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
                 where ${heldByGone(deadAfterMs)}
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

/** Runs being canceled, oldest id first (at most 100). */
export async function cancelingRuns(trx: Trx): Promise<{ id: string }[]> {
  const { rows } = await sql<{ id: string }>`select id from runs where ${cancelingRun} order by id limit 100`.execute(trx);
  return rows;
}

/** Queued runs not being canceled, best first, locked: those waiting for their job's maxActiveRuns. */
export async function lockQueuedRuns(trx: Trx): Promise<{ id: string }[]> {
  const { rows } = await sql<{ id: string }>`
    select id from runs where ${queuedRun}
    order by priority desc, created_at limit 100 for no key update skip locked`.execute(trx);
  return rows;
}

/** Waiting triggers whose step is no longer deferred, canceled. Returns how many. */
export async function cancelUnneededWaits(trx: Trx, now: Date): Promise<bigint | undefined> {
  const result = await sql`
    update triggers set status = 'canceled', ended_at = ${now}, lease_owner = null, lease_expires_at = null,
                        updated_at = ${now}
    where id in (select t.id from triggers t join steps s on s.id = t.step_id
                 where ${unneededWait}
                 order by t.id limit ${HOUSEKEEPING_BATCH}::int for no key update of t skip locked)`.execute(trx);
  return result.numAffectedRows;
}

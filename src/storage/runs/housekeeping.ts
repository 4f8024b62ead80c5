import { sql, type Kysely } from "kysely";
import type { RunDecisions } from "../run-decisions.js";
import { notifyIn } from "../database-handle.js";
import type { Database } from "../database.js";
import type { HousekeepingOptions, HousekeepingResult, StepCompletion } from "../run-store.js";
import { WAKE_CHANNEL } from "./channels.js";
import { completeIn } from "./complete.js";
import { startRun } from "./create-run.js";
import { releaseDeferredPoolSlotsIn } from "./pools.js";
import { requeuedIn } from "./requeue.js";
import { lockRuns } from "./run-counters.js";
import {
  analyzeStepTables,
  cancelingRuns,
  cancelUnneededWaits,
  choresDue,
  lockQueuedRuns,
  lockZombies,
  requeueHeldByGone,
  requeueUnstarted,
  scheduleDueRetries,
  type RequeuedStep,
} from "./sql/housekeeping-batches.js";
import type { Trx } from "./step-rows.js";

export async function housekeeping(
  db: Kysely<Database>,
  options: HousekeepingOptions,
  decisions: RunDecisions,
): Promise<HousekeepingResult> {
  const now = options.now;
  const random = options.random ?? Math.random;
  /** Whether a silence of `ms` can be told apart from the outage the database just came back from. */
  const outlived = (ms: number) => options.reachableSince === undefined || now.getTime() - options.reachableSince.getTime() >= ms;
  // Each chore commits on its own. One transaction for all of them would
  // hold steps, pools and runs from one chore while waiting for locks in
  // the next, and deadlock with claims and completions that take the same
  // rows in the opposite order.
  const chore = <T>(fn: (trx: Trx) => Promise<T>, changed: (result: T) => boolean): Promise<T> =>
    db.transaction().execute(async (trx) => {
      const result = await fn(trx);
      if (changed(result)) await notifyIn(trx, WAKE_CHANNEL, "housekeeping");
      return result;
    });

  const zombieBefore = new Date(now.getTime() - options.zombieAfterMs);
  const queuedBefore = new Date(now.getTime() - options.queuedTimeoutMs);
  const deadAfterMs = options.holderDeadAfterMs;
  // One read says which chores have anything to do: idle, housekeeping costs that statement alone.
  const due = await choresDue(db, { now, zombieBefore, queuedBefore, deadAfterMs });

  // Retries whose delay has passed become runnable again.
  const retriesDue = !due.retries
    ? 0
    : await chore(
        async (trx) => (await scheduleDueRetries(trx, now)).length,
        (n) => n > 0,
      );

  // Zombies: running steps nobody has heard from. Their try fails as an infrastructure failure: the worker or its
  // host is gone, whatever the step's code was doing (it may have run to the end and not been able to say so).
  const zombies =
    !due.zombies || !outlived(options.zombieAfterMs)
      ? 0
      : await chore(
          async (trx) => {
            const rows = await lockZombies(trx, zombieBefore);
            if (rows.length > 0) {
              await completeIn(
                trx,
                rows.map((z): StepCompletion => ({
                  stepId: Number(z.id),
                  tryNumber: z.try_number,
                  startedAt: null,
                  endedAt: now,
                  workerId: z.worker_id,
                  logRef: null,
                  outcome: "failed",
                  retryable: true,
                  failureClass: "infrastructure",
                  error: {
                    name: "ZombieStep",
                    code: "STEP_ZOMBIE",
                    message:
                      `no heartbeat from worker ${z.worker_id ?? "(unknown)"} for more than ${Math.round(options.zombieAfterMs / 1000)} s ` +
                      `(last at ${z.heartbeat_at?.toISOString() ?? "never"}): the worker process or its host is presumed dead`,
                  },
                })),
                now,
                decisions,
                random,
              );
            }
            return rows.length;
          },
          () => false, // completeIn notifies
        );

  // Handed out but never started (the executor or the queue lost it): hand it out again. The try is an
  // infrastructure failure that uses up neither budget: nothing of the step's code ran.
  const requeued =
    !due.unstarted || !outlived(options.queuedTimeoutMs)
      ? 0
      : await chore(
          async (trx) => {
            const stuck = await requeueUnstarted(trx, queuedBefore, now);
            await requeuedIn(trx, stuck, now, {
              name: "QueuedTimeout",
              code: "STEP_QUEUED_TIMEOUT",
              message: `not started within ${Math.round(options.queuedTimeoutMs / 1000)} s of being handed out; handed out again`,
            });
            return stuck.length;
          },
          (n) => n > 0,
        );

  // Held by a reconciler that died (or stopped) before starting them: hand them out again now, not at the queued
  // timeout. Like a queued timeout, nothing of the step's code ran, so neither budget is used.
  const holderLost =
    deadAfterMs === undefined || !due.heldByGone || !outlived(deadAfterMs)
      ? 0
      : await chore(
          async (trx) => {
            const lost = await requeueHeldByGone(trx, deadAfterMs, now);
            const byHolder = new Map<string, RequeuedStep[]>();
            for (const s of lost) {
              const steps = byHolder.get(s.holder);
              if (steps) steps.push(s);
              else byHolder.set(s.holder, [s]);
            }
            for (const [holder, steps] of byHolder) {
              await requeuedIn(trx, steps, now, {
                name: "HolderLost",
                code: "STEP_RECONCILER_LOST",
                message: `reconciler ${holder}, which claimed it to start it in its own process, stopped or has not heartbeated for ${Math.round(deadAfterMs / 1000)} s; handed out again`,
              });
            }
            return lost.length;
          },
          (n) => n > 0,
        );

  // Runs waiting for their job's maxActiveRuns.
  const runsStarted = !due.queuedRuns
    ? 0
    : await chore(
        async (trx) => {
          const queuedRuns = await lockQueuedRuns(trx);
          let started = 0;
          for (const r of queuedRuns) if (await startRun(trx, r.id, now)) started++;
          return started;
        },
        (n) => n > 0,
      );

  // Cancellation: unstarted steps are skipped, active ones are aborted by
  // their executor. Steps are locked before their runs (in id order), as
  // completions do; doing it twice at once is harmless.
  const { runsCanceled, toAbort } = !due.canceling
    ? { runsCanceled: 0, toAbort: [] }
    : await chore(
        async (trx) => {
          const canceling = await cancelingRuns(trx);
          const toAbort: { stepId: number; executor: string }[] = [];
          if (canceling.length === 0) return { runsCanceled: 0, toAbort };
          const runIds = canceling.map((r) => r.id);
          const { rows: deferred } = await sql<{ id: string }>`
        select id from steps where run_id = any(${runIds}::uuid[]) and state = 'deferred' order by id for no key update`.execute(trx);
          await releaseDeferredPoolSlotsIn(
            trx,
            deferred.map((r) => Number(r.id)),
          );
          const skipped = await sql<{ run_id: string; n: number }>`
        with locked as (
          select id from steps
          where run_id = any(${runIds}::uuid[]) and state in ('pending', 'scheduled', 'up_for_retry', 'up_for_reschedule', 'deferred')
          order by id for no key update
        ), s as (
          update steps set state = 'skipped', skip_reason = 'run canceled', ended_at = ${now}, next_retry_at = null,
                           updated_at = ${now}
          where id in (select id from locked)
            and state in ('pending', 'scheduled', 'up_for_retry', 'up_for_reschedule', 'deferred')
          returning run_id
        ) select run_id, count(*)::int as n from s group by run_id`.execute(trx);
          await lockRuns(trx, runIds);
          for (const s of skipped.rows) {
            await trx
              .updateTable("runs")
              .set((eb) => ({ steps_done: eb("steps_done", "+", s.n), updated_at: now }))
              .where("id", "=", s.run_id)
              .execute();
          }
          const active = await sql<{ id: number; executor: string }>`
        select id, executor from steps where run_id = any(${runIds}::uuid[]) and state in ('queued', 'running')`.execute(trx);
          for (const a of active.rows) toAbort.push({ stepId: Number(a.id), executor: a.executor });
          const done = await sql<{ id: string }>`
        update runs set status = 'canceled', ended_at = ${now}, updated_at = ${now}
        where id = any(${runIds}::uuid[]) and status in ('queued', 'running') and steps_active = 0
          and not exists (select 1 from steps where steps.run_id = runs.id and steps.state in ('queued', 'running'))
        returning id`.execute(trx);
          return { runsCanceled: done.rows.length, toAbort };
        },
        (r) => r.runsCanceled > 0,
      );

  // Waits nobody needs any more (their step was canceled or cleared meanwhile): stop checking them. Triggers are
  // locked before steps are read, as the trigger store does, and steps are only read.
  if (due.unneededWaits)
    await chore(
      (trx) => cancelUnneededWaits(trx, now),
      () => false,
    );

  if (due.staleStatistics) await analyzeStepTables(db);

  return { retriesDue, zombies, requeued, holderLost, runsStarted, toAbort, runsCanceled };
}

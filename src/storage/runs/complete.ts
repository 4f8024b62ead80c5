import { sql } from "kysely";
import type { FailureClass, SerializedError } from "../../errors/index.js";
import { notifyIn } from "../database-handle.js";
import type { StepState } from "../database.js";
import { toJson } from "../json.js";
import type { RunDecisions } from "../run-decisions.js";
import type { ClaimedStep, CompletionSummary, FollowUp, StepCompletion } from "../run-store.js";
import { WAKE_CHANNEL } from "./channels.js";
import { recordCheckResults } from "./check-results.js";
import { claimIn } from "./claim.js";
import { recordMaterializations, uniqueInputs } from "./materializations.js";
import { countDownExpanded, expandSteps } from "./mapped-steps.js";
import { addOccupied, lockPoolsOf, slotsPerPool, type LockedPool } from "./pools.js";
import { propagate, scheduleRunnable } from "./propagate.js";
import { recordFailures } from "./record-failures.js";
import { retryOrFail } from "./retries.js";
import { updateRunCounters } from "./run-counters.js";
import { createStepTriggers } from "./step-triggers.js";
import { ACTIVE, isTerminalState, WAITING_AGAIN, type LockedStep, type StepChange, type Trx } from "./step-rows.js";

/**
 * completeSteps inside the caller's transaction (the trigger store ends timed-out
 * deferred steps in the same transaction that marks their triggers).
 */
export async function completeStepsIn(
  trx: Trx,
  completions: readonly StepCompletion[],
  now: Date,
  decisions: RunDecisions,
  random: () => number = Math.random,
): Promise<CompletionSummary> {
  if (completions.length === 0) return { applied: 0, ignored: [], scheduled: 0, finishedRuns: [], claimed: [] };
  return completeIn(trx, completions, now, decisions, random);
}

export async function completeIn(
  trx: Trx,
  completions: readonly StepCompletion[],
  now: Date,
  decisions: RunDecisions,
  random: () => number,
  followUp?: FollowUp,
): Promise<CompletionSummary> {
  const ids = [...new Set(completions.map((c) => c.stepId))].sort((a, b) => a - b);
  const locked = await sql<LockedStep>`
    select s.id, s.run_id, s.state, s.try_number, s.tries_before, s.infrastructure_failures, s.retry_policy, s.pool, s.pool_slots, s.asset_key,
           s.partition_key, s.map_index, s.check_name, (r.cancel_requested_at is not null) as cancel_requested
    from steps s join runs r on r.id = s.run_id
    where s.id = any(${ids}::bigint[]) order by s.id for no key update of s`.execute(trx);
  const byId = new Map(locked.rows.map((r) => [Number(r.id), { ...r, id: Number(r.id) }]));

  const ignored: { stepId: number; tryNumber: number; reason: string }[] = [];
  const applied: Applied[] = [];
  const claimedTwice = new Set<number>();
  for (const c of completions) {
    const step = byId.get(c.stepId);
    if (!step) {
      ignored.push({ stepId: c.stepId, tryNumber: c.tryNumber, reason: "no such step" });
      continue;
    }
    // A deferred step ends without a worker only when its trigger store says so (timeout).
    const expected: readonly StepState[] =
      c.deferred === true ? ["deferred"] : c.outcome === "removed" ? [...ACTIVE, "scheduled", "pending"] : ACTIVE;
    if (step.try_number !== c.tryNumber || !expected.includes(step.state) || claimedTwice.has(c.stepId)) {
      ignored.push({
        stepId: c.stepId,
        tryNumber: c.tryNumber,
        reason: `step is at try ${step.try_number} in state ${step.state}: a report for try ${c.tryNumber} is stale`,
      });
      continue;
    }
    claimedTwice.add(c.stepId);
    let state: StepState;
    let nextRetryAt: Date | null = null;
    let infrastructureRerun = false;
    let stepError: SerializedError | undefined;
    if (c.outcome === "success") state = "success";
    else if (c.outcome === "deferred") state = "deferred";
    else if (c.outcome === "rescheduled") {
      state = "up_for_reschedule";
      nextRetryAt = c.nextCheckAt;
    } else if (c.outcome === "skipped") state = "skipped";
    else if (c.outcome === "removed") state = "removed";
    else if (c.outcome === "check") state = c.passed || !c.check.blocking ? "success" : "failed";
    // Fanned out: the step waits for its mapped steps (created below), then gathers their outputs.
    else if (c.outcome === "expanded") state = "pending";
    else if (c.outcome === "released" && step.state === "queued") state = "scheduled";
    else {
      // Failed, or released after it started (the executor stopped while the try ran): an infrastructure failure.
      ({ state, nextRetryAt, infrastructureRerun, stepError } = retryOrFail(
        step,
        c.outcome === "released"
          ? { tryNumber: c.tryNumber, retryable: true, failureClass: "infrastructure", error: c.error }
          : { tryNumber: c.tryNumber, retryable: c.retryable, failureClass: c.failureClass, error: c.error },
        now,
        random,
        decisions,
      ));
    }
    applied.push({ c, step, state, nextRetryAt, wasActive: ACTIVE.includes(step.state), infrastructureRerun, stepError });
  }
  if (applied.length === 0) return { applied: 0, ignored, scheduled: 0, finishedRuns: [], claimed: [] };

  // Before the steps are updated: a second update of a row this transaction already updated re-checks its
  // foreign key, which would lock the run (KEY SHARE) ahead of the pools and deadlock with claims.
  const triggerOf = await createStepTriggers(trx, applied, now);
  const stepUpdates = applied.map(({ c, step, state, nextRetryAt, infrastructureRerun, stepError }) => ({
    id: c.stepId,
    state,
    ended_at: WAITING_AGAIN.includes(state) ? null : c.endedAt.toISOString(),
    next_retry_at: nextRetryAt?.toISOString() ?? null,
    error: stepError ?? errorOf(c, step),
    // Released unstarted, deferred, rescheduled, or an infrastructure failure re-run on its own budget: the try does
    // not count against the retry policy.
    not_counted: state === "scheduled" || state === "deferred" || state === "up_for_reschedule" || infrastructureRerun,
    infrastructure_rerun: infrastructureRerun,
    wait_started_at: c.outcome === "rescheduled" ? c.waitStartedAt.toISOString() : null,
    trigger_id: triggerOf.get(c.stepId) ?? null,
    skip_reason: c.outcome === "skipped" || c.outcome === "removed" ? c.reason : null,
    worker_id: c.workerId,
    started_at: c.startedAt?.toISOString() ?? null,
    map_count: c.outcome === "expanded" ? c.count : null,
    map_open: c.outcome === "expanded" ? c.count : null,
    map_inputs: c.outcome === "expanded" ? { codeVersion: c.codeVersion, inputs: uniqueInputs(c.inputs) } : null,
  }));
  await sql`
    update steps set state = x.state, ended_at = x.ended_at, next_retry_at = x.next_retry_at, error = x.error,
                     skip_reason = x.skip_reason, worker_id = coalesce(x.worker_id, steps.worker_id),
                     started_at = coalesce(steps.started_at, x.started_at), heartbeat_at = null, updated_at = ${now},
                     tries_before = steps.tries_before + (case when x.not_counted then 1 else 0 end),
                     infrastructure_failures = steps.infrastructure_failures + (case when x.infrastructure_rerun then 1 else 0 end),
                     scheduled_at = case when x.state = 'scheduled' then ${now}::timestamptz else steps.scheduled_at end,
                     wait_started_at = x.wait_started_at, trigger_id = coalesce(x.trigger_id, steps.trigger_id),
                     map_count = coalesce(x.map_count, steps.map_count), map_open = coalesce(x.map_open, steps.map_open),
                     map_inputs = coalesce(x.map_inputs, steps.map_inputs)
    from jsonb_to_recordset(${toJson(stepUpdates)}::jsonb)
      as x(id bigint, state text, ended_at timestamptz, next_retry_at timestamptz, error jsonb, not_counted boolean,
           infrastructure_rerun boolean,
           skip_reason text, worker_id text, started_at timestamptz, wait_started_at timestamptz, trigger_id bigint,
           map_count int, map_open int, map_inputs jsonb)
    where steps.id = x.id`.execute(trx);

  const tryUpdates = applied
    .filter((a) => a.wasActive)
    .map(({ c, step, state }) => ({
      step_id: c.stepId,
      try_number: c.tryNumber,
      state:
        c.outcome === "released"
          ? "failed"
          : c.outcome === "rescheduled"
            ? "up_for_reschedule"
            : c.outcome === "check"
              ? state
              : c.outcome === "expanded"
                ? "success"
                : c.outcome,
      ended_at: c.endedAt.toISOString(),
      started_at: c.startedAt?.toISOString() ?? null,
      error: errorOf(c, step),
      failure_class: failureClassOf(c, state),
      log_ref: c.logRef,
      worker_id: c.workerId,
      hostname: c.hostname ?? null,
      pid: c.pid ?? null,
    }));
  await sql`
    update step_tries t set state = x.state, ended_at = x.ended_at, started_at = coalesce(t.started_at, x.started_at),
           duration_ms = greatest(0, (extract(epoch from (x.ended_at - coalesce(t.started_at, x.started_at, x.ended_at))) * 1000)::bigint),
           error = x.error, failure_class = x.failure_class, log_ref = coalesce(x.log_ref, t.log_ref),
           worker_id = coalesce(t.worker_id, x.worker_id), hostname = coalesce(t.hostname, x.hostname), pid = coalesce(t.pid, x.pid)
    from jsonb_to_recordset(${toJson(tryUpdates)}::jsonb)
      as x(step_id bigint, try_number int, state text, ended_at timestamptz, started_at timestamptz, error jsonb,
           failure_class text, log_ref text, worker_id text, hostname text, pid int)
    where t.step_id = x.step_id and t.try_number = x.try_number`.execute(trx);

  await recordMaterializations(trx, applied, now);
  // A check's step that ended (with a verdict, or failing to reach one) is a check result, never a failed
  // materialisation of its partition.
  await recordCheckResults(
    trx,
    applied.filter((a) => a.step.check_name !== null && isTerminalState(a.state)),
    now,
  );
  await recordFailures(
    trx,
    applied.filter((a) => a.state === "failed" && a.step.check_name === null),
    now,
  );
  const expansion = await expandSteps(
    trx,
    applied.filter((a) => a.c.outcome === "expanded"),
    now,
  );

  const changes: StepChange[] = applied.map((a) => ({
    id: a.step.id,
    run_id: a.step.run_id,
    state: a.state,
    wasActive: a.wasActive,
    pool: a.step.pool,
    pool_slots: a.step.pool_slots,
  }));
  // Mapped steps that ended count down their expanded step (which gathers them) instead of being propagated
  // one edge at a time: it is judged once they all ended, or at once when one did not succeed.
  const ended = applied.filter((a) => isTerminalState(a.state));
  const isMapped = (a: { step: LockedStep }) => a.step.map_index >= 0 && a.step.check_name === null;
  // With a follow-up claim, the steps these results make runnable stay pending until it has taken those it can:
  // a step handed out at once goes from pending to queued in one write.
  const handingOut = followUp !== undefined && followUp.limit > 0;
  const { scheduled, cascaded } = await propagate(
    trx,
    changes.filter((c, i) => isTerminalState(c.state) && !isMapped(applied[i]!)),
    now,
    decisions,
    await countDownExpanded(
      trx,
      ended.filter(isMapped).map((a) => ({ step: a.step, state: a.state })),
      now,
    ),
    { holdRunnable: handingOut },
  );
  // Pool and run rows are shared by every transaction that moves steps: they
  // are touched last, so their locks are held only until the commit. Every
  // pool this transaction will touch (the finished steps' and the follow-up's)
  // is locked at once, in name order: locking the released pools and then the
  // follow-up's could deadlock with another completion doing the same the
  // other way round.
  const followUpIds = handingOut ? [...scheduled, ...expansion.scheduled] : [];
  const pools =
    applied.length > 0 || followUpIds.length > 0
      ? await lockPoolsOf(
          trx,
          applied.map((a) => a.step.pool),
          followUpIds,
        )
      : new Map<string, LockedPool>();
  // A deferred step keeps its pool slot where the pool counts deferred steps, until the wait ends.
  const holds = (pool: string) => pools.get(pool)?.includeDeferred === true;
  const released = slotsPerPool(
    applied
      .filter((a) => (a.wasActive ? !(a.state === "deferred" && holds(a.step.pool)) : a.c.deferred === true && holds(a.step.pool)))
      .map((a) => ({ pool: a.step.pool, slots: a.step.pool_slots })),
  );
  await addOccupied(trx, released, -1);
  // The mini-scheduler: hand the steps these results made runnable straight
  // back to the executor that reported them, without a reconciler round trip.
  let claimed: ClaimedStep[] = [];
  if (followUp && handingOut && followUpIds.length > 0) {
    const poolFree = new Map([...pools].map(([name, p]) => [name, p.slots - Math.max(0, p.occupied - (released.get(name) ?? 0))] as const));
    ({ steps: claimed } = await claimIn(trx, {
      kindNames: [followUp.executor],
      capacity: new Map([[followUp.executor, followUp.limit]]),
      limit: followUp.limit,
      agingLimit: 0,
      now,
      defaultPoolSlots: followUp.defaultPoolSlots ?? 16,
      onlyIds: followUpIds,
      pendingRunnable: scheduled,
      lockedPools: poolFree,
      ...(followUp.holder ? { holder: { id: followUp.holder, kinds: [followUp.executor] } } : {}),
    }));
  }
  if (handingOut) {
    const handedOut = new Set(claimed.map((c) => c.stepId));
    await scheduleRunnable(
      trx,
      scheduled.filter((id) => !handedOut.has(id)),
      now,
    );
  }
  const finishedRuns = await updateRunCounters(trx, [...changes, ...cascaded], now, expansion.adjust);
  // Always: finished steps also free executor and pool slots that scheduled steps wait for.
  await notifyIn(trx, WAKE_CHANNEL, "steps");
  return { applied: applied.length, ignored, scheduled: scheduled.length + expansion.scheduled.length, finishedRuns, claimed };
}

interface Applied {
  c: StepCompletion;
  step: LockedStep;
  state: StepState;
  nextRetryAt: Date | null;
  wasActive: boolean;
  infrastructureRerun: boolean;
  /** The step's error when it is not the try's (see RetryOutcome.stepError). */
  stepError: SerializedError | undefined;
}

/** Whose fault the try's failure was (a released try was handed back by an executor that stopped); null when it did not fail. */
function failureClassOf(c: StepCompletion, state: StepState): FailureClass | null {
  if (c.outcome === "failed") return c.failureClass;
  if (c.outcome === "released") return "infrastructure";
  if (c.outcome === "check" && state === "failed") return "user";
  return null;
}

export function errorOf(c: StepCompletion, step: LockedStep): SerializedError | null {
  if (c.outcome === "check") {
    if (c.passed || !c.check.blocking) return null;
    const why = c.error ? `: it threw ${c.error.message}` : "";
    return {
      name: "CheckFailed",
      code: "CHECK_FAILED",
      message: `blocking check "${c.check.name}" of asset "${step.asset_key}" failed on ${step.partition_key ? `partition "${step.partition_key}"` : "the asset"}${why}`,
      ...(c.error ? { cause: c.error } : {}),
    };
  }
  return c.outcome === "failed" || c.outcome === "released" ? c.error : null;
}

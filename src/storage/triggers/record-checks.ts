import { sql } from "kysely";
import type { SerializedError } from "../../errors/index.js";
import { notifyIn } from "../database-handle.js";
import { toJson, type JsonValue } from "../json.js";
import { recordObservationsIn } from "../pg-observation-store.js";
import type { RunDecisions } from "../run-decisions.js";
import { WAKE_CHANNEL } from "../runs/channels.js";
import { releaseDeferredPoolSlotsIn } from "../runs/pools.js";
import type { RecordChecksResult, TriggerCheckResult } from "../trigger-store.js";
import { describeStep, endDeferredSteps, lockDeferredSteps, stepLocation } from "./deferred-steps.js";
import { triggerBackoffMs } from "./trigger-backoff.js";
import { ending, observationOf, type Ending, type HeldTrigger, type Trx } from "./trigger-rows.js";

/**
 * Applies the check results of triggers `owner` still leases and that still
 * wait: a wait or a failed check (with backoff) sets the next check, a fire
 * or a permanent failure ends the trigger and what waited on it.
 */
export async function recordChecksIn(
  trx: Trx,
  decisions: RunDecisions,
  owner: string,
  results: readonly TriggerCheckResult[],
  now: Date,
): Promise<RecordChecksResult> {
  const ids = [...new Set(results.map((r) => r.triggerId))].sort((a, b) => a - b);
  const { rows: held } = await sql<HeldTrigger & { error: { consecutiveFailures?: number } | null }>`
    select id, kind, step_id, asset_key, partition_key, error from triggers
    where id = any(${ids}::bigint[]) and status = 'waiting' and lease_owner = ${owner}
    order by id for no key update`.execute(trx);
  const heldById = new Map(held.map((r) => [Number(r.id), r]));
  const ignored: number[] = [];
  const seen = new Set<number>();
  const waits: { id: number; checks: number; last_result: JsonValue | null; next_check_at: string; error: JsonValue | null }[] = [];
  const fires: Ending<{ checks: number; payload: JsonValue }>[] = [];
  const failures: Ending<{ checks: number; error: SerializedError }>[] = [];
  for (const r of results) {
    const row = heldById.get(r.triggerId);
    // A takeover wins; a second result for one trigger in a batch is dropped.
    if (!row || seen.has(r.triggerId)) {
      ignored.push(r.triggerId);
      continue;
    }
    seen.add(r.triggerId);
    if (r.outcome === "fired") {
      fires.push({ ...ending(row), checks: r.checks ?? 1, payload: r.payload });
    } else if (r.outcome === "failed") {
      failures.push({ ...ending(row), checks: r.checks ?? 1, error: r.error });
    } else if (r.outcome === "waiting") {
      waits.push({
        id: r.triggerId,
        checks: r.checks ?? 1,
        last_result: r.result ?? null,
        next_check_at: new Date(now.getTime() + r.pollIntervalMs).toISOString(),
        error: null,
      });
    } else {
      const consecutive = (row.error?.consecutiveFailures ?? 0) + 1;
      waits.push({
        id: r.triggerId,
        checks: r.checks ?? 1,
        last_result: { error: r.error.message },
        next_check_at: new Date(now.getTime() + triggerBackoffMs(r.pollIntervalMs, consecutive)).toISOString(),
        error: { ...r.error, consecutiveFailures: consecutive } as unknown as JsonValue,
      });
    }
  }
  if (waits.length > 0) {
    await sql`
      update triggers t set attempts = t.attempts + x.checks, last_checked_at = ${now}, last_result = x.last_result,
             next_check_at = x.next_check_at, error = x.error, updated_at = ${now}
      from jsonb_to_recordset(${toJson(waits)}::jsonb)
        as x(id bigint, checks int, last_result jsonb, next_check_at timestamptz, error jsonb)
      where t.id = x.id`.execute(trx);
  }
  const { canceled, scheduledSteps } = await fire(trx, fires, now);
  const failedSteps = await fail(trx, decisions, failures, now);
  return {
    applied: waits.length + fires.length + failures.length,
    ignored,
    fired: fires.map((f) => f.id).filter((id) => !canceled.includes(id)),
    canceled,
    scheduledSteps,
    failed: failures.map((f) => f.id),
    failedSteps,
  };
}

/**
 * Fired triggers: each deferred step goes back to `scheduled` (its trigger_id
 * points at the trigger holding the payload), gives back a pool slot it held
 * while deferred, and the reconcilers are woken; an observation trigger
 * records its source partition's observation. A step that is no longer
 * deferred (its run was canceled meanwhile) leaves its trigger `canceled` and
 * nothing else changes.
 */
async function fire(
  trx: Trx,
  fires: readonly Ending<{ checks: number; payload: JsonValue }>[],
  now: Date,
): Promise<{ canceled: number[]; scheduledSteps: number[] }> {
  if (fires.length === 0) return { canceled: [], scheduledSteps: [] };
  const stillDeferred = new Set((await lockDeferredSteps(trx, fires)).map((s) => s.id));
  const canceled = fires.filter((f) => f.stepId !== null && !stillDeferred.has(f.stepId)).map((f) => f.id);
  const canceledSet = new Set(canceled);
  const updates = fires.map((f) => ({
    id: f.id,
    checks: f.checks,
    status: canceledSet.has(f.id) ? "canceled" : "fired",
    payload: canceledSet.has(f.id) ? null : f.payload,
  }));
  await sql`
    update triggers t set status = x.status, payload = x.payload, ended_at = ${now}, last_checked_at = ${now},
           attempts = t.attempts + x.checks, lease_owner = null, lease_expires_at = null, updated_at = ${now}
    from jsonb_to_recordset(${toJson(updates)}::jsonb) as x(id bigint, checks int, status text, payload jsonb)
    where t.id = x.id`.execute(trx);
  const observations = fires.filter((f) => f.stepId === null).map((f) => ({ ...observationOf(f), payload: f.payload }));
  if (observations.length > 0) await recordObservationsIn(trx, observations, now);
  const links = fires
    .filter((f) => f.stepId !== null && stillDeferred.has(f.stepId))
    .map((f) => ({ step_id: f.stepId!, trigger_id: f.id }));
  if (links.length > 0) {
    await releaseDeferredPoolSlotsIn(
      trx,
      links.map((l) => l.step_id),
    );
    await sql`
      update steps set state = 'scheduled', scheduled_at = ${now}, trigger_id = x.trigger_id, next_retry_at = null,
             updated_at = ${now}
      from jsonb_to_recordset(${toJson(links)}::jsonb) as x(step_id bigint, trigger_id bigint)
      where steps.id = x.step_id and steps.state = 'deferred'`.execute(trx);
    await notifyIn(trx, WAKE_CHANNEL, "trigger");
  }
  return { canceled, scheduledSteps: links.map((l) => l.step_id) };
}

/**
 * Triggers that can never be checked (unknown kind, invalid args or
 * template) end `failed`, and their deferred steps fail for good with the
 * error, which then names the step's asset and partition. Returns the failed steps.
 */
async function fail(
  trx: Trx,
  decisions: RunDecisions,
  failures: readonly Ending<{ checks: number; error: SerializedError }>[],
  now: Date,
): Promise<number[]> {
  if (failures.length === 0) return [];
  const updates = failures.map((f) => ({ id: f.id, checks: f.checks, error: f.error, last_result: { error: f.error.message } }));
  await sql`
    update triggers t set status = 'failed', error = x.error, last_result = x.last_result, ended_at = ${now},
           last_checked_at = ${now}, attempts = t.attempts + x.checks, lease_owner = null, lease_expires_at = null, updated_at = ${now}
    from jsonb_to_recordset(${toJson(updates)}::jsonb) as x(id bigint, checks int, error jsonb, last_result jsonb)
    where t.id = x.id`.execute(trx);
  const failedSteps: number[] = [];
  await endDeferredSteps(trx, decisions, failures, now, (step, trigger) => {
    failedSteps.push(step.id);
    const error: SerializedError = {
      ...trigger.error,
      message: `${describeStep(step)} cannot wait on its "${trigger.kind}" trigger (id ${trigger.id}): ${trigger.error.message}`,
      location: { ...trigger.error.location, ...stepLocation(step) },
    };
    return { outcome: "failed", error, retryable: false, failureClass: "user" };
  });
  return failedSteps;
}

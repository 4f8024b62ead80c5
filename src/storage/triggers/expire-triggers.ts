import type { SerializedError } from "../../errors/index.js";
import { recordObservationTimeoutsIn } from "../pg-observation-store.js";
import type { RunDecisions } from "../run-decisions.js";
import type { ExpireResult } from "../trigger-store.js";
import { describeStep, endDeferredSteps, stepLocation } from "./deferred-steps.js";
import { timeOutDueTriggers } from "./sql/due-triggers.js";
import { ending, observationOf, type Trx } from "./trigger-rows.js";

/** How many triggers one expiry ends at the most. */
export const EXPIRE_BATCH = 1000;

/**
 * Up to `limit` waiting triggers past their timeout end `timed_out`: a source
 * partition records its timeout, a deferred step fails (TRIGGER_TIMED_OUT)
 * or, with softFail, is skipped.
 */
export async function expireIn(trx: Trx, decisions: RunDecisions, now: Date, limit: number): Promise<ExpireResult> {
  const rows = await timeOutDueTriggers(trx, now, limit);
  if (rows.length === 0) return { timedOut: [], failedSteps: [], skippedSteps: [] };
  const ended = rows.map((r) => ({ ...ending(r), softFail: r.soft_fail }));
  const observations = ended.filter((t) => t.stepId === null).map(observationOf);
  if (observations.length > 0) await recordObservationTimeoutsIn(trx, observations, now);
  const failedSteps: number[] = [];
  const skippedSteps: number[] = [];
  await endDeferredSteps(trx, decisions, ended, now, (step, trigger) => {
    const message =
      `${describeStep(step)} waited on a "${trigger.kind}" trigger (id ${trigger.id}) past its timeout; ` +
      `check that the awaited data arrives, or raise the wait's timeout`;
    if (trigger.softFail) {
      skippedSteps.push(step.id);
      return { outcome: "skipped", reason: `trigger timed out (softFail): ${message}` };
    }
    failedSteps.push(step.id);
    const error: SerializedError = { name: "TriggerTimeoutError", code: "TRIGGER_TIMED_OUT", message, location: stepLocation(step) };
    return { outcome: "failed", error, retryable: false, failureClass: "user" };
  });
  return { timedOut: rows.map((r) => Number(r.id)), failedSteps, skippedSteps };
}

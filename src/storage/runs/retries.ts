import type { RunDecisions } from "../run-decisions.js";
import type { LockedStep } from "./step-rows.js";

/**
 * A try that failed (or was released after it started): the step is up for retry when the failure is
 * retryable, its run is not being canceled and its retry policy has tries left; otherwise it failed.
 */
export function retryOrFail(
  step: Pick<LockedStep, "retry_policy" | "tries_before" | "cancel_requested">,
  tryNumber: number,
  retryable: boolean,
  now: Date,
  random: () => number,
  decisions: Pick<RunDecisions, "shouldRetry" | "retryDelayMs">,
): { state: "up_for_retry" | "failed"; nextRetryAt: Date | null } {
  const policy = step.retry_policy;
  const retry = retryable && !step.cancel_requested && policy !== null && decisions.shouldRetry(policy, tryNumber, step.tries_before);
  if (!retry) return { state: "failed", nextRetryAt: null };
  return {
    state: "up_for_retry",
    nextRetryAt: new Date(now.getTime() + decisions.retryDelayMs(policy, tryNumber - step.tries_before, random)),
  };
}

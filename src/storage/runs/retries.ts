import type { FailureClass, SerializedError } from "../../errors/index.js";
import type { RunDecisions } from "../run-decisions.js";
import type { LockedStep } from "./step-rows.js";

/** What a failed try (or one released after it started) leaves its step in. */
export interface RetryOutcome {
  readonly state: "up_for_retry" | "failed";
  readonly nextRetryAt: Date | null;
  /** Re-run on the infrastructure budget: the try counts in `infrastructure_failures` and not against the asset's retries. */
  readonly infrastructureRerun: boolean;
  /** The step's error when it is not the try's own: the infrastructure budget is spent. */
  readonly stepError?: SerializedError;
}

/**
 * Applies the retry decision to a failed try: the step is up for retry when the decision says so (a user failure
 * under the asset's retry policy, an infrastructure failure under the infrastructure budget), otherwise it failed.
 */
export function retryOrFail(
  step: Pick<LockedStep, "retry_policy" | "tries_before" | "infrastructure_failures" | "cancel_requested">,
  failure: {
    readonly tryNumber: number;
    readonly retryable: boolean;
    readonly failureClass: FailureClass;
    readonly error: SerializedError | null;
  },
  now: Date,
  random: () => number,
  decisions: Pick<RunDecisions, "retry">,
): RetryOutcome {
  const verdict = decisions.retry(
    {
      tryNumber: failure.tryNumber,
      failureClass: failure.failureClass,
      retryable: failure.retryable,
      policy: step.retry_policy,
      triesBefore: step.tries_before,
      infrastructureFailures: step.infrastructure_failures,
      canceled: step.cancel_requested,
    },
    random,
  );
  if (verdict.retry) {
    return {
      state: "up_for_retry",
      nextRetryAt: new Date(now.getTime() + verdict.delayMs),
      infrastructureRerun: verdict.budget === "infrastructure",
    };
  }
  if (verdict.why !== "infrastructure_retries_spent") return { state: "failed", nextRetryAt: null, infrastructureRerun: false };
  return { state: "failed", nextRetryAt: null, infrastructureRerun: false, stepError: budgetSpentError(verdict.max, failure.error) };
}

/** The error of a step whose infrastructure retry budget is spent, naming the last infrastructure failure. */
function budgetSpentError(max: number, last: SerializedError | null): SerializedError {
  const cause = last ? `[${last.code}] ${last.message}` : "(no error recorded)";
  const budget =
    max === 0
      ? "infrastructure failures are not re-run (TRIBUTARY_INFRASTRUCTURE_RETRIES is 0)"
      : `the step was re-run ${max} time${max === 1 ? "" : "s"} after infrastructure failures, the budget TRIBUTARY_INFRASTRUCTURE_RETRIES allows`;
  return {
    name: "InfrastructureRetriesExhausted",
    code: "INFRASTRUCTURE_RETRIES_EXHAUSTED",
    message:
      `${budget}, and failed again for a reason that is not the asset's code: ${cause}. ` +
      `Fix what keeps failing (workers, the execution API, the database, the output store), then clear the partition to run it again`,
    ...(last?.location ? { location: last.location } : {}),
    ...(last ? { cause: last } : {}),
  };
}

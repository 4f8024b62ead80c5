import type { FailureClass } from "../errors/index.js";
import type { RetryPolicySpec, TriggerDecision, TriggerRule, UpstreamCounts } from "../sdk/index.js";

/** A try that just failed, as the retry decision sees it (the planner's FailedTry). */
export interface FailedTryFacts {
  readonly tryNumber: number;
  readonly failureClass: FailureClass;
  readonly retryable: boolean;
  readonly policy: RetryPolicySpec | null;
  /** The step's `tries_before`: tries that do not count against `policy`. */
  readonly triesBefore: number;
  /** The step's `infrastructure_failures`: infrastructure failures re-run since its last clear. */
  readonly infrastructureFailures: number;
  readonly canceled: boolean;
}

/** Whether a failed try's step runs again (the planner's RetryDecision). */
export type RetryVerdict =
  | { readonly retry: true; readonly delayMs: number; readonly budget: FailureClass }
  | { readonly retry: false; readonly why: "canceled" | "not_retryable" | "retries_spent" }
  | { readonly retry: false; readonly why: "infrastructure_retries_spent"; readonly max: number };

/**
 * The decisions a run's transactions apply but do not make: whether a pending step's trigger rule is met, and
 * whether and when a failed try is retried. The planner makes them (pure functions); the composition root hands
 * them to the stores, so storage depends on nothing above it.
 */
export interface RunDecisions {
  /** A pending step's trigger rule, judged on how its upstream steps ended so far. */
  readonly triggerRule: (rule: TriggerRule, counts: UpstreamCounts) => TriggerDecision;
  /**
   * Whether and when a failed try's step runs again: a user failure under the asset's retry policy, an
   * infrastructure failure under the infrastructure budget.
   */
  readonly retry: (failed: FailedTryFacts, random: () => number) => RetryVerdict;
}

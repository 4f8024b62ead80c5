import type { FailedTry, RetryDecision, TriggerDecision, TriggerRule, UpstreamCounts } from "../sdk/index.js";

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
  readonly retry: (failed: FailedTry, random: () => number) => RetryDecision;
}

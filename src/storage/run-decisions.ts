import type { RetryPolicySpec, TriggerDecision, TriggerRule, UpstreamCounts } from "../sdk/index.js";

/**
 * The decisions a run's transactions apply but do not make: whether a pending step's trigger rule is met, and
 * whether and when a failed try is retried. The planner makes them (pure functions); the composition root hands
 * them to the stores, so storage depends on nothing above it.
 */
export interface RunDecisions {
  /** A pending step's trigger rule, judged on how its upstream steps ended so far. */
  readonly triggerRule: (rule: TriggerRule, counts: UpstreamCounts) => TriggerDecision;
  /** Whether failed try `tryNumber` is retried under `policy`, given the tries before the step was last cleared. */
  readonly shouldRetry: (policy: RetryPolicySpec, tryNumber: number, triesBefore: number) => boolean;
  /** How long after failed try `failedTryNumber` (counted from the last clear) its retry waits. */
  readonly retryDelayMs: (policy: RetryPolicySpec, failedTryNumber: number, random: () => number) => number;
}

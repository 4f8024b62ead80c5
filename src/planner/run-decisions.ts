import {
  checkInfrastructureRetryPolicy,
  decideRetry,
  DEFAULT_INFRASTRUCTURE_RETRY_POLICY,
  type InfrastructureRetryPolicy,
} from "./retry.js";
import { evaluateTriggerRule } from "./trigger-rules.js";
import type { FailedTry, RetryDecision } from "../sdk/index.js";

/**
 * Trigger rules with Airflow's semantics, and retries — the asset's `retries` for user failures, `infrastructure`
 * for the others — with backoff: what the stores apply to steps.
 */
export function runDecisions(infrastructure: InfrastructureRetryPolicy = DEFAULT_INFRASTRUCTURE_RETRY_POLICY) {
  const policy = checkInfrastructureRetryPolicy(infrastructure);
  return Object.freeze({
    triggerRule: evaluateTriggerRule,
    retry: (failed: FailedTry, random: () => number): RetryDecision => decideRetry(failed, policy, random),
  });
}

/** The decisions with the default infrastructure retry policy. */
export const RUN_DECISIONS = runDecisions();

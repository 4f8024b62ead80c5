import { InputError } from "../errors/index.js";
import type { FailedTry, RetryDecision, RetryPolicySpec } from "../sdk/index.js";

/**
 * The ceiling on a growing (linear or exponential) retry delay when the
 * policy sets no `maxDelayMs`: 24 hours, as Airflow's
 * `[core] max_task_retry_delay` default. A fixed delay is never cut by it.
 */
export const DEFAULT_MAX_RETRY_DELAY_MS = 86_400_000;

/**
 * How long to wait after try `failedTryNumber` (1-based) failed, before the next try:
 * - fixed: `delayMs`;
 * - linear: n × `delayMs`;
 * - exponential: (2^n − 1) × `delayMs` (1×, 3×, 7×, … the delay);
 * capped by `maxDelayMs` (or {@link DEFAULT_MAX_RETRY_DELAY_MS} for growing
 * delays when it is null). With `jitter`, the capped delay is multiplied by a
 * factor drawn uniformly from [0.5, 1] (`0.5 + 0.5 × random()`), which spreads
 * retries of many steps that failed together without ever exceeding the cap.
 * Whole milliseconds.
 *
 * @example retryDelayMs({ max: 3, delayMs: 1000, backoff: "exponential", maxDelayMs: null, jitter: false }, 2, Math.random); // 3000
 */
export function retryDelayMs(policy: RetryPolicySpec, failedTryNumber: number, random: () => number): number {
  if (!Number.isSafeInteger(failedTryNumber) || failedTryNumber < 1) {
    throw new InputError(`retry delay: the failed try number must be an integer >= 1, got ${failedTryNumber}`, {
      code: "RETRY_TRY_NUMBER_INVALID",
    });
  }
  const n = failedTryNumber;
  const base = policy.delayMs;
  let delay: number;
  switch (policy.backoff) {
    case "fixed":
      delay = base;
      break;
    case "linear":
      delay = n * base;
      break;
    case "exponential":
      // 2^n overflows to Infinity for large n; the cap below brings it back.
      delay = (2 ** n - 1) * base;
      break;
  }
  const cap = policy.maxDelayMs ?? Math.max(DEFAULT_MAX_RETRY_DELAY_MS, base);
  delay = Math.min(delay, cap);
  if (policy.jitter) {
    const r = random();
    if (!(r >= 0 && r <= 1)) {
      throw new InputError(`retry delay: random() must return a number in [0, 1], got ${r}`, { code: "RETRY_RANDOM_INVALID" });
    }
    delay *= 0.5 + 0.5 * r;
  }
  return Math.round(delay);
}

/**
 * Whether a step whose try `tryNumber` (1-based) just failed gets another
 * one: `max` retries mean `max + 1` tries. Clearing does not reset the try
 * number, so pass the try number the step had when it was last cleared as
 * `triesBefore` (0 for a step never cleared): the retries count from there.
 *
 * @example shouldRetry({ max: 2, delayMs: 0, backoff: "fixed", maxDelayMs: null, jitter: false }, 2); // true: try 3 follows
 * @example shouldRetry({ max: 2, delayMs: 0, backoff: "fixed", maxDelayMs: null, jitter: false }, 3); // false
 */
export function shouldRetry(policy: RetryPolicySpec, tryNumber: number, triesBefore = 0): boolean {
  return tryNumber < maxTries(policy, triesBefore);
}

/** The last try number a step may reach: `triesBefore + max + 1` (the `steps.max_tries` column). */
export function maxTries(policy: RetryPolicySpec, triesBefore = 0): number {
  return triesBefore + policy.max + 1;
}

/**
 * The re-runs a step gets after infrastructure failures (a lost worker, an unreachable API or store, a worker
 * handing the step back as it stops), whatever its asset's `retries`: at most `max` per step, counted from its last
 * clear, the n-th after (2^n − 1) × `delayMs`, at most `maxDelayMs`, jittered over [0.5, 1] × that so that steps
 * a lost worker dropped together do not come back together.
 */
export interface InfrastructureRetryPolicy {
  readonly max: number;
  readonly delayMs: number;
  readonly maxDelayMs: number;
}

/** 5 re-runs, after about 2 s, 6 s, 14 s, 30 s and 1 min (each jittered down to half of that). */
export const DEFAULT_INFRASTRUCTURE_RETRY_POLICY: InfrastructureRetryPolicy = Object.freeze({ max: 5, delayMs: 2_000, maxDelayMs: 60_000 });

/**
 * Whether and when a failed try's step runs again. A user failure is governed by the asset's `retries` alone,
 * counted without the tries in `triesBefore`; an infrastructure failure by `infrastructure` alone, so it never uses
 * up a user retry. Nothing runs again in a run being canceled, nor after a failure that is not retryable.
 *
 * @example decideRetry({ tryNumber: 1, failureClass: "infrastructure", retryable: true, policy: null, triesBefore: 0, infrastructureFailures: 0, canceled: false }, DEFAULT_INFRASTRUCTURE_RETRY_POLICY, () => 1); // { retry: true, delayMs: 2000, budget: "infrastructure" }
 */
export function decideRetry(failed: FailedTry, infrastructure: InfrastructureRetryPolicy, random: () => number): RetryDecision {
  if (failed.canceled) return { retry: false, why: "canceled" };
  if (!failed.retryable) return { retry: false, why: "not_retryable" };
  if (failed.failureClass === "infrastructure") {
    const n = failed.infrastructureFailures + 1;
    if (n > infrastructure.max) return { retry: false, why: "infrastructure_retries_spent", max: infrastructure.max };
    const backoff: RetryPolicySpec = {
      max: infrastructure.max,
      delayMs: infrastructure.delayMs,
      backoff: "exponential",
      maxDelayMs: infrastructure.maxDelayMs,
      jitter: true,
    };
    return { retry: true, delayMs: retryDelayMs(backoff, n, random), budget: "infrastructure" };
  }
  const policy = failed.policy;
  if (policy === null || !shouldRetry(policy, failed.tryNumber, failed.triesBefore)) return { retry: false, why: "retries_spent" };
  return { retry: true, delayMs: retryDelayMs(policy, failed.tryNumber - failed.triesBefore, random), budget: "user" };
}

/** The policy, if it is one: whole, non-negative numbers, the cap no smaller than the first delay. */
export function checkInfrastructureRetryPolicy(policy: InfrastructureRetryPolicy): InfrastructureRetryPolicy {
  const whole = (n: number) => Number.isSafeInteger(n) && n >= 0;
  const bad = !whole(policy.max)
    ? `max must be a whole number >= 0, got ${policy.max}`
    : !whole(policy.delayMs)
      ? `delayMs must be a whole number of milliseconds >= 0, got ${policy.delayMs}`
      : !whole(policy.maxDelayMs) || policy.maxDelayMs < policy.delayMs
        ? `maxDelayMs must be a whole number of milliseconds no smaller than delayMs (${policy.delayMs}), got ${policy.maxDelayMs}`
        : undefined;
  if (bad) throw new InputError(`infrastructure retry policy: ${bad}`, { code: "INFRASTRUCTURE_RETRY_POLICY_INVALID" });
  return Object.freeze({ max: policy.max, delayMs: policy.delayMs, maxDelayMs: policy.maxDelayMs });
}

import { InputError } from "../errors/index.js";
import type { RetryPolicySpec } from "../sdk/index.js";

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

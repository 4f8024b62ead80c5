/** How a reconnect loop spaces its attempts: doubling from `initialMs`, capped at `maxMs`. */
export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * Attempts at a dependency that went away: quick at first, then every few seconds for as long as it takes. The cap
 * bounds the time from the dependency's return to the next attempt.
 */
export const RECONNECT_BACKOFF: BackoffPolicy = { initialMs: 250, maxMs: 5_000 };

/**
 * The delay before attempt `attempt + 1` (`attempt` failures so far, from 0): `initialMs × 2^attempt` capped at
 * `maxMs`, with "equal jitter" — a uniform draw from the upper half of that — so processes that lost the same
 * dependency do not come back in lockstep, and no delay is ever shorter than half its step.
 *
 * @example backoffDelayMs(3, { initialMs: 250, maxMs: 5_000 }, () => 1); // 2000
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const step = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(Math.max(0, attempt), 30));
  return Math.round(step / 2 + (step / 2) * random());
}

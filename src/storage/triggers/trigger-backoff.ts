/** Backoff after failed checks never waits longer than this (or the poll interval, if longer). */
export const TRIGGER_MAX_BACKOFF_MS = 15 * 60_000;

/** Delay before the next check after `failures` consecutive failed checks (1 → one poll interval, then doubling). */
export function triggerBackoffMs(pollIntervalMs: number, failures: number): number {
  const cap = Math.max(pollIntervalMs, TRIGGER_MAX_BACKOFF_MS);
  return Math.min(cap, pollIntervalMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

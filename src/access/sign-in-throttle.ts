/** Failures allowed before sign-ins of a name are slowed down. */
const FREE_FAILURES = 5;
/** Failures are forgotten after this long without one. */
const FORGET_AFTER_MS = 15 * 60_000;
const MAX_WAIT_MS = 15 * 60_000;

/**
 * Slows down password guessing, per user name and per process: after five failures, each further failure doubles
 * the wait before the next attempt is heard (1 s, 2 s, 4 s… up to 15 minutes).
 */
export class SignInThrottle {
  readonly #failures = new Map<string, { count: number; lastAt: number }>();

  waitMs(name: string, now: number): number {
    const f = this.#failures.get(name);
    if (!f) return 0;
    if (now - f.lastAt > FORGET_AFTER_MS) {
      this.#failures.delete(name);
      return 0;
    }
    if (f.count < FREE_FAILURES) return 0;
    const wait = Math.min(MAX_WAIT_MS, 1000 * 2 ** (f.count - FREE_FAILURES));
    return Math.max(0, f.lastAt + wait - now);
  }

  failed(name: string, now: number): void {
    const f = this.#failures.get(name);
    this.#failures.set(name, { count: (f && now - f.lastAt <= FORGET_AFTER_MS ? f.count : 0) + 1, lastAt: now });
    if (this.#failures.size > 10_000) this.#failures.delete(this.#failures.keys().next().value!);
  }

  succeeded(name: string): void {
    this.#failures.delete(name);
  }
}

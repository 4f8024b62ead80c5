/** Requests being answered, and who waits for a pause in them. */
export class InFlight {
  private n = 0;
  private lastEnded = 0;
  private changed: (() => void)[] = [];

  async count(answer: () => Response | Promise<Response>): Promise<Response> {
    this.n++;
    this.wake();
    try {
      return await answer();
    } finally {
      this.n--;
      this.lastEnded = performance.now();
      this.wake();
    }
  }

  /** Resolves once no request has been in flight for `quietMs` from now on, or after `maxMs`. */
  async quiet(quietMs: number, maxMs: number): Promise<void> {
    const asked = performance.now();
    const deadline = asked + maxMs;
    for (;;) {
      const now = performance.now();
      if (now >= deadline) return;
      const quietFor = this.n === 0 ? now - Math.max(this.lastEnded, asked) : 0;
      if (quietFor >= quietMs) return;
      // Looked at again when a request starts or ends, or when the pause would be long enough.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.n === 0 ? Math.min(quietMs - quietFor, deadline - now) : deadline - now);
        const waiters = this.changed;
        function done(): void {
          clearTimeout(timer);
          const i = waiters.indexOf(done);
          if (i >= 0) waiters.splice(i, 1);
          resolve();
        }
        waiters.push(done);
      });
    }
  }

  private wake(): void {
    for (const wake of this.changed.splice(0)) wake();
  }
}

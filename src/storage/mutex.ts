/** Gives the holder's exclusive access back; calling it twice is harmless. */
export type Release = () => void;

/** A FIFO promise mutex. */
export class Mutex {
  #locked = false;
  readonly #waiters: Array<(release: Release) => void> = [];

  /**
   * Resolves once the caller holds the mutex. With `timeoutMs`, rejects with
   * `onTimeout()` if it is not acquired in time (a hang becomes an error).
   */
  acquire(options: { timeoutMs?: number; onTimeout?: () => Error } = {}): Promise<Release> {
    if (!this.#locked) {
      this.#locked = true;
      return Promise.resolve(this.#release());
    }
    return new Promise<Release>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = (release: Release): void => {
        if (timer) clearTimeout(timer);
        resolve(release);
      };
      this.#waiters.push(waiter);
      if (options.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const index = this.#waiters.indexOf(waiter);
          if (index >= 0) this.#waiters.splice(index, 1);
          reject(options.onTimeout?.() ?? new Error(`mutex not acquired within ${options.timeoutMs} ms`));
        }, options.timeoutMs);
      }
    });
  }

  get locked(): boolean {
    return this.#locked;
  }

  #release(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next(this.#release());
      else this.#locked = false;
    };
  }
}

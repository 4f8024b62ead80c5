import type { ExecutionBackend, StepResult, StepStarted } from "./types.js";

export interface BatchReporterOptions {
  /** How long the first event of a batch waits for company. 0: the next turn of the event loop. */
  readonly flushDelayMs: number;
  /** Most events per backend call. */
  readonly maxBatchSize: number;
  readonly onError: (err: unknown, what: string) => void;
}

type Event = { readonly kind: "started"; readonly event: StepStarted } | { readonly kind: "finished"; readonly result: StepResult };

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Coalesces `started` and `finished` reports into few backend calls.
 *
 * Batching is "Nagle off": the first event schedules a flush `flushDelayMs`
 * later; while a backend call is in flight, new events pile up and go out in
 * one call the moment it returns. Idle, an event waits about a millisecond;
 * under load, batches grow to whatever arrived during one database round trip.
 *
 * Order: events leave in the order they came, as prefixes of one sequence,
 * and each chunk's `started` call completes before its `finished` call, so
 * the backend never sees a step finish before it started. A failed call is
 * retried with backoff (the results must not be lost: the reconciler would
 * otherwise see zombies), reporting each failure through onError.
 */
export class BatchReporter {
  private events: Event[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private retryMs = 0;
  private stopped = false;
  /** Backend calls made, for tests and the benchmark. */
  readonly calls = { started: 0, finished: 0 };

  constructor(
    private readonly backend: ExecutionBackend,
    private readonly options: BatchReporterOptions,
  ) {}

  started(event: StepStarted): void {
    this.events.push({ kind: "started", event });
    this.schedule();
  }

  finished(result: StepResult): void {
    this.events.push({ kind: "finished", result });
    this.schedule();
  }

  get pending(): number {
    return this.events.length;
  }

  /** Sends everything pending; gives up (reporting what is lost) when `deadline` passes first. */
  async drain(deadline: number): Promise<void> {
    this.clearTimer();
    while (this.events.length > 0 || this.flushing) {
      const left = deadline - Date.now();
      if (left <= 0) {
        if (this.events.length > 0) {
          this.options.onError(
            new Error(`${this.events.length} step reports could not be delivered before the executor closed`),
            "closing",
          );
        }
        this.events = [];
        break;
      }
      await within(this.flushing ?? this.flush(), left);
      this.clearTimer();
      if (!this.flushing && this.events.length > 0 && this.retryMs > 0) {
        await within(new Promise<void>(() => {}), Math.min(this.retryMs, deadline - Date.now()));
      }
    }
    this.stopped = true;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private schedule(): void {
    if (this.timer || this.flushing || this.stopped) return;
    if (this.events.length >= this.options.maxBatchSize) {
      void this.flush();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.options.flushDelayMs);
  }

  private flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.clearTimer();
    this.flushing = this.sendChunks().finally(() => {
      this.flushing = undefined;
      if (this.events.length > 0 && !this.stopped) {
        if (this.retryMs > 0) {
          this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.flush();
          }, this.retryMs);
          this.timer.unref();
        } else this.schedule();
      }
    });
    return this.flushing;
  }

  private async sendChunks(): Promise<void> {
    while (this.events.length > 0) {
      const chunk = this.events.slice(0, this.options.maxBatchSize);
      const started: StepStarted[] = [];
      const finished: StepResult[] = [];
      for (const e of chunk) {
        if (e.kind === "started") started.push(e.event);
        else finished.push(e.result);
      }
      let startedSent = false;
      try {
        if (started.length > 0) {
          this.calls.started++;
          await this.backend.started(started);
        }
        startedSent = true;
        if (finished.length > 0) {
          this.calls.finished++;
          await this.backend.finished(finished);
        }
        this.events.splice(0, chunk.length);
        this.retryMs = 0;
      } catch (err) {
        // Keep what was not delivered, in order; `started` is not sent twice.
        if (startedSent) this.events.splice(0, chunk.length, ...chunk.filter((e) => e.kind === "finished"));
        this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
        this.options.onError(err, startedSent ? "reporting finished steps" : "reporting started steps");
        return;
      }
    }
  }
}

/** Waits for `promise`, or `ms` at most; leaves no timer behind. */
function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}

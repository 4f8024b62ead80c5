import type { ExecutionBackend, StepDispatch, StepResult, StepStarted } from "../execution/index.js";

export interface BatchReporterOptions {
  /** How long the first event of a batch waits for company. 0: the next turn of the event loop. */
  readonly flushDelayMs: number;
  /** Most events per backend call. */
  readonly maxBatchSize: number;
  /** Backend calls in flight at once (default 2): a new batch need not wait for a slow one. */
  readonly maxInFlight?: number;
  /**
   * How long a start waits for its step's finish before it is reported alone (default 0: at once). A step that
   * ends within it is reported once, its start carried by its finish: one write of the step instead of two.
   */
  readonly startDelayMs?: number;
  readonly onError: (err: unknown, what: string) => void;
  /** Free executor slots now; given to the backend so it may hand back runnable downstream steps. */
  readonly freeSlots?: () => number;
  /** Receives the steps the backend handed back. */
  readonly onFollowUp?: (steps: readonly StepDispatch[]) => void;
}

type Event = { readonly kind: "started"; readonly event: StepStarted } | { readonly kind: "finished"; readonly result: StepResult };

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Coalesces `started` and `finished` reports into few backend calls.
 *
 * Batching is "Nagle off": the first event schedules a flush `flushDelayMs`
 * later; while `maxInFlight` calls are out, new events pile up and leave
 * together as soon as one returns. Idle, an event waits about a millisecond;
 * under load, batches grow to whatever arrived during a database round trip,
 * and a second batch is recorded while the first still commits.
 *
 * A step that started and finished within one batch is reported once: its
 * finish carries where and when it started. Otherwise its finish waits until
 * the call carrying its start has returned, so the backend never sees a step
 * finish before it started, even with several calls in flight. With
 * `startDelayMs`, a start waits that long for its finish before it is sent
 * alone, so that a short step is written once rather than at its start and
 * again at its end. A failed call is
 * retried with backoff (results must not be lost: the reconciler would
 * otherwise see zombies), reporting each failure through onError; `started`
 * events already delivered are not sent twice.
 */
export class BatchReporter {
  private events: Event[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private idle: (() => void)[] = [];
  private retryMs = 0;
  private retryUntil = 0;
  private stopped = false;
  /** Closing: starts are no longer held back. */
  private draining = false;
  /** Start reports being delivered, by step try: a later finish waits for them. */
  private readonly startsInFlight = new Map<string, Promise<unknown>>();
  /** Starts held back for their finish (see startDelayMs), by step try, oldest first, with when each is due. */
  private readonly heldStarts = new Map<string, { event: StepStarted; due: number }>();
  private startTimer: NodeJS.Timeout | undefined;
  /** Finishes handed over and not yet delivered, by step try (queued, in flight, or put back after a failed call). */
  private readonly undelivered = new Map<string, { stepId: number; tryNumber: number }>();
  /** Backend calls made, for tests and the benchmark. */
  readonly calls = { started: 0, finished: 0 };

  constructor(
    private readonly backend: ExecutionBackend,
    private readonly options: BatchReporterOptions,
  ) {}

  started(event: StepStarted): void {
    const delay = this.options.startDelayMs ?? 0;
    if (delay > 0 && !this.stopped && !this.draining) {
      this.heldStarts.set(key(event), { event, due: Date.now() + delay });
      this.armStartTimer();
      return;
    }
    this.events.push({ kind: "started", event });
    this.schedule();
  }

  finished(result: StepResult): void {
    const held = this.heldStarts.get(key(result));
    if (held) {
      // Side by side in one batch, the two go out as one report.
      this.heldStarts.delete(key(result));
      this.events.push({ kind: "started", event: held.event });
    }
    this.events.push({ kind: "finished", result });
    this.undelivered.set(key(result), { stepId: result.stepId, tryNumber: result.tryNumber });
    this.schedule();
  }

  /**
   * The step tries whose finish this reporter holds and has not delivered yet: their code has ended, but the database
   * still has them running. The executor keeps sending their heartbeats, so that a finish held back by a database
   * outage is not taken for a dead worker's step (and the step run again) while it waits to be delivered.
   */
  undeliveredFinishes(): { stepId: number; tryNumber: number }[] {
    return [...this.undelivered.values()];
  }

  get pending(): number {
    return this.events.length + this.heldStarts.size;
  }

  /** Sends everything pending; gives up (reporting what is lost) when `deadline` passes first. */
  async drain(deadline: number): Promise<void> {
    this.clearTimer();
    this.draining = true;
    this.releaseStarts(Infinity);
    while (this.events.length > 0 || this.inFlight > 0) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      if (this.events.length > 0 && this.inFlight < this.maxInFlight && Date.now() >= this.retryUntil) this.pump();
      await within(new Promise<void>((resolve) => this.idle.push(resolve)), Math.min(left, Math.max(10, this.retryUntil - Date.now())));
    }
    if (this.events.length > 0) {
      this.options.onError(new Error(`${this.events.length} step reports could not be delivered before the executor closed`), "closing");
      this.events = [];
    }
    this.undelivered.clear();
    this.stopped = true;
    this.clearTimer();
  }

  private get maxInFlight(): number {
    return Math.max(1, this.options.maxInFlight ?? 2);
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Queues the held starts due by `now` for sending (all of them with Infinity). */
  private releaseStarts(now: number): void {
    if (this.startTimer) {
      clearTimeout(this.startTimer);
      this.startTimer = undefined;
    }
    let released = false;
    for (const [k, held] of this.heldStarts) {
      if (held.due > now) break;
      this.heldStarts.delete(k);
      this.events.push({ kind: "started", event: held.event });
      released = true;
    }
    if (released) this.schedule();
    this.armStartTimer();
  }

  /** A timer for the oldest held start (starts are held in the order they came, all for the same time). */
  private armStartTimer(): void {
    if (this.startTimer || this.heldStarts.size === 0) return;
    const oldest = this.heldStarts.values().next().value!;
    this.startTimer = setTimeout(
      () => {
        this.startTimer = undefined;
        this.releaseStarts(Date.now());
      },
      Math.max(0, oldest.due - Date.now()),
    );
  }

  private schedule(): void {
    if (this.timer || this.stopped || this.inFlight >= this.maxInFlight) return;
    const wait = Math.max(this.retryUntil - Date.now(), this.events.length >= this.options.maxBatchSize ? 0 : this.options.flushDelayMs);
    if (wait <= 0 && this.inFlight === 0) {
      this.pump();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, wait);
    if (this.retryMs > 0) this.timer.unref();
  }

  /** Starts calls while there are events and room in flight. */
  private pump(): void {
    this.clearTimer();
    while (this.events.length > 0 && this.inFlight < this.maxInFlight && Date.now() >= this.retryUntil) {
      const chunk = this.events.splice(0, this.options.maxBatchSize);
      this.inFlight++;
      void this.send(chunk).finally(() => {
        this.inFlight--;
        for (const resolve of this.idle.splice(0)) resolve();
        if (this.events.length > 0 && !this.stopped) this.schedule();
      });
    }
    // A timer may fire before the wall clock reaches the retry time: wait the rest, or the events would sit until a
    // new one came (none does when the last steps of a run wait for a database that was away).
    if (this.events.length > 0 && this.inFlight < this.maxInFlight && !this.stopped) this.schedule();
  }

  private async send(chunk: Event[]): Promise<void> {
    const finishedInChunk = new Set<string>();
    for (const e of chunk) if (e.kind === "finished") finishedInChunk.add(key(e.result));
    const startOf = new Map<string, StepStarted>();
    const started: StepStarted[] = [];
    const finished: StepResult[] = [];
    for (const e of chunk) {
      if (e.kind === "started") {
        if (finishedInChunk.has(key(e.event))) startOf.set(key(e.event), e.event);
        else started.push(e.event);
      } else {
        const s = startOf.get(key(e.result));
        finished.push(s ? { ...e.result, hostname: s.hostname, pid: s.pid, startedAt: e.result.startedAt ?? s.startedAt } : e.result);
      }
    }
    let startedSent = false;
    try {
      if (started.length > 0) {
        this.calls.started++;
        const call = this.backend.started(started);
        for (const e of started) this.startsInFlight.set(key(e), call);
        try {
          await call;
        } finally {
          for (const e of started) if (this.startsInFlight.get(key(e)) === call) this.startsInFlight.delete(key(e));
        }
      }
      startedSent = true;
      if (finished.length > 0) {
        const earlierStarts = new Set(finished.map((r) => this.startsInFlight.get(key(r))).filter((p) => p !== undefined));
        if (earlierStarts.size > 0) await Promise.allSettled(earlierStarts);
        this.calls.finished++;
        const freeSlots = this.options.freeSlots?.();
        const next = await this.backend.finished(finished, freeSlots === undefined ? undefined : { freeSlots });
        for (const r of finished) this.undelivered.delete(key(r));
        if (next && next.length > 0) this.options.onFollowUp?.(next);
      }
      this.retryMs = 0;
      this.retryUntil = 0;
    } catch (err) {
      // Put back what was not delivered, ahead of newer events: a start folded into its finish goes back with it.
      const undelivered = startedSent ? chunk.filter((e) => e.kind === "finished" || finishedInChunk.has(key(e.event))) : chunk;
      this.events.unshift(...undelivered);
      this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
      this.retryUntil = Date.now() + this.retryMs;
      this.options.onError(err, startedSent ? "reporting finished steps" : "reporting started steps");
    }
  }
}

function key(e: { stepId: number; tryNumber: number }): string {
  return `${e.stepId}:${e.tryNumber}`;
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

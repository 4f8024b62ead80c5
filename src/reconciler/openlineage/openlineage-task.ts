import type { EventCursor, LineageCursor, LineageLiveStep, LineagePage, LineageTryMark, OpenLineageStore } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";
import { isStepRecord, liveStepEvents, recordEvents, tryKey, type OpenLineageEvent } from "./lineage-events.js";
import type { LineageSink } from "./lineage-sink.js";

export interface OpenLineageTaskOptions {
  readonly store: OpenLineageStore;
  readonly sink: LineageSink;
  /** Namespace of jobs and datasets, e.g. `tributary://prod`. */
  readonly namespace: string;
  /** This reconciler's id: the holder of the emission lease. */
  readonly owner: string;
  /** A lease not renewed for this long passes to another reconciler (default 60 s; keep it above twice the sink's time limit). */
  readonly leaseMs?: number;
  /** Rounds start at most this often (default 1 s); passes in between do nothing. */
  readonly intervalMs?: number;
  /** Steps in flight and stream entries read per batch (default 100). */
  readonly batch?: number;
  /** First wait after a failed delivery, doubled each time up to `maxRetryDelayMs` (defaults 1 s and 60 s). */
  readonly retryDelayMs?: number;
  readonly maxRetryDelayMs?: number;
  readonly clock?: () => Date;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/** What the emitter has settled: the cursor, and the tries reported ahead of it ("stepId:tryNumber" → end sent too). */
interface EmitState {
  cursor: LineageCursor;
  readonly marks: Map<string, boolean>;
}

interface Positioned {
  /** Undefined: nothing to send, only `settle` (an outcome whose events were all sent ahead of the cursor). */
  readonly event: OpenLineageEvent | undefined;
  /** What delivering the event (or reaching it) settles. */
  readonly settle: (state: EmitState) => void;
}

/**
 * Sends OpenLineage events: a START for each step try as it starts, its end
 * when the step's outcome is recorded (see lineageEvents), and a DatasetEvent
 * for each observation and external report. One reconciler at a time holds
 * the emission lease on the `openlineage` cursor. Each round it first reports
 * the tries of steps still in flight (liveStepEvents), remembering them as
 * marks in the cursor row, then reads the event stream after the cursor in
 * commit order and sends what the marks do not cover. The cursor and marks
 * move (renewing the lease) only past what the sink accepted — so a failing
 * endpoint loses nothing and, once it recovers, gets each event once, in
 * order. Delivery runs in the background: a slow or failing endpoint never
 * holds up the reconciler's pass, and failed rounds are retried after an
 * exponential backoff.
 *
 * @example
 * import type { Kysely } from "kysely";
 * import { PgOpenLineageStore, type Database } from "../../storage/index.js";
 * // given db: Kysely<Database>
 * new OpenLineageTask({ store: new PgOpenLineageStore(db), sink: new HttpLineageSink("http://marquez:5000"), namespace: "tributary://prod", owner: "reconciler-1" });
 */
export class OpenLineageTask implements ReconcilerTask {
  readonly name = "openlineage";
  #delivering: Promise<void> | undefined;
  #failures = 0;
  #retryAt = Number.NEGATIVE_INFINITY;
  #lastRound: number | undefined;
  #stopped = false;
  readonly #log: NonNullable<OpenLineageTaskOptions["log"]>;
  readonly #clock: () => Date;

  constructor(private readonly options: OpenLineageTaskOptions) {
    this.#log = options.log ?? ((level, message) => process.stderr.write(`[${level}] ${message}\n`));
    this.#clock = options.clock ?? (() => new Date());
  }

  async run(now: Date): Promise<void> {
    const t = now.getTime();
    if (this.#stopped || this.#delivering || t < this.#retryAt) return;
    // A clock that went backwards must not pause emission until it catches up.
    if (this.#lastRound !== undefined && t - this.#lastRound < (this.options.intervalMs ?? 1_000) && t >= this.#lastRound) return;
    this.#lastRound = t;
    this.#delivering = this.deliver()
      .then(
        () => undefined,
        (err: unknown) => this.#failed(err as Error),
      )
      .finally(() => (this.#delivering = undefined));
  }

  /**
   * Stops starting rounds, waits for the one in progress, makes one last round
   * (so a one-off command's run is reported before the process exits) unless
   * the sink is failing, and gives the lease up. Call after the reconciler stopped.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#delivering;
    if (this.#failures === 0) await this.deliver().catch((err: unknown) => this.#failed(err as Error));
    await this.options.store.releaseLease(this.options.owner).catch(() => undefined);
  }

  /** One delivery round: tries in flight, then everything after the cursor, batch by batch, until caught up or the sink fails. Returns events sent. */
  async deliver(): Promise<number> {
    const o = this.options;
    const leaseMs = o.leaseMs ?? 60_000;
    const batch = Math.max(2, o.batch ?? 100);
    const lease = await o.store.acquireLease(o.owner, this.#clock(), leaseMs);
    if (!lease.acquired) return 0;
    const state: EmitState = { cursor: lease.cursor, marks: new Map(lease.marks.map((m) => [tryKey(m.stepId, m.tryNumber), m.ended])) };
    let sent = 0;
    // Tries of steps in flight first: a START the outcome below also carries is then sent once, ahead of it.
    for (;;) {
      const steps = await o.store.readLiveSteps(marksOf(state), batch);
      const result = await this.#send(live(steps, state, o.namespace, this.#clock()), state);
      if (result === undefined) return sent;
      sent += result.delivered;
      if (steps.length < batch || !result.complete) break;
    }
    for (;;) {
      const page = await o.store.readEvents(state.cursor, batch);
      const result = await this.#send(positioned(page, state, o.namespace), state);
      if (result === undefined) return sent;
      sent += result.delivered;
      if (page.entries.length < batch || !result.complete) return sent;
    }
  }

  /**
   * Sends the events of `pending` and settles what the sink accepted, then
   * stores the state (renewing the lease). Undefined: stop the round (the sink
   * failed or the lease passed on); else how many were sent and whether all were.
   */
  async #send(pending: readonly Positioned[], state: EmitState): Promise<{ delivered: number; complete: boolean } | undefined> {
    const o = this.options;
    const leaseMs = o.leaseMs ?? 60_000;
    const events = pending.flatMap((p) => (p.event === undefined ? [] : [p.event]));
    // Half the lease: the cursor move that renews it comes well before it could pass to another reconciler.
    const result = events.length === 0 ? { delivered: 0 } : await o.sink.send(events, performance.now() + leaseMs / 2);
    let accepted = result.delivered;
    let settled = 0;
    for (const p of pending) {
      if (p.event !== undefined) {
        if (accepted === 0) break;
        accepted--;
      }
      p.settle(state);
      settled++;
    }
    if (settled > 0 && !(await o.store.advance(o.owner, state.cursor, marksOf(state), this.#clock(), leaseMs))) {
      this.#log(
        "warn",
        `OpenLineage emission lease passed to another reconciler; ${result.delivered} event(s) sent by this one may be sent again`,
      );
      return undefined;
    }
    if (result.error) {
      this.#failed(result.error);
      return undefined;
    }
    this.#failures = 0;
    return { delivered: result.delivered, complete: result.delivered === events.length };
  }

  #failed(error: Error): void {
    this.#failures++;
    const first = this.options.retryDelayMs ?? 1_000;
    const delay = Math.min(this.options.maxRetryDelayMs ?? 60_000, first * 2 ** Math.min(this.#failures - 1, 30));
    this.#retryAt = this.#clock().getTime() + delay;
    this.#log("warn", `OpenLineage events not delivered (attempt ${this.#failures}), retrying in ${delay} ms: ${error.message}`);
  }
}

/**
 * The events the steps in flight owe (see liveStepEvents). A START delivered
 * marks its try started, an end marks it ended; a skipped or removed step gets
 * no outcome event, so once its last event is sent its marks are dropped.
 */
function live(steps: readonly LineageLiveStep[], state: EmitState, namespace: string, now: Date): Positioned[] {
  const out: Positioned[] = [];
  for (const step of steps) {
    const events = liveStepEvents(step, state.marks, namespace, now);
    for (const { event, try: t } of events) {
      if (!t) continue;
      const key = tryKey(t.stepId, t.tryNumber);
      out.push({ event, settle: (s) => void s.marks.set(key, t.phase === "end") });
    }
    if (step.state === "skipped" || step.state === "removed") {
      out.push({ event: undefined, settle: (s) => forget(s, step.stepId, step.tries) });
    }
  }
  return out;
}

/**
 * The events of the page's entries not yet delivered. Positions count every
 * event an entry yields (so a cursor within an entry means the same whatever
 * was sent ahead of it); STARTs and ends its tries' marks show as sent are
 * skipped. Reaching a step outcome's last event drops its tries' marks. Order
 * is the stream's (see readEventStream): what the emitter needs of it is that
 * a step's outcomes come in the order they were recorded (one transaction
 * each, a retry's after the try before), which also puts each try's START
 * before its end.
 */
function positioned(page: LineagePage, state: EmitState, namespace: string): Positioned[] {
  const out: Positioned[] = [];
  const partial = state.cursor.partial;
  for (const { record: r, after } of page.entries) {
    const events = recordEvents(r, namespace);
    const atPartial = partial !== null && r.txId === partial.txId && r.eventId === partial.id;
    const skip = Math.min(atPartial ? partial.sent : 0, events.length);
    for (let i = skip; i < events.length; i++) {
      const p = events[i]!;
      const done = i + 1 === events.length;
      const position: LineageCursor = { stream: after, partial: done ? null : { txId: r.txId, id: r.eventId, sent: i + 1 } };
      const mark = p.try ? state.marks.get(tryKey(p.try.stepId, p.try.tryNumber)) : undefined;
      const sentAhead = p.try !== undefined && mark !== undefined && (p.try.phase === "start" || mark);
      out.push({
        event: sentAhead ? undefined : p.event,
        settle: (s) => {
          s.cursor = position;
          if (done && isStepRecord(r)) forget(s, r.stepId, r.tries);
        },
      });
    }
    // An entry with nothing (left) to send is simply passed.
    if (skip === events.length) out.push({ event: undefined, settle: (s) => void (s.cursor = { stream: after, partial: null }) });
  }
  // Past the whole page: pending transactions that ended without (more) entries leave the cursor too.
  const last = out.length > 0 ? page.entries.at(-1)!.after : state.cursor.stream;
  if (!sameStream(last, page.end) || (out.length === 0 && state.cursor.partial !== null)) {
    out.push({ event: undefined, settle: (s) => void (s.cursor = { stream: page.end, partial: null }) });
  }
  return out;
}

function sameStream(a: EventCursor, b: EventCursor): boolean {
  return (
    a.txId === b.txId &&
    a.id === b.id &&
    a.pending.length === b.pending.length &&
    a.pending.every((p, i) => p.txId === b.pending[i]!.txId && p.id === b.pending[i]!.id)
  );
}

function forget(state: EmitState, stepId: number, tries: readonly { readonly tryNumber: number }[]): void {
  for (const t of tries) state.marks.delete(tryKey(stepId, t.tryNumber));
}

function marksOf(state: EmitState): LineageTryMark[] {
  return [...state.marks].map(([key, ended]) => {
    const [stepId, tryNumber] = key.split(":").map(Number) as [number, number];
    return { stepId, tryNumber, ended };
  });
}

import { hostname } from "node:os";
import { TributaryError, serializeError, type SerializedError } from "../errors/index.js";
import { BatchReporter } from "./batch-reporter.js";
import {
  canceledError,
  describeTry,
  formatMs,
  serializedStepError,
  STEP_ERROR_CODES,
  stepError,
  timeoutError,
  withKillNote,
  withoutStack,
} from "./step-errors.js";
import { appendStepLog } from "./step-log.js";
import type { ExecutionBackend, StepDispatch, StepInputs, StepOutcome } from "../execution/index.js";

/** A step handed to a lane, with its inputs. */
export interface LaneStep {
  readonly dispatch: StepDispatch;
  readonly inputs: Readonly<Record<string, unknown>>;
}

/**
 * Somewhere steps run side by side: one worker child process, or the current
 * process. The scheduler decides what runs where and when to give up; a lane
 * only runs, aborts, and (when it can) dies.
 */
export interface Lane {
  readonly workerId: string;
  readonly pid: number;
  /** How many steps it runs at once. */
  readonly capacity: number;
  /** False while starting, retiring or dead: no new steps. */
  readonly accepting: boolean;
  run(steps: readonly LaneStep[]): void;
  /** Aborts the step's ctx.signal with `reason`; the step ends when its function returns. */
  abort(stepId: number, reason: TributaryError): void;
  /**
   * The step ignored its signal for the grace period. A process lane is
   * killed (every step in it ends; the scheduler reports them); the
   * in-process lane can only stop waiting for that one step.
   */
  readonly endsBy: "kill" | "abandon";
  kill(): void;
  abandon(stepId: number): void;
}

export interface SchedulerOptions {
  /** Steps accepted at most: the sum of the lanes' capacities. */
  readonly capacity: number;
  readonly killGraceMs: number;
  readonly heartbeatIntervalMs: number;
  readonly flushDelayMs: number;
  readonly maxBatchSize: number;
  /** Worker id for results of steps that never reached a lane. */
  readonly workerId: string;
  readonly onError: (err: unknown, what: string) => void;
  /** A lane died or was killed (after its steps were failed): replace it. */
  readonly onLaneLost?: (lane: Lane) => void;
}

type EntryState = "loading" | "queued" | "running" | "done";

interface Entry {
  readonly dispatch: StepDispatch;
  state: EntryState;
  inputs: Readonly<Record<string, unknown>> | undefined;
  lane: Lane | undefined;
  startedAt: number | null;
  /** Why the step is being stopped (timeout, cancel, close), once it is. */
  stopping: TributaryError | undefined;
  timer: NodeJS.Timeout | undefined;
  graceTimer: NodeJS.Timeout | undefined;
}

const HOSTNAME = hostname();

/**
 * The part of an executor that does not care where code runs: the queue,
 * input loading in batches, placing steps on the least-loaded lane, timeouts
 * and their grace periods, cancellation, heartbeats, coalesced reports, and
 * an orderly close. LocalExecutor and InProcessExecutor differ only in lanes.
 */
export class StepScheduler {
  private readonly entries = new Map<number, Entry>();
  private queue: Entry[] = [];
  private queueHead = 0;
  private readonly lanes = new Set<Lane>();
  private readonly laneLoad = new Map<Lane, Set<Entry>>();
  private pendingLoads: Entry[] = [];
  private loadScheduled = false;
  private readonly reporter: BatchReporter;
  private readonly heartbeat: NodeJS.Timeout;
  private heartbeatInFlight = false;
  private closing = false;
  private idleWaiters: (() => void)[] = [];
  private running = 0;
  /** >0 while a lane delivers a batch of events: placement waits for the end of the batch. */
  private holdDepth = 0;
  private pumpHeld = false;

  constructor(
    private readonly backend: ExecutionBackend,
    private readonly options: SchedulerOptions,
  ) {
    this.reporter = new BatchReporter(backend, {
      flushDelayMs: options.flushDelayMs,
      maxBatchSize: options.maxBatchSize,
      onError: options.onError,
      freeSlots: () => this.freeSlots(),
      onFollowUp: (steps) => this.takeFollowUps(steps),
    });
    this.heartbeat = setInterval(() => this.sendHeartbeat(), options.heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  /** Backend calls made so far (for tests and the benchmark). */
  get reportCalls(): { readonly started: number; readonly finished: number } {
    return this.reporter.calls;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  freeSlots(): number {
    return this.closing ? 0 : Math.max(0, this.options.capacity - this.entries.size);
  }

  /** Steps on a lane, per lane (for introspection). */
  loadOf(lane: Lane): number {
    return this.laneLoad.get(lane)?.size ?? 0;
  }

  addLane(lane: Lane): void {
    this.lanes.add(lane);
    this.laneLoad.set(lane, new Set());
    this.pump();
  }

  /** Runs `fn` (a lane delivering many events), placing queued steps once at the end rather than per event. */
  batched(fn: () => void): void {
    this.holdDepth++;
    try {
      fn();
    } finally {
      if (--this.holdDepth === 0 && this.pumpHeld) {
        this.pumpHeld = false;
        this.pump();
      }
    }
  }

  submit(steps: readonly StepDispatch[]): void {
    if (this.closing) {
      throw new TributaryError(
        STEP_ERROR_CODES.executorClosed,
        `the executor is closed and takes no more steps (${steps.length} submitted)`,
      );
    }
    for (const dispatch of steps) {
      const entry: Entry = {
        dispatch,
        state: "loading",
        inputs: undefined,
        lane: undefined,
        startedAt: null,
        stopping: undefined,
        timer: undefined,
        graceTimer: undefined,
      };
      if (this.entries.has(dispatch.stepId)) {
        const other = this.entries.get(dispatch.stepId)!.dispatch;
        this.report(entry, {
          kind: "failed",
          retryable: false,
          error: withoutStack(
            stepError(
              STEP_ERROR_CODES.duplicate,
              dispatch,
              `${describeTry(dispatch)}: step ${dispatch.stepId} is already in the executor (try ${other.tryNumber}); ` +
                `a step runs one try at a time`,
            ),
          ),
        });
        continue;
      }
      this.entries.set(dispatch.stepId, entry);
      this.pendingLoads.push(entry);
    }
    // Submits made in the same turn share one loadInputs call.
    if (!this.loadScheduled && this.pendingLoads.length > 0) {
      this.loadScheduled = true;
      queueMicrotask(() => void this.loadInputs());
    }
  }

  /**
   * Steps a completion claimed for this executor. The claim was made with the free slots counted before `close()`
   * began; closing by now, hand them back unstarted (the store schedules them again) rather than leave them claimed
   * until the queued timeout.
   */
  private takeFollowUps(steps: readonly StepDispatch[]): void {
    if (!this.closing) {
      this.submit(steps);
      return;
    }
    for (const dispatch of steps) {
      const error = serializedStepError(
        STEP_ERROR_CODES.closed,
        dispatch,
        `${describeTry(dispatch)}: the executor closed before the step started; it can run again`,
      );
      appendStepLog(dispatch.logRef, "error", `step handed back: ${error.message}`, { code: error.code });
      this.reporter.finished({
        stepId: dispatch.stepId,
        runId: dispatch.runId,
        tryNumber: dispatch.tryNumber,
        outcome: { kind: "failed", error, retryable: true },
        startedAt: null,
        endedAt: new Date(),
        workerId: this.options.workerId,
        logRef: dispatch.logRef,
      });
    }
  }

  cancel(stepIds: readonly number[], reason: string): void {
    for (const stepId of stepIds) {
      const entry = this.entries.get(stepId);
      if (!entry || entry.state === "done") continue;
      const error = canceledError(entry.dispatch, reason);
      if (entry.state === "running") this.stop(entry, error);
      else this.finishUnstarted(entry, withoutStack(error), false, "step canceled before it started");
    }
  }

  // --- lane events -------------------------------------------------------

  started(lane: Lane, stepId: number, tryNumber: number, at: number): void {
    const entry = this.entries.get(stepId);
    if (!entry || entry.lane !== lane || entry.state !== "running" || entry.dispatch.tryNumber !== tryNumber) return;
    entry.startedAt = at;
    this.reporter.started({
      stepId,
      tryNumber,
      workerId: lane.workerId,
      hostname: HOSTNAME,
      pid: lane.pid,
      startedAt: new Date(at),
    });
  }

  finished(lane: Lane, stepId: number, tryNumber: number, outcome: StepOutcome, startedAt: number, endedAt: number): void {
    const entry = this.entries.get(stepId);
    if (!entry || entry.lane !== lane || entry.state !== "running" || entry.dispatch.tryNumber !== tryNumber) return;
    entry.startedAt ??= startedAt;
    this.complete(entry, outcome, endedAt);
  }

  /**
   * A lane is gone (its process exited, or was killed). Its steps fail;
   * `failureOf` says how each one's failure reads.
   */
  laneLost(lane: Lane, failureOf: (dispatch: StepDispatch) => { error: SerializedError; retryable: boolean }): void {
    if (!this.lanes.delete(lane)) return;
    const onLane = this.laneLoad.get(lane);
    this.laneLoad.delete(lane);
    if (onLane) {
      for (const entry of [...onLane]) {
        if (entry.state !== "running") continue;
        // A step that was being stopped itself (canceled, timed out) ends for its own reason,
        // not as a bystander of the kill: a canceled step stays STEP_CANCELED and is not retried.
        const { error, retryable } = entry.stopping
          ? { error: withoutStack(entry.stopping), retryable: entry.stopping.code !== STEP_ERROR_CODES.canceled }
          : failureOf(entry.dispatch);
        appendStepLog(entry.dispatch.logRef, "error", `step failed: ${error.message}`, { code: error.code });
        this.complete(entry, { kind: "failed", error, retryable }, Date.now());
      }
    }
    this.options.onLaneLost?.(lane);
    this.pump();
  }

  /** Fails every step that has not reached a lane (no worker can start). */
  failWaiting(error: (dispatch: StepDispatch) => SerializedError): void {
    for (const entry of [...this.entries.values()]) {
      if (entry.state === "queued") this.finishUnstarted(entry, error(entry.dispatch), true, "step failed before it started");
    }
  }

  /**
   * Stops taking steps; drops queued ones (failed, retryable); waits up to
   * `graceMs` for running ones, then stops the rest (killing process lanes);
   * delivers every report. The caller then shuts its lanes down.
   */
  async close(graceMs: number): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const entry of [...this.entries.values()]) {
      if (entry.state === "loading" || entry.state === "queued") {
        this.finishUnstarted(
          entry,
          serializedStepError(
            STEP_ERROR_CODES.closed,
            entry.dispatch,
            `${describeTry(entry.dispatch)}: the executor closed before the step started; it can run again`,
          ),
          true,
          "step dropped: the executor closed before it started",
        );
      }
    }
    if (this.running > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (this.running > 0) {
      const stillRunning = [...this.entries.values()].filter((e) => e.state === "running");
      const lanesToKill = new Set<Lane>();
      for (const entry of stillRunning) {
        const error = stepError(
          STEP_ERROR_CODES.closed,
          entry.dispatch,
          `${describeTry(entry.dispatch)} was still running when the executor closed ` +
            `(grace period ${formatMs(graceMs)}); it was stopped and can run again`,
        );
        entry.lane?.abort(entry.dispatch.stepId, error);
        if (entry.lane?.endsBy === "kill") lanesToKill.add(entry.lane);
        else entry.lane?.abandon(entry.dispatch.stepId);
        appendStepLog(entry.dispatch.logRef, "error", `step failed: ${error.message}`, { code: error.code });
        this.complete(entry, { kind: "failed", error: withoutStack(error), retryable: true }, Date.now());
      }
      for (const lane of lanesToKill) lane.kill();
    }
    clearInterval(this.heartbeat);
    await this.reporter.drain(Date.now() + Math.max(graceMs, 5_000));
  }

  // --- internals ---------------------------------------------------------

  private async loadInputs(): Promise<void> {
    this.loadScheduled = false;
    const batch = this.pendingLoads.filter((e) => e.state === "loading");
    this.pendingLoads = [];
    if (batch.length === 0) return;
    let loaded: ReadonlyMap<number, StepInputs>;
    try {
      loaded = await this.backend.loadInputs(batch.map((e) => e.dispatch));
      if (!(loaded instanceof Map)) throw new TypeError(`backend.loadInputs returned ${typeof loaded}, not a Map`);
    } catch (err) {
      for (const entry of batch) {
        if (entry.state !== "loading") continue;
        const error =
          err instanceof TributaryError
            ? err
            : stepError(
                STEP_ERROR_CODES.inputsFailed,
                entry.dispatch,
                `${describeTry(entry.dispatch)}: loading its inputs failed: ${err instanceof Error ? err.message : String(err)}`,
                err,
              );
        this.finishUnstarted(entry, serializeError(error), true, "loading the step's inputs failed");
      }
      return;
    }
    for (const entry of batch) {
      if (entry.state !== "loading") continue;
      const result = loaded.get(entry.dispatch.stepId);
      if (!result) {
        this.finishUnstarted(
          entry,
          serializedStepError(
            STEP_ERROR_CODES.inputsFailed,
            entry.dispatch,
            `${describeTry(entry.dispatch)}: the backend returned no inputs for step ${entry.dispatch.stepId}`,
          ),
          true,
          "loading the step's inputs failed",
        );
      } else if (!result.ok) {
        this.finishUnstarted(entry, result.error, true, "loading the step's inputs failed");
      } else {
        entry.inputs = result.inputs;
        entry.state = "queued";
        this.queue.push(entry);
      }
    }
    this.pump();
  }

  /** Places queued steps on lanes, least-loaded first, one message per lane. */
  private pump(): void {
    if (this.queueHead >= this.queue.length) return;
    if (this.holdDepth > 0) {
      this.pumpHeld = true;
      return;
    }
    const outgoing = new Map<Lane, LaneStep[]>();
    while (this.queueHead < this.queue.length) {
      const entry = this.queue[this.queueHead]!;
      if (entry.state !== "queued") {
        this.queueHead++;
        continue;
      }
      const lane = this.leastLoaded();
      if (!lane) break;
      this.queueHead++;
      entry.state = "running";
      entry.lane = lane;
      this.running++;
      this.laneLoad.get(lane)!.add(entry);
      let batch = outgoing.get(lane);
      if (!batch) outgoing.set(lane, (batch = []));
      batch.push({ dispatch: entry.dispatch, inputs: entry.inputs! });
      entry.inputs = undefined;
      const timeoutMs = entry.dispatch.timeoutMs;
      if (timeoutMs !== null && timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          entry.timer = undefined;
          this.stop(entry, timeoutError(entry.dispatch, timeoutMs));
        }, timeoutMs);
      }
    }
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    for (const [lane, steps] of outgoing) lane.run(steps);
  }

  private leastLoaded(): Lane | undefined {
    let best: Lane | undefined;
    let bestLoad = Infinity;
    for (const lane of this.lanes) {
      if (!lane.accepting) continue;
      const load = this.laneLoad.get(lane)!.size;
      if (load < lane.capacity && load < bestLoad) {
        best = lane;
        bestLoad = load;
      }
    }
    return best;
  }

  /** Aborts a running step's signal; after the grace period, ends it the hard way. */
  private stop(entry: Entry, reason: TributaryError): void {
    if (entry.stopping || entry.state !== "running") return;
    entry.stopping = reason;
    const lane = entry.lane!;
    lane.abort(entry.dispatch.stepId, reason);
    entry.graceTimer = setTimeout(() => {
      entry.graceTimer = undefined;
      if (entry.state !== "running") return;
      const retryable = reason.code !== STEP_ERROR_CODES.canceled;
      const error = withKillNote(withoutStack(reason), this.options.killGraceMs, lane.endsBy === "kill" ? "killed" : "abandoned");
      appendStepLog(entry.dispatch.logRef, "error", `step failed: ${error.message}`, { code: error.code });
      if (lane.endsBy === "abandon") {
        lane.abandon(entry.dispatch.stepId);
        this.complete(entry, { kind: "failed", error, retryable }, Date.now());
        return;
      }
      // Everything else in that process dies with it: say why, and let it run again.
      const why =
        reason.code === STEP_ERROR_CODES.timeout ? `exceeded its timeout of ${formatMs(entry.dispatch.timeoutMs ?? 0)}` : "was canceled";
      this.complete(entry, { kind: "failed", error, retryable }, Date.now());
      this.laneLost(lane, (other) => ({
        error: serializedStepError(
          STEP_ERROR_CODES.killed,
          other,
          `${describeTry(other)}: its worker process (pid ${lane.pid}) was killed because step ` +
            `${entry.dispatch.stepId} (${describeTry(entry.dispatch)}) ${why} and ignored ctx.signal; ` +
            `this try can run again`,
        ),
        retryable: true,
      }));
      lane.kill();
    }, this.options.killGraceMs);
  }

  private finishUnstarted(entry: Entry, error: SerializedError, retryable: boolean, note: string): void {
    appendStepLog(entry.dispatch.logRef, "error", `${note}: ${error.message}`, { code: error.code });
    this.complete(entry, { kind: "failed", error, retryable }, Date.now());
  }

  private complete(entry: Entry, outcome: StepOutcome, endedAt: number): void {
    if (entry.state === "done") return;
    const wasRunning = entry.state === "running";
    entry.state = "done";
    entry.inputs = undefined;
    if (entry.timer) clearTimeout(entry.timer);
    if (entry.graceTimer) clearTimeout(entry.graceTimer);
    if (this.entries.get(entry.dispatch.stepId) === entry) this.entries.delete(entry.dispatch.stepId);
    if (entry.lane) this.laneLoad.get(entry.lane)?.delete(entry);
    this.report(entry, outcome, endedAt);
    if (wasRunning) {
      this.running--;
      if (this.running === 0 && this.idleWaiters.length > 0) {
        for (const wake of this.idleWaiters.splice(0)) wake();
      }
      this.pump();
    }
  }

  private report(entry: Entry, outcome: StepOutcome, endedAt = Date.now()): void {
    const d = entry.dispatch;
    this.reporter.finished({
      stepId: d.stepId,
      runId: d.runId,
      tryNumber: d.tryNumber,
      outcome,
      startedAt: entry.startedAt === null ? null : new Date(entry.startedAt),
      endedAt: new Date(endedAt),
      workerId: entry.lane?.workerId ?? this.options.workerId,
      logRef: d.logRef,
    });
  }

  private sendHeartbeat(): void {
    if (this.heartbeatInFlight || this.running === 0) return;
    const steps: { stepId: number; tryNumber: number }[] = [];
    for (const entry of this.entries.values()) {
      if (entry.state === "running") steps.push({ stepId: entry.dispatch.stepId, tryNumber: entry.dispatch.tryNumber });
    }
    this.heartbeatInFlight = true;
    Promise.resolve()
      .then(() => this.backend.heartbeat(steps))
      .catch((err: unknown) => this.options.onError(err, "sending heartbeats"))
      .finally(() => {
        this.heartbeatInFlight = false;
      });
  }
}

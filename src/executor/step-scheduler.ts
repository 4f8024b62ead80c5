import { hostname } from "node:os";
import { TributaryError, type FailureClass, type SerializedError } from "../errors/index.js";
import type { ExecutionBackend, StepDispatch, StepOutcome } from "../execution/index.js";
import { BatchReporter } from "./batch-reporter.js";
import { FifoQueue } from "./fifo-queue.js";
import { HeartbeatTimer } from "./heartbeat-timer.js";
import { InputBatcher } from "./input-batcher.js";
import type { Lane, LaneStep } from "./lane.js";
import { LaneLoads } from "./lane-loads.js";
import { newStepEntry, type StepEntry } from "./step-entry.js";
import {
  canceledError,
  closedBeforeStartError,
  describeTry,
  formatMs,
  serializedStepError,
  STEP_ERROR_CODES,
  stepError,
  stopFailureClass,
  timeoutError,
  withKillNote,
  withoutStack,
} from "./step-errors.js";
import { appendStepLog } from "./step-log.js";

export interface SchedulerOptions {
  /** Steps accepted at most: the sum of the lanes' capacities. */
  readonly capacity: number;
  readonly killGraceMs: number;
  readonly heartbeatIntervalMs: number;
  readonly flushDelayMs: number;
  readonly maxBatchSize: number;
  /**
   * How long a start report waits for the step's finish, to be sent with it (see BatchReporter). Default 0; the
   * local and in-process executors default to START_REPORT_DELAY_MS.
   */
  readonly startReportDelayMs?: number;
  /** Worker id for results of steps that never reached a lane. */
  readonly workerId: string;
  readonly onError: (err: unknown, what: string) => void;
  /** A lane died or was killed (after its steps were failed): replace it. */
  readonly onLaneLost?: (lane: Lane) => void;
}

const HOSTNAME = hostname();

/** The local and in-process executors' default startReportDelayMs: a step that ends sooner is written once. */
export const START_REPORT_DELAY_MS = 100;

/**
 * The part of an executor that does not care where code runs: the queue,
 * input loading in batches, placing steps on the least-loaded lane, timeouts
 * and their grace periods, cancellation, heartbeats, coalesced reports, and
 * an orderly close. LocalExecutor and InProcessExecutor differ only in lanes.
 */
export class StepScheduler {
  private readonly entries = new Map<number, StepEntry>();
  private readonly queue = new FifoQueue<StepEntry>();
  private readonly lanes = new LaneLoads<StepEntry>();
  private readonly inputs: InputBatcher;
  private readonly reporter: BatchReporter;
  private readonly heartbeat: HeartbeatTimer;
  private closing = false;
  private idleWaiters: (() => void)[] = [];
  private running = 0;
  /** >0 while a lane delivers a batch of events: placement waits for the end of the batch. */
  private holdDepth = 0;
  private pumpHeld = false;

  constructor(
    backend: ExecutionBackend,
    private readonly options: SchedulerOptions,
  ) {
    this.inputs = new InputBatcher(backend, {
      loaded: (entry, inputs) => {
        entry.inputs = inputs;
        entry.state = "queued";
        this.queue.push(entry);
      },
      failed: (entry, error, failureClass) => this.finishUnstarted(entry, error, true, failureClass, "loading the step's inputs failed"),
      settled: () => this.pump(),
    });
    this.reporter = new BatchReporter(backend, {
      flushDelayMs: options.flushDelayMs,
      startDelayMs: options.startReportDelayMs ?? 0,
      maxBatchSize: options.maxBatchSize,
      onError: options.onError,
      freeSlots: () => this.freeSlots(),
      onFollowUp: (steps) => this.takeFollowUps(steps),
    });
    this.heartbeat = new HeartbeatTimer(
      options.heartbeatIntervalMs,
      () => this.runningSteps(),
      (steps) => backend.heartbeat(steps),
      options.onError,
    );
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
    return this.lanes.loadOf(lane);
  }

  addLane(lane: Lane): void {
    this.lanes.add(lane);
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
      const entry = newStepEntry(dispatch);
      if (this.entries.has(dispatch.stepId)) {
        const other = this.entries.get(dispatch.stepId)!.dispatch;
        this.report(entry, {
          kind: "failed",
          retryable: false,
          // Handed out twice: the orchestrator's doing, not the step's.
          failureClass: "infrastructure",
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
      // Submits made in the same turn share one loadInputs call.
      this.inputs.add(entry);
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
      const error = closedBeforeStartError(dispatch);
      appendStepLog(dispatch.logRef, "error", `step handed back: ${error.message}`, { code: error.code });
      this.report(newStepEntry(dispatch), { kind: "failed", error, retryable: true, failureClass: "infrastructure" });
    }
  }

  cancel(stepIds: readonly number[], reason: string): void {
    for (const stepId of stepIds) {
      const entry = this.entries.get(stepId);
      if (!entry || entry.state === "done") continue;
      const error = canceledError(entry.dispatch, reason);
      if (entry.state === "running") this.stop(entry, error);
      else this.finishUnstarted(entry, withoutStack(error), false, "user", "step canceled before it started");
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
   * `failureOf` says how each one's failure reads, and whose fault it is.
   */
  laneLost(
    lane: Lane,
    failureOf: (dispatch: StepDispatch) => { error: SerializedError; retryable: boolean; failureClass: FailureClass },
  ): void {
    const onLane = this.lanes.remove(lane);
    if (!onLane) return;
    for (const entry of onLane) {
      if (entry.state !== "running") continue;
      // A step that was being stopped itself (canceled, timed out) ends for its own reason,
      // not as a bystander of the kill: a canceled step stays STEP_CANCELED and is not retried.
      const { error, retryable, failureClass } = entry.stopping
        ? {
            error: withoutStack(entry.stopping),
            retryable: entry.stopping.code !== STEP_ERROR_CODES.canceled,
            failureClass: stopFailureClass(entry.stopping),
          }
        : failureOf(entry.dispatch);
      appendStepLog(entry.dispatch.logRef, "error", `step failed: ${error.message}`, { code: error.code });
      this.complete(entry, { kind: "failed", error, retryable, failureClass }, Date.now());
    }
    this.options.onLaneLost?.(lane);
    this.pump();
  }

  /** Fails every step that has not reached a lane (no worker can start). */
  failWaiting(error: (dispatch: StepDispatch) => SerializedError): void {
    for (const entry of [...this.entries.values()]) {
      if (entry.state === "queued") {
        this.finishUnstarted(entry, error(entry.dispatch), true, "infrastructure", "step failed before it started");
      }
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
          closedBeforeStartError(entry.dispatch),
          true,
          "infrastructure",
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
        this.complete(entry, { kind: "failed", error: withoutStack(error), retryable: true, failureClass: "infrastructure" }, Date.now());
      }
      for (const lane of lanesToKill) lane.kill();
    }
    this.heartbeat.stop();
    await this.reporter.drain(Date.now() + Math.max(graceMs, 5_000));
  }

  // --- internals ---------------------------------------------------------

  /** Places queued steps on lanes, least-loaded first, one message per lane. */
  private pump(): void {
    if (this.queue.isEmpty) return;
    if (this.holdDepth > 0) {
      this.pumpHeld = true;
      return;
    }
    const outgoing = new Map<Lane, LaneStep[]>();
    for (let entry = this.queue.peek(); entry; entry = this.queue.peek()) {
      if (entry.state !== "queued") {
        this.queue.shift();
        continue;
      }
      const lane = this.lanes.leastLoaded();
      if (!lane) break;
      this.queue.shift();
      entry.state = "running";
      entry.lane = lane;
      this.running++;
      this.lanes.place(lane, entry);
      let batch = outgoing.get(lane);
      if (!batch) outgoing.set(lane, (batch = []));
      batch.push({ dispatch: entry.dispatch, inputs: entry.inputs! });
      entry.inputs = undefined;
      this.startTimeout(entry);
    }
    for (const [lane, steps] of outgoing) lane.run(steps);
  }

  /** Stops the step once it has run for its timeout. */
  private startTimeout(entry: StepEntry): void {
    const timeoutMs = entry.dispatch.timeoutMs;
    if (timeoutMs !== null && timeoutMs > 0) {
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        this.stop(entry, timeoutError(entry.dispatch, timeoutMs));
      }, timeoutMs);
    }
  }

  /** Aborts a running step's signal; after the grace period, ends it the hard way. */
  private stop(entry: StepEntry, reason: TributaryError): void {
    if (entry.stopping || entry.state !== "running") return;
    entry.stopping = reason;
    const lane = entry.lane!;
    lane.abort(entry.dispatch.stepId, reason);
    entry.graceTimer = setTimeout(() => {
      entry.graceTimer = undefined;
      if (entry.state !== "running") return;
      const retryable = reason.code !== STEP_ERROR_CODES.canceled;
      const failureClass = stopFailureClass(reason);
      const error = withKillNote(withoutStack(reason), this.options.killGraceMs, lane.endsBy === "kill" ? "killed" : "abandoned");
      appendStepLog(entry.dispatch.logRef, "error", `step failed: ${error.message}`, { code: error.code });
      if (lane.endsBy === "abandon") {
        lane.abandon(entry.dispatch.stepId);
        this.complete(entry, { kind: "failed", error, retryable, failureClass }, Date.now());
        return;
      }
      // Everything else in that process dies with it: say why, and let it run again.
      const why =
        reason.code === STEP_ERROR_CODES.timeout ? `exceeded its timeout of ${formatMs(entry.dispatch.timeoutMs ?? 0)}` : "was canceled";
      this.complete(entry, { kind: "failed", error, retryable, failureClass }, Date.now());
      // The others in that process are bystanders: their tries end for a reason that is not theirs.
      this.laneLost(lane, (other) => ({
        error: serializedStepError(
          STEP_ERROR_CODES.killed,
          other,
          `${describeTry(other)}: its worker process (pid ${lane.pid}) was killed because step ` +
            `${entry.dispatch.stepId} (${describeTry(entry.dispatch)}) ${why} and ignored ctx.signal; ` +
            `this try can run again`,
        ),
        retryable: true,
        failureClass: "infrastructure",
      }));
      lane.kill();
    }, this.options.killGraceMs);
  }

  private finishUnstarted(entry: StepEntry, error: SerializedError, retryable: boolean, failureClass: FailureClass, note: string): void {
    appendStepLog(entry.dispatch.logRef, "error", `${note}: ${error.message}`, { code: error.code });
    this.complete(entry, { kind: "failed", error, retryable, failureClass }, Date.now());
  }

  private complete(entry: StepEntry, outcome: StepOutcome, endedAt: number): void {
    if (entry.state === "done") return;
    const wasRunning = entry.state === "running";
    entry.state = "done";
    entry.inputs = undefined;
    if (entry.timer) clearTimeout(entry.timer);
    if (entry.graceTimer) clearTimeout(entry.graceTimer);
    if (this.entries.get(entry.dispatch.stepId) === entry) this.entries.delete(entry.dispatch.stepId);
    if (entry.lane) this.lanes.release(entry.lane, entry);
    this.report(entry, outcome, endedAt);
    if (wasRunning) {
      this.running--;
      if (this.running === 0 && this.idleWaiters.length > 0) {
        for (const wake of this.idleWaiters.splice(0)) wake();
      }
      this.pump();
    }
  }

  /** The result of a step that reached no lane is reported under the executor's own worker id. */
  private report(entry: StepEntry, outcome: StepOutcome, endedAt = Date.now()): void {
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

  /** Steps to send heartbeats for: those running, and those whose finish waits to be delivered (see BatchReporter). */
  private runningSteps(): { stepId: number; tryNumber: number }[] {
    const steps = this.reporter.undeliveredFinishes();
    if (this.running === 0) return steps;
    for (const entry of this.entries.values()) {
      if (entry.state === "running") steps.push({ stepId: entry.dispatch.stepId, tryNumber: entry.dispatch.tryNumber });
    }
    return steps;
  }
}

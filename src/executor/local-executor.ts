import { availableParallelism, hostname } from "node:os";
import path from "node:path";
import { describeTry, serializedStepError, STEP_ERROR_CODES } from "./step-errors.js";
import { ScheduledExecutor } from "./scheduled-executor.js";
import { StepScheduler, START_REPORT_DELAY_MS } from "./step-scheduler.js";
import type { ExecutionBackend, Executor } from "../execution/index.js";
import { describeExit, WorkerProcess, type WorkerExit } from "./worker-process.js";
import type { HostCall } from "./worker-protocol.js";

export interface LocalExecutorOptions {
  /** Worker child processes kept running. Default: os.availableParallelism(). */
  readonly processes?: number;
  /**
   * Steps one process runs at once. Default 4: most steps wait on I/O
   * (databases, HTTP, object storage), so a few share a process well. The
   * price: a crash or out-of-memory kill ends every step in that process
   * (a crash or running out of the heap counts as a user failure of each of
   * them, since no one can tell which step caused it), and CPU-bound steps
   * slow each other down. Set 1 for heavy steps.
   */
  readonly concurrencyPerProcess?: number;
  /** Heap limit of each process (--max-old-space-size). Default 1024. */
  readonly memoryMb?: number;
  /** After a timeout or cancel aborts ctx.signal, how long the function gets to return before its process is killed. Default 5 000. */
  readonly killGraceMs?: number;
  /** How often running steps are heartbeated (one backend call for all). Default 5 000. */
  readonly heartbeatIntervalMs?: number;
  /**
   * The definitions directory: files under it load as ES modules and
   * resolve `tributary` to this SDK. Without it, each definitions file's own
   * directory is used, which misses helpers imported from sibling folders.
   */
  readonly definitionsDir?: string;
  /** How long the first started/finished report waits for others to share a backend call. Default 1. */
  readonly flushDelayMs?: number;
  /** Most reports per backend call. Default 500. */
  readonly maxBatchSize?: number;
  /**
   * How long a step's start waits to be reported with its end. A step that ends sooner is written once instead of
   * at its start and again at its end; a longer one shows as running this much later. Default 100.
   */
  readonly startReportDelayMs?: number;
  /** Backend calls that failed (they are retried) and worker start-up failures. Default: console.error. */
  readonly onError?: (err: unknown, what: string) => void;
}

/** Consecutive start-up failures after which waiting steps fail instead of waiting on a worker. */
const START_FAILURES_BEFORE_GIVING_UP = 3;
const RESPAWN_BACKOFF_MAX_MS = 30_000;
const SHUTDOWN_GRACE_MS = 2_000;

/**
 * Runs steps in a pool of long-lived worker child processes on this host:
 * `processes` children, each running up to `concurrencyPerProcess` steps at
 * once, each with a heap limit. Children start up front and are replaced
 * when one dies; a step never waits for a process to spawn.
 *
 * A definitions file is imported once per process and reused by every step
 * that needs it; call `reload()` after definitions change.
 *
 * @example
 * import type { ExecutionBackend, StepDispatch } from "../execution/index.js";
 * // given backend: ExecutionBackend, steps: readonly StepDispatch[]
 * const executor = new LocalExecutor(backend, { processes: 4, definitionsDir: "asset-definitions" });
 * await executor.ready();
 * executor.submit(steps);              // results arrive through backend.finished
 * await executor.close({ graceMs: 10_000 });
 */
export class LocalExecutor extends ScheduledExecutor implements Executor {
  readonly kind = "local";
  protected readonly scheduler: StepScheduler;
  private readonly workers = new Set<WorkerProcess>();
  /** Processes taken out of service (killed, retired) that may not have exited yet: close() waits for them. */
  private readonly exiting = new Set<Promise<void>>();
  private readonly processes: number;
  private readonly concurrency: number;
  private readonly memoryMb: number;
  private readonly definitionsDir: string | undefined;
  private readonly onError: (err: unknown, what: string) => void;
  private startFailures = 0;
  private respawnTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private readyWaiters: (() => void)[] = [];

  constructor(
    private readonly backend: ExecutionBackend,
    options: LocalExecutorOptions = {},
  ) {
    super();
    this.processes = positive(options.processes ?? availableParallelism(), "processes");
    this.concurrency = positive(options.concurrencyPerProcess ?? 4, "concurrencyPerProcess");
    this.memoryMb = positive(options.memoryMb ?? 1024, "memoryMb");
    this.definitionsDir = options.definitionsDir === undefined ? undefined : path.resolve(options.definitionsDir);
    this.onError = options.onError ?? ((err, what) => console.error(`tributary local executor: ${what}:`, err));
    this.scheduler = new StepScheduler(backend, {
      capacity: this.processes * this.concurrency,
      killGraceMs: options.killGraceMs ?? 5_000,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 5_000,
      flushDelayMs: options.flushDelayMs ?? 1,
      maxBatchSize: options.maxBatchSize ?? 500,
      startReportDelayMs: options.startReportDelayMs ?? START_REPORT_DELAY_MS,
      workerId: `local:${hostname()}:${process.pid}`,
      onError: this.onError,
      onLaneLost: (lane) => this.replace(lane as WorkerProcess),
    });
    for (let i = 0; i < this.processes; i++) this.spawn();
  }

  /** Resolves once every worker process is started (steps submitted earlier simply wait for them). */
  ready(): Promise<void> {
    if (this.closing || this.readyCount() >= this.processes) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /**
   * Replaces every worker process, so changed definitions files are imported
   * afresh: new processes take new steps at once; the old ones finish what
   * they run, then exit.
   */
  reload(): void {
    if (this.closing) return;
    const old = [...this.workers].filter((w) => !w.isRetiring);
    for (const worker of old) worker.retire();
    for (let i = 0; i < this.processes; i++) this.spawn();
    for (const worker of old) this.retireIfIdle(worker);
  }

  /** The live worker processes and how many steps each runs. */
  workerProcesses(): { workerId: string; pid: number; ready: boolean; running: number }[] {
    return [...this.workers].map((w) => ({ workerId: w.workerId, pid: w.pid, ready: w.ready, running: this.scheduler.loadOf(w) }));
  }

  close(options: { graceMs?: number } = {}): Promise<void> {
    this.closing ??= this.doClose(options.graceMs ?? 30_000);
    return this.closing;
  }

  private async doClose(graceMs: number): Promise<void> {
    if (this.respawnTimer) clearTimeout(this.respawnTimer);
    await this.scheduler.close(graceMs);
    await Promise.all([...this.workers].map((w) => w.shutdown(SHUTDOWN_GRACE_MS)));
    this.workers.clear();
    await Promise.all([...this.exiting]);
    for (const wake of this.readyWaiters.splice(0)) wake();
  }

  private readyCount(): number {
    let n = 0;
    for (const w of this.workers) if (w.ready && !w.isRetiring) n++;
    return n;
  }

  private spawn(): void {
    const worker = new WorkerProcess(
      { memoryMb: this.memoryMb, capacity: this.concurrency, definitionsDir: this.definitionsDir },
      {
        ready: (w) => {
          this.startFailures = 0;
          this.scheduler.addLane(w);
          if (this.readyCount() >= this.processes) for (const wake of this.readyWaiters.splice(0)) wake();
        },
        batch: (handle) => this.scheduler.batched(handle),
        started: (w, stepId, tryNumber, at) => this.scheduler.started(w, stepId, tryNumber, at),
        finished: (w, stepId, tryNumber, outcome, startedAt, endedAt) => {
          this.scheduler.finished(w, stepId, tryNumber, outcome, startedAt, endedAt);
          if (w.isRetiring) this.retireIfIdle(w);
        },
        call: (call) => answerHostCall(this.backend, call),
        exited: (w, exit) => this.onExit(w, exit),
      },
    );
    this.workers.add(worker);
  }

  private onExit(worker: WorkerProcess, exit: WorkerExit): void {
    if (exit.beforeReady) {
      this.forget(worker);
      this.startFailures++;
      const { message } = describeExit(exit, this.memoryMb);
      this.onError(new Error(`a worker process failed to start: ${message}`), "starting a worker process");
      if (this.startFailures >= START_FAILURES_BEFORE_GIVING_UP && this.readyCount() === 0) {
        this.scheduler.failWaiting((d) =>
          serializedStepError(
            STEP_ERROR_CODES.startFailed,
            d,
            `${describeTry(d)}: no worker process could be started (${this.startFailures} attempts): ${message}`,
          ),
        );
      }
      // Back off: a broken install would otherwise fork in a tight loop.
      const delay = Math.min(RESPAWN_BACKOFF_MAX_MS, 250 * 2 ** Math.min(this.startFailures, 10));
      this.scheduleRespawn(delay);
      return;
    }
    const { code, message, failureClass } = describeExit(exit, this.memoryMb);
    this.scheduler.laneLost(worker, (d) => ({
      error: serializedStepError(code, d, `${describeTry(d)}: ${message}; this try can run again`),
      retryable: true,
      failureClass,
    }));
    // A retiring or already-replaced worker is not replaced; laneLost replaces live ones.
    this.forget(worker);
  }

  /** A lane the scheduler gave up on (it died or was killed): start another in its place. */
  private replace(worker: WorkerProcess): void {
    this.forget(worker);
    if (this.closing || this.scheduler.isClosing || worker.isRetiring) return;
    this.spawn();
  }

  /** Out of the pool; close() still waits for the process to be gone. */
  private forget(worker: WorkerProcess): void {
    if (!this.workers.delete(worker)) return;
    const closed = worker.closed.then(() => {
      this.exiting.delete(closed);
    });
    this.exiting.add(closed);
  }

  private scheduleRespawn(delayMs: number): void {
    if (this.respawnTimer || this.closing) return;
    this.respawnTimer = setTimeout(() => {
      this.respawnTimer = undefined;
      if (this.closing) return;
      const live = [...this.workers].filter((w) => !w.isRetiring).length;
      for (let i = live; i < this.processes; i++) this.spawn();
    }, delayMs);
    this.respawnTimer.unref();
  }

  private retireIfIdle(worker: WorkerProcess): void {
    if (!worker.isRetiring || this.scheduler.loadOf(worker) > 0) return;
    this.forget(worker);
    this.scheduler.laneLost(worker, () => {
      throw new Error("unreachable: an idle worker has no steps");
    });
    void worker.shutdown(SHUTDOWN_GRACE_MS);
  }
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`LocalExecutor: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

/** Answers a worker child's host call through the backend. */
function answerHostCall(backend: ExecutionBackend, call: HostCall): Promise<unknown> {
  if (call.method === "addDynamicPartitions") return backend.addDynamicPartitions(call.name, call.keys);
  return backend.materialized(call.assetKey, call.partitionKey);
}

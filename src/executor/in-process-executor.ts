import { pathToFileURL } from "node:url";
import type { SecretResolver } from "./secrets.js";
import type { TributaryError } from "../errors/index.js";
import { captureConsole, guardProcessExit } from "./process-guards.js";
import { StepRuntime } from "./step-runtime.js";
import type { Lane, LaneStep } from "./lane.js";
import { ScheduledExecutor } from "./scheduled-executor.js";
import { ABANDONED } from "./step-outcomes.js";
import { StepScheduler, START_REPORT_DELAY_MS } from "./step-scheduler.js";
import type { ExecutionBackend, Executor } from "../execution/index.js";

export interface InProcessExecutorOptions {
  /** Where ctx.secrets.get looks; default: environment variables. */
  readonly secrets?: SecretResolver;
  /** Steps run at once. Default 16. */
  readonly concurrency?: number;
  /** After a timeout or cancel aborts ctx.signal, how long to wait for the function before giving up on it. Default 5 000. */
  readonly killGraceMs?: number;
  readonly heartbeatIntervalMs?: number;
  readonly flushDelayMs?: number;
  readonly maxBatchSize?: number;
  /** How long a step's start waits to be reported with its end (as LocalExecutorOptions.startReportDelayMs). Default 100. */
  readonly startReportDelayMs?: number;
  /**
   * How a definitions file is imported. Default: `import()` of the file,
   * which in a test runner goes through its TypeScript transform. Tests may
   * hand over module namespaces directly.
   */
  readonly importModule?: (file: string) => Promise<Record<string, unknown>>;
  readonly onError?: (err: unknown, what: string) => void;
}

/**
 * FOR UNIT TESTS ONLY. The Executor contract, run in the current process
 * with the same runtime as a worker (context, JSON outputs, logs, console
 * capture, process.exit guard), so tests of the reconciler and the API run
 * without child processes. What it cannot do: isolate memory, or stop a
 * function that ignores ctx.signal (after the grace period the try is
 * reported failed and abandoned, still running). Never use it for real work.
 *
 * @example
 * import type { ExecutionBackend, StepDispatch } from "../execution/index.js";
 * // given backend: ExecutionBackend, dispatch: StepDispatch, orders: AssetDefinition
 * const executor = new InProcessExecutor(backend, { importModule: async () => ({ orders }) });
 * executor.submit([dispatch]);   // backend.finished receives the result
 * await executor.close();
 */
export class InProcessExecutor extends ScheduledExecutor implements Executor {
  readonly kind = "in-process";
  protected readonly scheduler: StepScheduler;
  private readonly undo: (() => void)[];
  private closing: Promise<void> | undefined;

  constructor(backend: ExecutionBackend, options: InProcessExecutorOptions = {}) {
    super();
    const concurrency = options.concurrency ?? 16;
    this.scheduler = new StepScheduler(backend, {
      capacity: concurrency,
      killGraceMs: options.killGraceMs ?? 5_000,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 5_000,
      flushDelayMs: options.flushDelayMs ?? 1,
      maxBatchSize: options.maxBatchSize ?? 500,
      startReportDelayMs: options.startReportDelayMs ?? START_REPORT_DELAY_MS,
      workerId: `in-process:${process.pid}`,
      onError: options.onError ?? ((err, what) => console.error(`tributary in-process executor: ${what}:`, err)),
    });
    const runtime = new StepRuntime({
      importModule: options.importModule ?? (async (file) => (await import(pathToFileURL(file).href)) as Record<string, unknown>),
      addDynamicPartitions: (name, keys) => backend.addDynamicPartitions(name, keys),
      materialized: (assetKey, partitionKey) => backend.materialized(assetKey, partitionKey),
      ...(options.secrets ? { secrets: options.secrets } : {}),
    });
    this.scheduler.addLane(new InProcessLane(runtime, concurrency, this.scheduler));
    this.undo = [captureConsole(), guardProcessExit("exit").undo];
  }

  close(options: { graceMs?: number } = {}): Promise<void> {
    this.closing ??= this.scheduler.close(options.graceMs ?? 30_000).finally(() => {
      for (const undo of this.undo) undo();
    });
    return this.closing;
  }
}

class InProcessLane implements Lane {
  readonly endsBy = "abandon" as const;
  readonly accepting = true;
  readonly workerId = `in-process:${process.pid}`;
  readonly pid = process.pid;

  constructor(
    private readonly runtime: StepRuntime,
    readonly capacity: number,
    private readonly scheduler: StepScheduler,
  ) {}

  run(steps: readonly LaneStep[]): void {
    for (const { dispatch: d, inputs } of steps) {
      void this.runtime
        .run(d, inputs, (at) => this.scheduler.started(this, d.stepId, d.tryNumber, at))
        .then((end) => this.scheduler.finished(this, d.stepId, d.tryNumber, end.outcome, end.startedAt, end.endedAt));
    }
  }

  abort(stepId: number, reason: TributaryError): void {
    this.runtime.abort(stepId, reason);
  }

  abandon(stepId: number): void {
    this.runtime.abandon(stepId, ABANDONED);
  }

  kill(): void {
    // Nothing to kill in-process.
  }
}

import os from "node:os";
import { LocalExecutor, StoreExecutionBackend, type Executor } from "../executor/index.js";
import { buildDispatch, Reconciler } from "../reconciler/index.js";
import type { Runtime } from "./runtime.js";

export interface ExecutionOptions {
  /** Worker processes of the local executor (default: the number of cores). */
  readonly processes?: number;
  readonly concurrencyPerProcess?: number;
  readonly zombieAfterMs?: number;
  readonly queuedTimeoutMs?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

export interface Execution {
  readonly reconciler: Reconciler;
  readonly executor: Executor;
  stop(options?: { graceMs?: number }): Promise<void>;
}

/** Starts a reconciler and the local executor in this process (what `dev` and in-process commands run). */
export async function startExecution(runtime: Runtime, options: ExecutionOptions = {}): Promise<Execution> {
  const dirs = { definitionsDir: runtime.settings.definitionsDir, logsDir: runtime.logsDir };
  const backend = new StoreExecutionBackend({
    runs: runtime.runs,
    definitions: runtime.definitions,
    graphs: runtime.graphs,
    outputStore: runtime.outputStore,
    followUp: { executor: "local", dispatchOf: (claim, asset) => buildDispatch(claim, asset, dirs) },
  });
  const executor = new LocalExecutor(backend, {
    processes: options.processes ?? os.availableParallelism(),
    ...(options.concurrencyPerProcess ? { concurrencyPerProcess: options.concurrencyPerProcess } : {}),
    definitionsDir: runtime.settings.definitionsDir,
    ...(options.log ? { onError: (err: unknown, what: string) => options.log?.("error", `${what}: ${(err as Error)?.message ?? String(err)}`) } : {}),
  });
  const reconciler = new Reconciler({
    store: runtime.runs,
    database: runtime.database,
    graphs: runtime.graphs,
    executors: { local: executor },
    definitionsDir: runtime.settings.definitionsDir,
    logsDir: runtime.logsDir,
    ...(options.zombieAfterMs ? { zombieAfterMs: options.zombieAfterMs } : {}),
    ...(options.queuedTimeoutMs ? { queuedTimeoutMs: options.queuedTimeoutMs } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  await reconciler.start();
  return {
    reconciler,
    executor,
    async stop(stopOptions = {}) {
      await reconciler.stop();
      await executor.close(stopOptions);
    },
  };
}

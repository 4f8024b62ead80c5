import { hostname } from "node:os";
import path from "node:path";
import pc from "picocolors";
import { InputError } from "../../errors/index.js";
import type { ExecutionBackend } from "../../execution/index.js";
import { HttpExecutionBackend, loadBullmq, StoreExecutionBackend, type BullmqStepWorker } from "../../executor/index.js";
import { serverIsUp } from "../server-client.js";
import { durationMs, positiveInt } from "../options.js";
import { openRuntime } from "../runtime.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { WorkerCommandOptions } from "./worker.js";
import { backoffDelayMs, DependencyHealth, RECONNECT_BACKOFF, untilStopSignal } from "../../health/index.js";

/** `tributary worker`: runs BullMQ steps until SIGINT/SIGTERM, then stops gracefully. */
export async function runWorker(opts: WorkerCommandOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  if (!settings.redisUrl) {
    throw new InputError("tributary worker takes steps from Redis: set REDIS_URL (e.g. redis://127.0.0.1:6379)", {
      code: "CLI_USAGE",
      location: { field: "REDIS_URL" },
    });
  }
  const queues = (opts.queues ?? "default")
    .split(",")
    .map((q) => q.trim())
    .filter((q) => q !== "");
  const bad = queues.find((q) => !/^[A-Za-z0-9_.-]{1,200}$/.test(q));
  if (queues.length === 0 || bad !== undefined) {
    throw new InputError(
      `--queues: "${bad ?? opts.queues}" is not a queue name (letters, digits, '_', '.' and '-'), e.g. --queues default,gpu`,
      { code: "CLI_USAGE", location: { field: "--queues" } },
    );
  }
  const processes = positiveInt(opts.processes, "--processes");
  const concurrencyPerProcess = positiveInt(opts.concurrency, "--concurrency");
  const memoryMb = positiveInt(opts.memoryMb, "--memory-mb");
  const graceMs = durationMs(opts.grace, "--grace") ?? 30_000;
  const log = (level: "info" | "warn" | "error", message: string) =>
    process.stderr.write(`${pc.dim(new Date().toISOString())} ${level === "error" ? pc.red(level) : level} ${message}\n`);
  const name = `${hostname()}:${process.pid}`;
  let worker: BullmqStepWorker | undefined;
  const health = new DependencyHealth({ log });
  const { backend, close } = await workerBackend(settings, log, health, (stepId, tryNumber, reason) =>
    worker?.cancelTry(stepId, tryNumber, reason),
  );
  worker = new (await loadBullmq()).BullmqStepWorker({
    redisUrl: settings.redisUrl,
    ...(settings.redisPrefix ? { prefix: settings.redisPrefix } : {}),
    queues,
    backend,
    name,
    definitionsDir: settings.definitionsDir,
    health,
    logsDir: path.resolve(opts.logsDir ?? path.join(settings.dataDir, "worker-logs")),
    ...(processes ? { processes } : {}),
    ...(concurrencyPerProcess ? { concurrencyPerProcess } : {}),
    ...(memoryMb ? { memoryMb } : {}),
    log,
  });
  try {
    await worker.start();
    log("info", `worker ${name} takes steps from queue(s) ${queues.join(", ")}`);
    const signal = await untilStopSignal();
    log("info", `${signal}: taking no more steps; running ones get ${Math.round(graceMs / 1000)} s to finish`);
  } finally {
    await worker.stop(graceMs);
    await close();
    health.close();
  }
  log("info", "worker stopped");
}

/**
 * Where the worker reports: the execution API of the server at --url (TRIBUTARY_URL), holding no database
 * credentials; or, when DATABASE_URL is set, the metadata database itself (a trusted host on its network).
 */
async function workerBackend(
  settings: Settings,
  log: (level: "info" | "warn" | "error", message: string) => void,
  health: DependencyHealth,
  stop: (stepId: number, tryNumber: number, reason: string) => void,
): Promise<{ backend: ExecutionBackend; close(): Promise<void> }> {
  if (settings.databaseUrl) {
    const runtime = await openRuntime(settings, { health });
    log(
      "warn",
      "DATABASE_URL is set: this worker reports to the metadata database directly (unset it to report through the execution API)",
    );
    const backend = new StoreExecutionBackend({
      runs: runtime.runs,
      definitions: runtime.definitions,
      graphs: runtime.graphs,
      outputStore: runtime.outputStore,
    });
    return { backend, close: () => runtime.close() };
  }
  // Processes start in any order (Kubernetes, systemd): a server that does not answer yet is waited for.
  for (let attempt = 0; !(await serverIsUp(settings.serverUrl)); attempt++) {
    health.failed(
      "api",
      new Error(`no Tributary server (tributary api) answers at ${settings.serverUrl}; start one, or point --url / TRIBUTARY_URL at it`),
    );
    await new Promise((resolve) => setTimeout(resolve, backoffDelayMs(attempt, RECONNECT_BACKOFF)));
  }
  health.recovered("api");
  const backend = new HttpExecutionBackend({
    url: settings.serverUrl,
    health,
    onTryRejected: (step, error) => stop(step.stepId, step.tryNumber, `the server refused try ${step.tryNumber}: ${error.message}`),
    log: (message) => log("warn", message),
  });
  log("info", `reporting through the execution API at ${settings.serverUrl}`);
  return { backend, close: () => backend.close() };
}

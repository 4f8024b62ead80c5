import type { Server } from "node:http";
import type { ServerType } from "@hono/node-server";
import { sql } from "kysely";
import pc from "picocolors";
import { metricsApp, observabilityOf, type Observability } from "../../api/index.js";
import { InputError } from "../../errors/index.js";
import { watchDefinitions } from "../../loader/index.js";
import { lastLoadFromStore, persistLoad, syncDefinitions } from "../definitions-sync.js";
import { startExecution } from "../execution.js";
import { durationMs, positiveInt } from "../options.js";
import { embeddedDbDir, openRuntime, processHealth, untilReachable } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import { VERSION } from "../version.js";
import { serveHttp } from "./api-server.js";
import type { ReconcilerCommandOptions } from "./reconciler.js";
import { untilStopSignal } from "../../health/index.js";

/** The environment variable that sets `--metrics-port` when the flag is not given. */
export const METRICS_PORT_ENV = "TRIBUTARY_METRICS_PORT";

/** `tributary reconciler`: loads the definitions, then schedules and runs steps until SIGINT/SIGTERM. */
export async function runReconciler(opts: ReconcilerCommandOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
  const concurrencyPerProcess = positiveInt(opts.concurrencyPerProcess, "--concurrency-per-process");
  const zombieAfterMs = durationMs(opts.zombieAfter, "--zombie-after");
  const queuedTimeoutMs = durationMs(opts.queuedTimeout, "--queued-timeout");
  const presumedDeadAfterMs = durationMs(opts.presumedDeadAfter, "--presumed-dead-after");
  if (presumedDeadAfterMs !== undefined && presumedDeadAfterMs < 2_000) {
    throw new InputError(
      `--presumed-dead-after: "${opts.presumedDeadAfter}" is shorter than 2s; a live reconciler heartbeats every few seconds and would be presumed dead`,
      { code: "CLI_USAGE", location: { field: "--presumed-dead-after" } },
    );
  }
  const metricsPort = metricsPortOf(opts.metricsPort, process.env[METRICS_PORT_ENV]);
  if (opts.localSteps !== "processes" && opts.localSteps !== "workers") {
    throw new InputError(`--local-steps: "${opts.localSteps}" is neither "processes" nor "workers"`, {
      code: "CLI_USAGE",
      location: { field: "--local-steps" },
    });
  }
  if (opts.localSteps === "workers" && !settings.redisUrl) {
    throw new InputError("--local-steps workers sends steps to the BullMQ fleet: set REDIS_URL (e.g. redis://127.0.0.1:6379)", {
      code: "CLI_USAGE",
      location: { field: "REDIS_URL" },
    });
  }
  const log = (msg: string) => process.stderr.write(`${pc.dim(new Date().toISOString())} ${msg}\n`);
  const health = processHealth(log);
  const runtime = await openRuntime(settings, { health });
  log(`database: ${runtime.database.kind === "pglite" ? `embedded (${embeddedDbDir(settings)})` : "postgres (DATABASE_URL)"}`);
  // Any reconciler may store the definitions: an unchanged content hash writes nothing.
  const watcher = opts.watch
    ? watchDefinitions(
        settings.definitionsDir,
        // Stored once the database answers, however long it is away: a load is never dropped for an outage.
        (change) =>
          untilReachable(health, () =>
            persistLoad(runtime.definitions, change.result, {
              ...(change.initial ? {} : { reloaded: change.reloaded }),
              removed: change.removed,
            }),
          ).then(() => undefined),
        {
          timeoutMs: settings.loadTimeoutMs,
          ...(await untilReachable(health, () => lastLoadFromStore(runtime.definitions))),
          onError: (err) => log(`${pc.red("error")} reloading definitions: ${(err as Error).message}`),
        },
      )
    : undefined;
  if (watcher) await watcher.ready;
  else {
    const { version, changed, result } = await untilReachable(health, () =>
      syncDefinitions(runtime.definitions, { dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs }),
    );
    log(`definitions: ${result.snapshot.assets.length} assets, version ${version}${changed ? " (new)" : ""}`);
    for (const f of result.files) if (f.status === "error") log(`${pc.red("error")} ${f.error?.message ?? f.file}`);
  }
  const metrics = metricsPort === undefined ? undefined : await serveMetrics(runtime, metricsPort, opts.metricsHost);
  if (metrics) log(`serving metrics at http://${opts.metricsHost}:${metrics.port}/metrics`);
  const execution = await startExecution(runtime, {
    automation: true,
    ...(metrics ? { onPass: metrics.observability.metrics.observeReconcilerPass } : {}),
    ...(processes ? { processes } : {}),
    ...(concurrencyPerProcess ? { concurrencyPerProcess } : {}),
    ...(zombieAfterMs ? { zombieAfterMs } : {}),
    ...(queuedTimeoutMs ? { queuedTimeoutMs } : {}),
    ...(presumedDeadAfterMs ? { presumedDeadAfterMs } : {}),
    localSteps: opts.localSteps,
    log: (level, message) => log(`${level === "error" ? pc.red(level) : level} ${message}`),
  });
  log(`reconciler ${execution.reconciler.id} is running`);
  const signal = await untilStopSignal();
  log(`${signal}: finishing running steps (up to 30 s), then stopping`);
  await watcher?.close();
  await execution.stop({ graceMs: 30_000 });
  await metrics?.close();
  await runtime.close();
  health.close();
}

/** `--metrics-port`, else the environment's TRIBUTARY_METRICS_PORT, else undefined (not served). */
function metricsPortOf(flag: string | undefined, env: string | undefined): number | undefined {
  const [value, source] = flag !== undefined ? [flag, "--metrics-port"] : env ? [env, METRICS_PORT_ENV] : [undefined, ""];
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new InputError(`${source}: "${value}" is not a port number (0–65535; 0: any free port)`);
  return port;
}

/**
 * This reconciler's /metrics, /healthz and /readyz. Only what this process
 * knows is rendered (its passes and tasks, process metrics): the
 * database-wide gauges are the API's, so several reconcilers do not repeat them.
 */
async function serveMetrics(
  runtime: Awaited<ReturnType<typeof openRuntime>>,
  port: number,
  hostname: string,
): Promise<{ port: number; observability: Observability; close(): Promise<void> }> {
  const observability = observabilityOf(
    { migrationStatus: runtime.observabilityStores.migrationStatus },
    { processMetrics: true, dependencies: () => runtime.health.states() },
  );
  const ping = async () => {
    await sql`select 1`.execute(runtime.database.db);
  };
  const app = metricsApp(ping, observability, VERSION);
  let server: ServerType;
  try {
    server = await new Promise<ServerType>((resolve, reject) => {
      const s = serveHttp(app.fetch, port, hostname, () => resolve(s));
      s.once("error", (err: NodeJS.ErrnoException) =>
        reject(
          err.code === "EADDRINUSE" ? new InputError(`--metrics-port: port ${port} on ${hostname} is already in use; choose another`) : err,
        ),
      );
    });
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const bound = server.address();
  return {
    port: typeof bound === "object" && bound ? bound.port : port,
    observability,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as Server).closeAllConnections();
      }),
  };
}

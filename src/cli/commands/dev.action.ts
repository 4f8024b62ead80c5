import pc from "picocolors";
import { insecureWarning, runsOpen } from "../access-mode.js";
import { watchDefinitions, type DefinitionsChange } from "../../loader/index.js";
import { lastLoadFromStore, persistLoad } from "../definitions-sync.js";
import { startExecution } from "../execution.js";
import { positiveInt } from "../options.js";
import { processHealth, untilReachable } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import { startTriggerer, type RunningTriggerer } from "../triggerer-start.js";
import { openServingRuntime, parsePort, startApiServer } from "./api-server.js"; // the server `tributary api` shares
import { untilStopSignal } from "../../health/index.js";

export interface DevOptions {
  port: string;
  host: string;
  processes?: string;
  concurrencyPerProcess?: string;
  auth?: boolean;
  insecureNoAuth?: boolean;
}

/** `tributary dev`: the database, the definitions watcher and the HTTP server in one process. */
export async function runDev(opts: DevOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const port = parsePort(opts.port);
  const processes = positiveInt(opts.processes, "--processes");
  const concurrencyPerProcess = positiveInt(opts.concurrencyPerProcess, "--concurrency-per-process");
  const log = (msg: string) => process.stderr.write(`${pc.dim(new Date().toISOString())} ${msg}\n`);

  const open = runsOpen("dev", opts.host, opts);
  const health = processHealth(log);
  if (opts.insecureNoAuth) log(pc.yellow(insecureWarning(opts.host)));
  const runtime = await openServingRuntime(settings, { openAccess: open, health }, log);

  // Until the first definitions load is stored, GraphQL waits rather than answering with an empty graph.
  // Meanwhile /readyz answers 503 and definitionsStatus says LOADING.
  let resolveInitialLoad!: (ready: Promise<void>) => void;
  runtime.catalog.waitFor(new Promise<void>((resolve, reject) => (resolveInitialLoad = (ready) => void ready.then(resolve, reject))));
  const server = await startApiServer(runtime, { port, host: opts.host, definitionsDir: settings.definitionsDir });
  log(`serving UI and GraphQL at http://${opts.host}:${server.port} (GraphQL at /graphql)`);

  // Triggerer: started below; reimports the definitions for custom trigger kinds when they change.
  let triggerer: RunningTriggerer | undefined;
  const onChange = async (change: DefinitionsChange) => {
    if (!change.initial) void triggerer?.reloadKinds();
    // Stored once the database answers, however long it is away: a load is never dropped for an outage.
    const saved = await untilReachable(health, () =>
      persistLoad(runtime.definitions, change.result, {
        ...(change.initial ? {} : { reloaded: change.reloaded }),
        removed: change.removed,
      }),
    );
    runtime.catalog.loaded();
    const errors = change.result.files.filter((f) => f.status === "error");
    const problems = errors.length + change.result.problems.length;
    log(
      `definitions ${change.initial ? "loaded" : `reloaded (${change.reloaded.join(", ") || "no files"})`}: ` +
        `${change.result.snapshot.assets.length} assets, ${saved.changed ? `version ${saved.version}` : "unchanged"}` +
        (problems > 0 ? pc.red(`, ${problems} problem(s)`) : ""),
    );
    for (const f of errors) log(`${pc.red("error")} ${f.error?.message ?? f.file}`);
    for (const p of change.result.problems) log(`${pc.red("error")} ${p.message}`);
  };
  const watcher = watchDefinitions(settings.definitionsDir, onChange, {
    timeoutMs: settings.loadTimeoutMs,
    ...(await untilReachable(health, () => lastLoadFromStore(runtime.definitions))),
    onError: (err) => log(`${pc.red("error")} reloading definitions: ${(err as Error).message}`),
  });
  resolveInitialLoad(watcher.ready);
  const execution = await startExecution(runtime, {
    automation: true,
    onPass: server.observability.metrics.observeReconcilerPass, // /metrics reports the reconciler's passes
    ...(processes ? { processes } : {}),
    ...(concurrencyPerProcess ? { concurrencyPerProcess } : {}),
    log: (level, message) => log(`${level === "error" ? pc.red(level) : level} ${message}`),
  });
  log(`reconciler ${execution.reconciler.id} and the local executor are running`);
  triggerer = await startTriggerer(runtime, {
    log: (level, message) => log(`${level === "error" ? pc.red(level) : level} triggerer: ${message}`),
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    await watcher.close();
    await triggerer?.stop();
    await execution.stop({ graceMs: 5_000 });
    await server.close();
    await runtime.close();
    process.exit(0);
  };
  const signal = untilStopSignal();
  await watcher.ready;
  await stop(await signal);
}

import pc from "picocolors";
import { insecureWarning, runsOpen } from "../access-mode.js";
import { triggerKindFiles, watchDefinitions, type DefinitionsChange } from "../../loader/index.js";
import { lastLoadFromStore, persistLoad } from "../definitions-sync.js";
import { startExecution } from "../execution.js";
import { positiveInt } from "../options.js";
import { DATA_DIR_ENV, processHealth, untilReachable, type Runtime } from "../runtime.js";
import { embeddedDbExists } from "../server-identity.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import { startTriggerer, type RunningTriggerer } from "../triggerer-start.js";
import { openServingRuntime, parsePort, startApiServer, type RunningApiServer } from "./api-server.js"; // the server `tributary api` shares
import { untilStopSignal } from "../../health/index.js";

/** How long the reconciler waits for the first definitions load at most. */
const EXECUTION_WAITS_FOR_LOAD_MS = 10_000;
/** Then it waits for a pause of this long in the requests the server answers, */
const CLIENTS_PAUSE_MS = 250;
/** or this long at most. */
const EXECUTION_WAITS_FOR_CLIENTS_MS = 2_000;

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

  // Taken from the start: a client may be served (and stop this process) before everything has started, and a stop
  // then waits for the start to finish, so that it closes the database and the processes cleanly.
  const signal = untilStopSignal();
  const open = runsOpen("dev", opts.host, opts);
  const health = processHealth(log);
  if (opts.insecureNoAuth) log(pc.yellow(insecureWarning(opts.host)));
  // A new database has nothing to answer with until the definitions are imported: they are imported in their child
  // processes while it opens (they inherit the data directory). A reopened embedded one answers with the definitions
  // it stored, so they are imported once it is open: importing them meanwhile (esbuild and a child process on a
  // machine's few cores) slows the open more than it saves.
  const reopening = !settings.databaseUrl && embeddedDbExists(settings);
  process.env[DATA_DIR_ENV] = settings.dataDir;
  const opening = openServingRuntime(settings, { openAccess: open, health }, log);
  const previous = opening.then((r) => untilReachable(health, () => lastLoadFromStore(r.definitions)));
  previous.catch(() => undefined); // awaited by the first load; a database that does not open is reported below

  // Triggerer: started below; reimports the definitions for custom trigger kinds when they change.
  let triggerer: RunningTriggerer | undefined;
  /** The first load's files that export custom trigger kinds, once it is over and while nothing changed since. */
  let firstKindFiles: string[] | undefined;
  const onChange = async (change: DefinitionsChange) => {
    firstKindFiles = change.initial ? triggerKindFiles(change.result.files) : undefined;
    const runtime = await opening;
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
  if (reopening) await opening;
  const watcher = watchDefinitions(settings.definitionsDir, onChange, {
    timeoutMs: settings.loadTimeoutMs,
    previous,
    onError: (err) => log(`${pc.red("error")} reloading definitions: ${(err as Error).message}`),
  });

  let runtime: Runtime;
  let server: RunningApiServer;
  try {
    runtime = await opening;
    // Until the first load is stored, /readyz answers 503 and definitionsStatus says LOADING; the graph queries answer
    // with the definitions stored before, or wait for the load when there are none (a first start).
    runtime.catalog.waitFor(watcher.ready);
    server = await startApiServer(runtime, { port, host: opts.host, definitionsDir: settings.definitionsDir });
  } catch (err) {
    await watcher.close();
    throw err;
  }
  log(`serving UI and GraphQL at http://${opts.host}:${server.port} (GraphQL at /graphql)`);

  // The reconciler and the triggerer start once the first load is stored: their first passes then plan with the
  // definitions of this start rather than those stored before, and leave the embedded database (one session) to the
  // first clients and the load meanwhile. A load that takes long does not hold them back for more than a moment.
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([
    watcher.ready.catch(() => undefined),
    new Promise((resolve) => (grace = setTimeout(resolve, EXECUTION_WAITS_FOR_LOAD_MS))),
  ]);
  clearTimeout(grace);
  // The first pass of a new database plans everything at once, and the embedded database has one session: the
  // clients already asking (a browser opened on the UI while it started) get their first answers before it.
  await server.quiet(CLIENTS_PAUSE_MS, EXECUTION_WAITS_FOR_CLIENTS_MS);
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
    ...(firstKindFiles ? { kindFiles: firstKindFiles } : {}),
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
  await watcher.ready;
  await stop(await signal);
}

import { serve, type ServerType } from "@hono/node-server";
import { sql } from "kysely";
import pc from "picocolors";
import { createApiApp } from "../../api/index.js";
import { InputError } from "../../errors/index.js";
import { watchDefinitions, type DefinitionsChange } from "../../loader/index.js";
import { persistLoad, previousGoodFromStore } from "../definitions-sync.js";
import { startExecution } from "../execution.js";
import { positiveInt } from "../options.js";
import { embeddedDbDir, openRuntime } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import { VERSION } from "../version.js";

export interface DevOptions {
  port: string;
  host: string;
  processes?: string;
  concurrencyPerProcess?: string;
}

/** `tributary dev`: the database, the definitions watcher and the HTTP server in one process. */
export async function runDev(opts: DevOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const port = Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InputError(`--port: "${opts.port}" is not a port number (0–65535)`);
  }
  const processes = positiveInt(opts.processes, "--processes");
  const concurrencyPerProcess = positiveInt(opts.concurrencyPerProcess, "--concurrency-per-process");
  const log = (msg: string) => process.stderr.write(`${pc.dim(new Date().toISOString())} ${msg}\n`);

  const runtime = await openRuntime(settings);
  log(`database: ${runtime.database.kind === "pglite" ? `embedded (${embeddedDbDir(settings)})` : "postgres (DATABASE_URL)"}`);

  // Until the first definitions load is stored, GraphQL waits rather than answering with an empty graph.
  let resolveInitialLoad!: (ready: Promise<void>) => void;
  runtime.catalog.waitFor(new Promise<void>((resolve) => (resolveInitialLoad = (ready) => void ready.then(resolve, resolve))));
  const app = createApiApp({
    context: runtime.apiContext(),
    version: VERSION,
    ping: async () => {
      await sql`select 1`.execute(runtime.database.db);
    },
  });
  let server: ServerType;
  try {
    server = await listen(app.fetch, port, opts.host);
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const address = server.address();
  const boundPort = typeof address === "object" && address ? address.port : port;
  log(`serving UI and GraphQL at http://${opts.host}:${boundPort} (GraphQL at /graphql)`);

  const onChange = async (change: DefinitionsChange) => {
    const saved = await persistLoad(runtime.definitions, change.result, {
      ...(change.initial ? {} : { reloaded: change.reloaded }),
      removed: change.removed,
    });
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
    previousGood: await previousGoodFromStore(runtime.definitions),
    onError: (err) => log(`${pc.red("error")} reloading definitions: ${(err as Error).message}`),
  });
  resolveInitialLoad(watcher.ready);
  const execution = await startExecution(runtime, {
    ...(processes ? { processes } : {}),
    ...(concurrencyPerProcess ? { concurrencyPerProcess } : {}),
    log: (level, message) => log(`${level === "error" ? pc.red(level) : level} ${message}`) });
  log(`reconciler ${execution.reconciler.id} and the local executor are running`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    await watcher.close();
    await execution.stop({ graceMs: 5_000 });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  await watcher.ready;
}

function listen(fetch: (req: Request) => Response | Promise<Response>, port: number, hostname: string): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port, hostname }, () => resolve(server));
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        err.code === "EADDRINUSE"
          ? new InputError(`port ${port} on ${hostname} is already in use; pass --port to choose another`)
          : err,
      );
    });
  });
}

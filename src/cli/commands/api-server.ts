import type { Server } from "node:http";
import { serve, type ServerType } from "@hono/node-server";
import { sql } from "kysely";
import { createApiApp, listenHostName, observabilityOf, preloadGraphql, type Observability } from "../../api/index.js";
import { InputError } from "../../errors/index.js";
import { StoreExecutionBackend } from "../../executor/index.js";
import {
  advertiseDataDirServer,
  PgAccessStore,
  PgAirflowQueryStore,
  PgStepTryStateStore,
  PgTryTokenStore,
  WAKE_CHANNEL,
} from "../../storage/index.js";
import { requireAdmin } from "../access-mode.js";
import { openRuntime, untilReachable, type Runtime, type RuntimeOptions } from "../runtime.js";
import { embeddedDbDir, serverIdentity } from "../server-identity.js";
import type { Settings } from "../settings.js";
import { VERSION } from "../version.js";
import { InFlight } from "../in-flight.js";

/** The HTTP server of `tributary dev` and `tributary api`, listening. */
export interface RunningApiServer {
  /** The port it listens on (the one chosen by the system with --port 0). */
  readonly port: number;
  /** Its metrics: a reconciler in the same process reports its passes there. */
  readonly observability: Observability;
  /**
   * Resolves once no request has been in flight for `quietMs` from the call on, or after `maxMs` whatever is in
   * flight. A streamed body (a followed log) counts only until its response starts.
   */
  quiet(quietMs: number, maxMs: number): Promise<void>;
  /** Stops listening and ends open connections (followed logs too). */
  close(): Promise<void>;
}

/**
 * The runtime of a process that serves the API (`dev`, `api`). With access control on (`openAccess` false), it
 * refuses to serve until an admin exists, and closes what it opened. Says which database it is on.
 */
export async function openServingRuntime(settings: Settings, options: RuntimeOptions, log: (message: string) => void): Promise<Runtime> {
  // While the database opens and the definitions are imported: the GraphQL module, for the server's first answer.
  preloadGraphql().catch(() => undefined); // a failure is the first request's to report
  const runtime = await openRuntime(settings, options);
  if (!options.openAccess) {
    try {
      const admins = new PgAccessStore(runtime.database.db);
      await (options.health ? untilReachable(options.health, () => requireAdmin(admins)) : requireAdmin(admins));
    } catch (err) {
      await runtime.close();
      throw err;
    }
  }
  log(`database: ${runtime.database.kind === "pglite" ? `embedded (${embeddedDbDir(settings)})` : "postgres (DATABASE_URL)"}`);
  return runtime;
}

/** `--port`: a port number, 0–65535 (0: any free port). */
export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port > 65535) {
    throw new InputError(`--port: "${value}" is not a port number (0–65535)`);
  }
  return port;
}

/**
 * Serves the whole HTTP surface over the runtime's database: GraphQL, the
 * Airflow-compatible REST API, /metrics and /readyz, live step logs and the
 * UI's landing page. When it cannot listen (the port is taken), it closes the
 * runtime and throws.
 */
export async function startApiServer(
  runtime: Runtime,
  address: { port: number; host: string; /** Set when this process loads the definitions (dev). */ definitionsDir?: string },
): Promise<RunningApiServer> {
  const observability = observabilityOf(runtime.observabilityStores, { processMetrics: true, dependencies: () => runtime.health.states() });
  const app = createApiApp({
    context: runtime.apiContext(),
    observability,
    rest: { queries: new PgAirflowQueryStore(runtime.database.db), logsDir: runtime.logsDir },
    logs: {
      logsDir: runtime.logsDir,
      tries: new PgStepTryStateStore(runtime.database.db),
      // Finished steps NOTIFY the reconcilers' wake channel: followers see their try end without polling the run.
      subscribe: (handler) => runtime.database.listen(WAKE_CHANNEL, () => handler()),
    },
    // Workers of the BullMQ fleet report here, each try with its own token (docs/execution-api.md).
    execution: {
      tokens: new PgTryTokenStore(runtime.database.db),
      backend: new StoreExecutionBackend({
        runs: runtime.runs,
        definitions: runtime.definitions,
        graphs: runtime.graphs,
        outputStore: runtime.outputStore,
      }),
      graphs: runtime.graphs,
      logsDir: runtime.logsDir,
      outputStore: runtime.outputStore,
    },
    // The names clients use (docs/security.md): loopback, the address it listens on unless a wildcard, TRIBUTARY_PUBLIC_HOSTS.
    safety: {
      publicHosts: [listenHostName(address.host), ...runtime.settings.http.publicHosts].filter((h) => h !== undefined),
      corsOrigins: runtime.settings.http.corsOrigins,
      trustProxy: runtime.settings.http.trustProxy,
    },
    // Mutations are counted per token or signed-in user; an instance without access control counts only when told to.
    limits: {
      mutationRate:
        runtime.apiContext().access.authenticator.open && !runtime.settings.http.mutationRateSet
          ? false
          : (runtime.settings.http.mutationRate ?? false),
    },
    // Sign-in through an OpenID Connect provider (TRIBUTARY_OIDC_*), offered when access is controlled.
    ...(runtime.settings.oidc ? { oidc: runtime.settings.oidc } : {}),
    version: VERSION,
    identity: serverIdentity(runtime.settings, address.definitionsDir !== undefined),
    ping: async () => {
      await sql`select 1`.execute(runtime.database.db);
    },
  });
  const requests = new InFlight();
  let server: ServerType;
  try {
    // The node server's bindings (the incoming request, with the client's address) go along as the app's env.
    server = await listen((req, env) => requests.count(() => app.fetch(req, env)), address.port, address.host);
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const bound = server.address();
  const port = typeof bound === "object" && bound ? bound.port : address.port;
  // Commands that find the data directory locked ask this server instead (server-client.ts).
  if (runtime.database.kind === "pglite") advertiseDataDirServer(embeddedDbDir(runtime.settings), localUrl(address.host, port));
  return {
    port,
    observability,
    quiet: (quietMs, maxMs) => requests.quiet(quietMs, maxMs),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Followed logs keep their connections open for as long as their steps run.
        (server as Server).closeAllConnections();
      }),
  };
}

/** A URL for this machine's clients: a wildcard address is reached on loopback. */
function localUrl(host: string, port: number): string {
  const reachable = host === "" || host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}

/**
 * How long an idle client connection stays open: longer than clients and proxies keep theirs (Node's fetch 4 s, load
 * balancers about 60 s). With Node's default of 5 s a client that reused a connection just as the server closed it
 * got a reset instead of an answer; now the client always lets go first.
 */
const KEEP_ALIVE_MS = 65_000;

/** Serves `fetch` on `port`; idle connections are kept KEEP_ALIVE_MS. */
export function serveHttp(
  fetch: (req: Request, env: unknown) => Response | Promise<Response>,
  port: number,
  hostname: string,
  listening: () => void,
): ServerType {
  const server = serve({ fetch, port, hostname }, listening);
  (server as Server).keepAliveTimeout = KEEP_ALIVE_MS;
  // A request's headers are awaited longer than the connection idles, as Node requires for keep-alive to hold.
  (server as Server).headersTimeout = KEEP_ALIVE_MS + 1_000;
  return server;
}

function listen(fetch: (req: Request, env: unknown) => Response | Promise<Response>, port: number, hostname: string): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serveHttp(fetch, port, hostname, () => resolve(server));
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        err.code === "EADDRINUSE" ? new InputError(`port ${port} on ${hostname} is already in use; pass --port to choose another`) : err,
      );
    });
  });
}

import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { AccessApi, ApiServices, AssetsApi, RunsApi } from "./services.js";
import { localGuard } from "../access/index.js";
import { authRoutes } from "./auth/auth-routes.js";
import { authenticateRequests } from "./auth/authenticate-requests.js";
import { oidcRoutes, type OidcOptions } from "./auth/oidc-routes.js";
import { guardOf } from "./auth/request-guard.js";
import { observabilityRoutes, type Observability } from "./metrics/observability-routes.js";
import type { RequestLimitOptions } from "./graphql/request-limits.js";
import { createAirflowApi, type AirflowApiServices } from "./rest/airflow-api.js";
import { httpSafety, type HttpSafetyOptions } from "./http/http-safety.js";
import { graphqlTransport } from "./http/graphql-transport.js";
import { defaultCallerKey, remoteAddressOf } from "./http/caller-key.js";
import { stepLogRoutes, type StepLogServices } from "./logs/step-logs.js";
import { runEventRoutes } from "./logs/run-events.js";
import { uiRoutes } from "./ui-routes.js";
import { definitionsReadiness } from "./catalog.js";
import { graphiqlRoutes } from "./graphiql-routes.js";
import { executionRoutes, type ExecutionApiServices } from "./execution/execution-routes.js";

/** Largest `/graphql` request body accepted; larger ones get 413 with a GraphQL-shaped JSON error. */
export const MAX_GRAPHQL_BODY_BYTES = 1024 * 1024;

/**
 * What a server serves, on /healthz: a command told to work on one project
 * (its data directory or database, its definitions) checks that this server
 * serves that project before asking it.
 */
export interface ServerIdentity {
  readonly pid: number;
  readonly database:
    | { readonly kind: "pglite"; readonly dataDir: string }
    | { readonly kind: "postgres"; readonly host: string; readonly port: number; readonly database: string };
  /** The definitions directory this process loads; null when it serves what another process stored. */
  readonly definitionsDir: string | null;
}

export interface ApiOptions {
  /** The API's services, built once by the composition root: GraphQL reads them all, the other routes the groups they use. */
  context: ApiServices;
  /** What /healthz says this server serves. */
  identity?: ServerIdentity;
  /** Checks the database answers; /healthz reports it. */
  ping: () => Promise<void>;
  version: string;
  // Without it, /metrics and /readyz answer 404.
  /** Metrics and migration checks behind `/metrics` and `/readyz` (see observabilityOf). */
  observability?: Observability;
  // Without it, /api/v1 answers 404.
  /** What the Airflow-compatible REST API at `/api/v1` reads besides the API's services. */
  rest?: AirflowApiServices;
  // Without it, /runs/:runId/steps/:stepId/logs answers 404.
  /** Where the live step log routes read logs. */
  logs?: StepLogServices;
  /** What the worker-facing execution API at `/execution/v1` needs; without it, that path is not served. */
  execution?: ExecutionApiServices;
  /** The built web UI (default: ui/dist of this checkout). */
  uiDir?: string;
  /** Host names, CORS origins and proxy trust (docs/security.md); without them only loopback names and same-origin pages work. */
  safety?: HttpSafetyOptions;
  /** Limits per GraphQL request and per caller (docs/security.md); without them the defaults apply. */
  limits?: RequestLimitOptions;
  /** Sign-in through an OpenID Connect provider, at /auth/oidc/start and /auth/oidc/callback (with access control). */
  oidc?: OidcOptions;
}

let graphql: Promise<typeof import("./graphql/yoga-server.js")> | undefined;

/**
 * Imports GraphQL and builds the schema, once per process; createApiApp waits for it. A server starts it while it
 * waits for something else (its definitions' child processes), so that its first GraphQL answer does not wait for it.
 */
export function preloadGraphql(): Promise<typeof import("./graphql/yoga-server.js")> {
  graphql ??= import("./graphql/yoga-server.js").then((m) => {
    m.prepareSchema();
    return m;
  });
  return graphql;
}

/** The HTTP surface: health, GraphQL, REST, metrics, logs, and the web UI at every other page URL. */
export function createApiApp(options: ApiOptions): Hono {
  // GraphQL (graphql-js, yoga, the schema) is a module of its own, imported as the app is made: a command that uses
  // the API's services in its own process, without serving them, never loads it.
  const yoga = preloadGraphql().then((m) => m.graphqlServer(options.context, options.limits));
  yoga.catch(() => undefined); // if it failed, every /graphql request answers with the error instead

  // Services built only for /metrics or the GraphiQL page (as in tests) have no runs or assets.
  const runs = options.context.runs as RunsApi | undefined;
  const app = new Hono();
  app.use("*", ...httpSafety(options.safety));
  app.get("/healthz", async (c) => {
    try {
      await options.ping();
      return c.json({
        status: "ok",
        service: "tributary",
        version: options.version,
        ...(options.identity ? { identity: options.identity } : {}),
      });
    } catch (err) {
      return c.json({ status: "unavailable", error: (err as Error).message }, 503);
    }
  });
  // /metrics and /readyz.
  if (options.observability) {
    const catalog = (options.context.assets as AssetsApi | undefined)?.catalog;
    app.route(
      "/",
      observabilityRoutes(options.ping, options.observability, () => definitionsReadiness(catalog)),
    );
  }
  // Who is calling: settled before GraphQL, /api/v1 and the log streams (the execution API has its own per-try tokens;
  // health, metrics and the UI's static pages need no caller). Without access services every request is local.
  const access = options.context.access as AccessApi | undefined;
  if (access) {
    const http = { allowedOrigins: options.safety?.corsOrigins ?? [], trustProxy: options.safety?.trustProxy ?? false };
    if (options.oidc) app.route("/auth/oidc", oidcRoutes(access, options.oidc));
    app.route("/auth", authRoutes(access, { ...http, ...(options.oidc ? { oidc: { label: options.oidc.label } } : {}) }));
    const authenticate = authenticateRequests(access, http);
    // The log streams, not the UI's run pages under /runs/<id>: those are the UI's, which asks for a sign-in itself.
    for (const path of ["/graphql", "/api/v1", "/api/v1/*", "/runs/:runId/events", "/runs/:runId/steps/*"]) app.use(path, authenticate);
  }
  // The Airflow-compatible REST API.
  if (options.rest) app.route("/api/v1", createAirflowApi(options.context, options.rest));
  // Step logs over SSE, or as plain text.
  if (options.logs) app.route("/", stepLogRoutes(options.context.runs.store, options.logs));
  // A run's progress as it changes (SSE), for the UI and scripts.
  if (runs) app.route("/", runEventRoutes(runs.store));
  if (options.execution) app.route("/execution/v1", executionRoutes(options.execution));
  app.route("/", graphiqlRoutes());
  const callerKey = options.limits?.callerKey ?? defaultCallerKey;
  const trustProxy = options.safety?.trustProxy ?? false;
  app.on(["GET", "POST", "OPTIONS"], "/graphql", graphqlTransport(), graphqlBodyLimit, async (c) => {
    const guard = access ? guardOf(c) : localGuard();
    // Mutations are rate-limited per token (or signed-in user); without access control, per client.
    const identity = guard.caller.tokenId ?? guard.caller.principalId;
    return (await yoga).fetch(c.req.raw, {
      guard,
      callerKey: () => (identity ? `caller:${identity}` : callerKey(c.req.raw, remoteAddressOf(c, trustProxy))),
    });
  });
  app.route("/", uiRoutes(options.uiDir));
  return app;
}

const graphqlBodyLimit = bodyLimit({
  maxSize: MAX_GRAPHQL_BODY_BYTES,
  onError: (c) =>
    c.json(
      {
        errors: [
          {
            message: `The request body is larger than ${MAX_GRAPHQL_BODY_BYTES} bytes; send a smaller query or fewer variables`,
            extensions: { code: "BODY_TOO_LARGE", maxBytes: MAX_GRAPHQL_BODY_BYTES },
          },
        ],
      },
      413,
    ),
});

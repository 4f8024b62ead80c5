import { Hono } from "hono";
import { readMigrationFiles, type MetricsQueryStore, type MigrationFile, type MigrationStatus } from "../../storage/index.js";
import type { DependencyState } from "../../health/index.js";
import { TributaryMetrics } from "./tributary-metrics.js";

/** What `/metrics` and `/readyz` read. */
export interface Observability {
  readonly metrics: TributaryMetrics;
  /** The database's applied migrations compared with this code's files. */
  readonly migrations: () => Promise<MigrationStatus>;
  /** This process's dependencies as it sees them now (reported by `/readyz` and the metrics). */
  readonly dependencies: () => readonly DependencyState[];
}

/** The stores `/metrics` and `/readyz` read, built by the composition root. */
export interface ObservabilityStores {
  /**
   * Database-wide gauges, trigger counts and dispatch latencies, read at scrape time. Left out, only this process's
   * own metrics are served: a reconciler process leaves them to the API, so they come from one place.
   */
  readonly metrics?: MetricsQueryStore;
  /** Compares the database's applied migrations with the given migration files. */
  readonly migrationStatus: (files: readonly MigrationFile[]) => Promise<MigrationStatus>;
}

/** A reason `/readyz` answers 503, with a stable code. */
export interface ReadinessProblem {
  readonly code:
    | "DATABASE_UNREACHABLE"
    | "DEPENDENCY_UNREACHABLE"
    | "MIGRATIONS_PENDING"
    | "MIGRATIONS_UNKNOWN"
    | "MIGRATIONS_CHANGED"
    | "MIGRATIONS_UNCHECKED"
    | "DEFINITIONS_LOADING"
    | "DEFINITIONS_FAILED";
  readonly message: string;
}

/**
 * Metrics and migration checks over the stores of one database.
 *
 * @example
 * // given stores: ObservabilityStores, context: ApiServices, ping: () => Promise<void>
 * const app = createApiApp({ context, ping, version: "1.0.0", observability: observabilityOf(stores, { processMetrics: true }) });
 */
export function observabilityOf(
  stores: ObservabilityStores,
  options: {
    readonly processMetrics?: boolean;
    readonly migrationsDir?: string;
    /** This process's dependencies (DependencyHealth.states); none by default. */
    readonly dependencies?: () => readonly DependencyState[];
  } = {},
): Observability {
  const dependencies = options.dependencies ?? (() => []);
  // The files this code was shipped with: read once, they do not change under a running process.
  let files: Promise<MigrationFile[]> | undefined;
  return {
    metrics: new TributaryMetrics({
      ...(stores.metrics ? { store: stores.metrics } : {}),
      ...(options.processMetrics ? { processMetrics: true } : {}),
      dependencies,
    }),
    dependencies,
    migrations: async () => {
      files ??= readMigrationFiles(options.migrationsDir).catch((err: unknown) => {
        files = undefined;
        throw err;
      });
      return stores.migrationStatus(await files);
    },
  };
}

/**
 * The HTTP surface of a process that serves no API (`tributary reconciler
 * --metrics-port`): `GET /healthz`, `/metrics` and `/readyz`, as the API serves them.
 *
 * @example
 * import { serve } from "@hono/node-server";
 * // given stores: ObservabilityStores, ping: () => Promise<void>
 * // Without the metrics store: the database-wide gauges are the API's.
 * serve({ fetch: metricsApp(ping, observabilityOf({ migrationStatus: stores.migrationStatus }), "1.0.0").fetch, port: 9464 });
 */
export function metricsApp(ping: () => Promise<void>, observability: Observability, version: string): Hono {
  const app = new Hono();
  app.get("/healthz", async (c) => {
    try {
      await ping();
      return c.json({ status: "ok", version });
    } catch (err) {
      return c.json({ status: "unavailable", error: errorMessage(err) }, 503);
    }
  });
  app.route("/", observabilityRoutes(ping, observability));
  app.notFound((c) =>
    c.json(
      { error: { code: "NOT_FOUND", message: `${c.req.path} is not served here: this process serves /metrics, /healthz and /readyz` } },
      404,
    ),
  );
  return app;
}

/**
 * `GET /metrics` (Prometheus text; 503 when the database does not answer) and
 * `GET /readyz`: 200 when the database answers, its migrations are exactly
 * this code's and `more` (e.g. the API's definitions load) finds nothing, else
 * 503 with a JSON body listing each problem.
 */
export function observabilityRoutes(
  ping: () => Promise<void>,
  observability: Observability,
  more: () => Promise<ReadinessProblem[]> = async () => [],
): Hono {
  const app = new Hono();
  app.get("/metrics", async (c) => {
    try {
      const text = await observability.metrics.render();
      return c.body(text, 200, { "content-type": observability.metrics.contentType });
    } catch (err) {
      return c.text(`# metrics unavailable: the database did not answer: ${errorMessage(err)}\n`, 503);
    }
  });
  app.get("/readyz", async (c) => {
    let problems = await readinessProblems(ping, observability.migrations);
    if (problems[0]?.code !== "DATABASE_UNREACHABLE") problems = [...problems, ...(await more())];
    const dependencies = observability.dependencies().map((d) => ({
      name: d.name,
      up: d.up,
      since: d.since.toISOString(),
      ...(d.error === undefined ? {} : { error: d.error }),
    }));
    // Postgres is judged by the ping above; another dependency that is down is named here.
    for (const d of dependencies) {
      if (!d.up && d.name !== "postgres")
        problems.push({ code: "DEPENDENCY_UNREACHABLE", message: `${d.name} is unreachable since ${d.since}: ${d.error ?? "no answer"}` });
    }
    const body = { status: problems.length === 0 ? "ready" : "not_ready", problems, dependencies };
    return problems.length === 0 ? c.json(body) : c.json(body, 503);
  });
  return app;
}

async function readinessProblems(ping: () => Promise<void>, migrations: () => Promise<MigrationStatus>): Promise<ReadinessProblem[]> {
  try {
    await ping();
  } catch (err) {
    return [{ code: "DATABASE_UNREACHABLE", message: `the database did not answer: ${errorMessage(err)}` }];
  }
  let status: MigrationStatus;
  try {
    status = await migrations();
  } catch (err) {
    return [{ code: "MIGRATIONS_UNCHECKED", message: `could not compare the applied migrations with the files: ${errorMessage(err)}` }];
  }
  const problems: ReadinessProblem[] = [];
  if (status.pending.length > 0) {
    problems.push({
      code: "MIGRATIONS_PENDING",
      message: `migration(s) not applied: ${status.pending.join(", ")}; run \`tributary migrate\` (or restart a server, which migrates on start)`,
    });
  }
  if (status.unknown.length > 0) {
    problems.push({
      code: "MIGRATIONS_UNKNOWN",
      message: `the database has migration(s) this version does not know: ${status.unknown.join(", ")}; a newer Tributary migrated it, upgrade this one`,
    });
  }
  if (status.changed.length > 0) {
    problems.push({
      code: "MIGRATIONS_CHANGED",
      message: `applied migration file(s) changed since: ${status.changed.join(", ")}; restore them and put changes in a new numbered migration`,
    });
  }
  return problems;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

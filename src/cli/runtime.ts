import path from "node:path";
import { addDynamicPartitions, automationEvaluations, Catalog, clearPartitions, erasureImpact, launchBackfill, lineage, launchRun, reportAssetEvent, retryBackfillFailures, runChecks, type ApiContext, type DefinitionFileView } from "../api/index.js";
import {
  GraphCache,
  LocalDirOutputStore,
  migrate,
  openDatabase,
  PgAlertStore,
  PgAutomationStore,
  PgBackfillStore,
  PgDefinitionStore,
  PgEventStore,
  PgLineageStore,
  PgPartitionStatusStore,
  PgPauseStore,
  PgPoolStore,
  PgRunStore,
  PgTriggerQueryStore,
  PgMaterializationQueryStore,
  PgCheckResultStore,
  S3OutputStore,
  type DatabaseHandle,
  type OutputStore,
} from "../storage/index.js";
import { syncDefinitions } from "./definitions-sync.js";
import { embeddedDbDir } from "./server-identity.js";
import type { Settings } from "./settings.js";
import { RUN_DECISIONS } from "../planner/index.js";

/** The pieces every in-process command shares: the database, its stores, the catalog. */
export interface Runtime {
  readonly settings: Settings;
  readonly database: DatabaseHandle;
  readonly definitions: PgDefinitionStore;
  readonly runs: PgRunStore;
  /** Backfills: launched through the API, advanced by the reconciler's backfill task. */
  readonly backfills: PgBackfillStore;
  /** Stored alerts: written by the run store and the reconciler's alerts task, listed by the API. */
  readonly alerts: PgAlertStore;
  readonly graphs: GraphCache;
  readonly catalog: Catalog;
  /** Outputs over the inline limit: S3 with TRIBUTARY_S3_BUCKET; null when not configured (Postgres mode without TRIBUTARY_OUTPUT_DIR). */
  readonly outputStore: OutputStore | null;
  readonly logsDir: string;
  apiContext(): ApiContext;
  close(): Promise<void>;
}

export { embeddedDbDir } from "./server-identity.js";

/** Set by every command that opens the data directory, for the definitions and steps it runs. */
export const DATA_DIR_ENV = "TRIBUTARY_DATA_DIR";

/** Opens (and migrates) the metadata database the settings name: Postgres with DATABASE_URL, else PGlite. */
export interface RuntimeOptions {
  /**
   * False when this process only serves the API (`tributary api`): steps run in reconcilers elsewhere, which may have
   * Redis when this process has not, so runs on the bullmq executor are not refused here.
   */
  readonly runsSteps?: boolean;
}

export async function openRuntime(settings: Settings, options: RuntimeOptions = {}): Promise<Runtime> {
  // Definitions and steps run in child processes, which inherit the environment: this tells them the data directory
  // in use, so files they keep beside it (the demo's) follow --data-dir.
  process.env[DATA_DIR_ENV] = settings.dataDir;
  // Built first: a bad S3 setting stops startup before the database is opened.
  const s3OutputStore = settings.s3 ? new S3OutputStore(settings.s3) : null;
  const database = await openDatabase(
    settings.databaseUrl
      ? { kind: "postgres", url: settings.databaseUrl, applicationName: "tributary" }
      : { kind: "pglite", dataDir: embeddedDbDir(settings) },
  );
  try {
    await migrate(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  const definitions = new PgDefinitionStore(database.db);
  const runs = new PgRunStore(database.db, RUN_DECISIONS);
  const backfills = new PgBackfillStore(database.db);
  const alerts = new PgAlertStore(database.db);
  const graphs = new GraphCache(definitions);
  const catalog = new Catalog(graphs, definitions);
  // Embedded mode keeps large outputs in the data directory; with Postgres they need a configured store.
  const outputDir = settings.outputDir ?? (settings.databaseUrl ? undefined : path.join(settings.dataDir, "outputs"));
  const outputStore = s3OutputStore ?? (outputDir ? new LocalDirOutputStore(outputDir) : null);
  const pauses = new PgPauseStore(database.db);
  // Lineage and erasure queries.
  const lineageServices = { graphs, definitions, lineage: new PgLineageStore(database.db) };
  return {
    settings,
    database,
    definitions,
    runs,
    backfills,
    alerts,
    graphs,
    catalog,
    outputStore,
    logsDir: settings.logsDir ?? path.join(settings.dataDir, "logs"),
    apiContext: () => ({
      catalog,
      runs,
      now: () => new Date(),
      // Without Redis no worker takes bullmq steps: a run that needs them is refused rather than left waiting.
      launchRun: (request) => launchRun({ graphs, runs, definitions, unavailableExecutors: unavailableExecutors(settings, options) }, request, new Date()),
      clearPartitions: (request) => clearPartitions({ graphs, runs, definitions }, request, new Date()),
      runChecks: (request) => runChecks({ graphs, runs, definitions }, request, new Date()),
      checkResults: new PgCheckResultStore(database.db),
      backfills,
      launchBackfill: (request) => launchBackfill({ graphs, runs, definitions, backfills }, request, new Date()),
      cancelBackfill: (id) => backfills.requestCancel(id, new Date()),
      resumeBackfill: (id) => backfills.resume(id, new Date()),
      retryBackfillFailures: (id) => retryBackfillFailures({ graphs, runs, definitions, backfills }, id, new Date()),
      addDynamicPartitions: (request) => addDynamicPartitions({ graphs, definitions }, request),
      alerts,
      partitionStatus: new PgPartitionStatusStore(database.db),
      pauses,
      triggers: new PgTriggerQueryStore(database.db),
      pools: new PgPoolStore(database.db),
      lineage: (request) => lineage(lineageServices, request),
      erasureImpact: (request) => erasureImpact(lineageServices, request),
      reads: new PgMaterializationQueryStore(database.db), // GraphQL reads
      pauseAutomation: (target) => pauses.pause(target, new Date()),
      resumeAutomation: (target) => pauses.resume(target, new Date()),
      automationEvaluations: (request) =>
        automationEvaluations({ graphs, definitions, evaluations: new PgAutomationStore(database.db), pauses }, request),
      reportAssetEvent: (request) => reportAssetEvent({ graphs, events: new PgEventStore(database.db), definitions }, request, new Date()),
      definitionFiles: async (): Promise<DefinitionFileView[]> =>
        (await definitions.listFiles()).map((f) => ({
          path: f.path,
          status: f.status,
          error: f.error as DefinitionFileView["error"],
          warnings: f.warnings,
          problems: f.problems as DefinitionFileView["problems"],
          loadMs: f.loadMs,
          loadedAt: f.loadedAt,
        })),
    }),
    close: () => database.close(),
  };
}

/**
 * A one-off command's work in this process: opens the database, loads the
 * current definitions (a file that fails to load is a warning; the others
 * still count), runs `fn` with the API, and closes.
 */
export async function withCurrentDefinitions<T>(settings: Settings, fn: (api: ApiContext, runtime: Runtime) => Promise<T>): Promise<T> {
  const runtime = await openRuntime(settings);
  try {
    const sync = await syncDefinitions(runtime.definitions, { dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs });
    for (const f of sync.result.files) {
      if (f.status === "error") process.stderr.write(`warning: ${f.error?.message ?? f.file}\n`);
    }
    return await fn(runtime.apiContext(), runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Executors that no process would run. This process runs steps (dev, a one-off command) and has no Redis: nothing
 * would ever take a bullmq step. The API alone on Postgres cannot know (a reconciler elsewhere may have Redis); on
 * the embedded database it is the only process there is.
 */
export function unavailableExecutors(settings: Pick<Settings, "redisUrl" | "databaseUrl">, options: RuntimeOptions): ReadonlyMap<string, string> {
  const cannotTell = options.runsSteps === false && settings.databaseUrl !== undefined;
  return settings.redisUrl || cannotTell
    ? new Map()
    : new Map([["bullmq", "no Redis is configured; set REDIS_URL (e.g. redis://127.0.0.1:6379) here and start `tributary worker` processes, or use the local executor"]]);
}

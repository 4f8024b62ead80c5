import path from "node:path";
import pc from "picocolors";
import { sql, type Kysely } from "kysely";
import {
  addDynamicPartitions,
  automationEvaluations,
  Catalog,
  clearPartitions,
  erasureImpact,
  erasureReport,
  launchBackfill,
  listErasures,
  requestErasure,
  historyArchiveDays,
  restoreHistory,
  retryErasure,
  lineage,
  launchRun,
  reportAssetEvent,
  retryBackfillFailures,
  runChecks,
  type ApiServices,
  type DefinitionFileView,
  type ObservabilityStores,
  wipePartitions,
} from "../api/index.js";
import {
  GraphCache,
  LocalDirOutputStore,
  migrate,
  migrationStatus,
  openDatabase,
  PACKAGE_PGLITE_TEMPLATE,
  PgAccessStore,
  PgAlertStore,
  PgAutomationStore,
  PgBackfillStore,
  PgErasureStore,
  PgHistoryArchiveStore,
  PgDefinitionStore,
  PgEventStore,
  PgLineageStore,
  PgOutputDeletionStore,
  PgPartitionStatusStore,
  PgPartitionWipeStore,
  PgPauseStore,
  PgPoolStore,
  PgRunStore,
  PgTriggerQueryStore,
  PgMaterializationQueryStore,
  PgMetricsQueryStore,
  PgCheckResultStore,
  S3OutputStore,
  type AlertStore,
  type BackfillStore,
  type Database,
  type DatabaseHandle,
  type DefinitionStore,
  type PgliteConfig,
  type PgliteHandle,
  type OutputStore,
  type PauseTarget,
  type RunDecisions,
  type RunStore,
} from "../storage/index.js";
import { syncDefinitions, type SyncOutcome } from "./definitions-sync.js";
import { embeddedDbDir } from "./server-identity.js";
import type { Settings } from "./settings.js";
import { runDecisions } from "../planner/index.js";
import { Authenticator, RequestAccess, type AccessScope, type AssetOwnership, type Guard } from "../access/index.js";
import { backoffDelayMs, DependencyHealth, isConnectionError, RECONNECT_BACKOFF } from "../health/index.js";

/** The pieces every in-process command shares: the database, its stores, the catalog. */
export interface Runtime {
  readonly settings: Settings;
  readonly database: DatabaseHandle;
  readonly definitions: PgDefinitionStore;
  readonly runs: PgRunStore;
  /** The planner's decisions the stores apply (trigger rules, retries with the configured infrastructure budget). */
  readonly decisions: RunDecisions;
  /** Backfills: launched through the API, advanced by the reconciler's backfill task. */
  readonly backfills: PgBackfillStore;
  /** Stored alerts: written by the run store and the reconciler's alerts task, listed by the API. */
  readonly alerts: PgAlertStore;
  readonly graphs: GraphCache;
  readonly catalog: Catalog;
  /** Outputs over the inline limit: S3 with TRIBUTARY_S3_BUCKET; null when not configured (Postgres mode without TRIBUTARY_OUTPUT_DIR). */
  readonly outputStore: OutputStore | null;
  readonly logsDir: string;
  /** What `/metrics` and `/readyz` read (a reconciler process serves only its own metrics: it leaves out `metrics`). */
  readonly observabilityStores: ObservabilityStores;
  /** The API's services over this database, built once: every transport and in-process command uses these. */
  apiContext(): ApiServices;
  /** Which dependencies this process reaches now (`/readyz`, metrics, once-per-outage logging). */
  readonly health: DependencyHealth;
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
  /**
   * No access control: every API request is the local caller, who may do everything. True for `tributary dev` on
   * loopback, `--insecure-no-auth`, and commands working in their own process; `tributary api` sets it false.
   */
  readonly openAccess?: boolean;
  /**
   * A long-lived process's view of its dependencies: with it, a Postgres that does not answer at start is waited
   * for (said once, retried with backoff) instead of ending the command, and lost connections are reported to it.
   */
  readonly health?: DependencyHealth;
}

export async function openRuntime(settings: Settings, options: RuntimeOptions = {}): Promise<Runtime> {
  // Definitions and steps run in child processes, which inherit the environment: this tells them the data directory
  // in use, so files they keep beside it (the demo's) follow --data-dir.
  process.env[DATA_DIR_ENV] = settings.dataDir;
  // Built first: a bad S3 setting stops startup before the database is opened.
  const s3OutputStore = settings.s3 ? new S3OutputStore(settings.s3) : null;
  const health = options.health ?? new DependencyHealth({ log: (_level, message) => process.stderr.write(`tributary: ${message}\n`) });
  const database = options.health
    ? await untilReachable(health, () => openMigrated(settings, health, "server"))
    : await openMigrated(settings, health, "command");
  health.register("postgres", () => sql`select 1`.execute(database.db));
  const definitions = new PgDefinitionStore(database.db);
  const decisions = runDecisions(settings.infrastructureRetry);
  const runs = new PgRunStore(database.db, decisions);
  const backfills = new PgBackfillStore(database.db);
  const alerts = new PgAlertStore(database.db);
  const graphs = new GraphCache(definitions);
  const catalog = new Catalog(graphs, definitions);
  // Embedded mode keeps large outputs in the data directory; with Postgres they need a configured store.
  const outputDir = settings.outputDir ?? (settings.databaseUrl ? undefined : path.join(settings.dataDir, "outputs"));
  const outputStore = s3OutputStore ?? (outputDir ? new LocalDirOutputStore(outputDir) : null);
  const api = apiServices({
    db: database.db,
    definitions,
    graphs,
    catalog,
    runs,
    backfills,
    alerts,
    // Without Redis no worker takes bullmq steps: a run that needs them is refused rather than left waiting.
    unavailableExecutors: unavailableExecutors(settings, options),
    openAccess: options.openAccess ?? true,
    outputStore,
    logsDir: settings.logsDir ?? path.join(settings.dataDir, "logs"),
  });
  return {
    settings,
    database,
    definitions,
    runs,
    decisions,
    backfills,
    alerts,
    graphs,
    catalog,
    outputStore,
    logsDir: settings.logsDir ?? path.join(settings.dataDir, "logs"),
    observabilityStores: observabilityStores(database.db),
    apiContext: () => api,
    health,
    close: async () => {
      if (!options.health) health.close();
      await database.close();
    },
  };
}

/**
 * The dependency view of a long-lived command, logging through the command's own log: "postgres is unreachable …"
 * once when an outage starts, "… answers again after N s away" when it ends.
 */
export function processHealth(log: (message: string) => void): DependencyHealth {
  return new DependencyHealth({ log: (level, message) => log(level === "warn" ? `${pc.yellow("warn")} ${message}` : `info ${message}`) });
}

/**
 * Opens the database the settings name and migrates it; lost Postgres connections are reported to `health`. A
 * `command` (a few queries, then exit) opens the embedded database with a small buffer pool and unoptimised
 * WebAssembly, which start faster.
 */
async function openMigrated(settings: Settings, health: DependencyHealth, lifetime: "server" | "command"): Promise<DatabaseHandle> {
  const database = await openDatabase(
    settings.databaseUrl
      ? {
          kind: "postgres",
          url: settings.databaseUrl,
          applicationName: "tributary",
          onConnectionError: (error) => health.failed("postgres", error),
        }
      : {
          ...embeddedDatabase(settings),
          sharedBuffers: embeddedSharedBuffers(settings, lifetime),
          baselineCodeOnly: lifetime === "command",
        },
  );
  noteUnusedTemplate(database);
  try {
    await migrate(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

/**
 * The embedded database's buffer pool unless TRIBUTARY_EMBEDDED_SHARED_BUFFERS says otherwise: in a command that exits
 * when it has answered, and in a server. PGlite zeroes the whole pool in WebAssembly as it starts (a third of a second
 * for Postgres's default 128MB); the embedded database holds one developer's project, whose pages the operating
 * system's cache keeps besides.
 */
const COMMAND_SHARED_BUFFERS = "16MB";
const SERVER_SHARED_BUFFERS = "32MB";

/** The embedded database's buffer pool for a process of this lifetime. */
export function embeddedSharedBuffers(settings: Pick<Settings, "embeddedSharedBuffers">, lifetime: "server" | "command"): string {
  return settings.embeddedSharedBuffers ?? (lifetime === "command" ? COMMAND_SHARED_BUFFERS : SERVER_SHARED_BUFFERS);
}

/** The embedded database in the data directory: a new one is copied from the package's template when it is current. */
export function embeddedDatabase(settings: Pick<Settings, "dataDir">): PgliteConfig {
  return { kind: "pglite", dataDir: embeddedDbDir(settings), template: PACKAGE_PGLITE_TEMPLATE };
}

/**
 * Says why a new embedded database was not copied from the template when the template is there and current but
 * damaged (`npm run build:db-template` builds it again). A missing or outdated template is no news: the database
 * was initialised as it is without one.
 */
export function noteUnusedTemplate(database: DatabaseHandle): void {
  const unused = database.kind === "pglite" ? (database as PgliteHandle).templateUnused : undefined;
  if (unused?.damaged) process.stderr.write(`tributary: ${unused.reason}; initialised the database without it\n`);
}

/**
 * `open()` until it succeeds while what fails is the Postgres connection (a process started before its database, or
 * during its restart): said once, retried with capped backoff and jitter. Any other error ends the command as before.
 * Long-lived commands run each step of their start through it.
 */
export async function untilReachable<T>(health: DependencyHealth, open: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const value = await open();
      health.recovered("postgres");
      return value;
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      health.failed("postgres", err);
      await new Promise((resolve) => setTimeout(resolve, backoffDelayMs(attempt, RECONNECT_BACKOFF)));
    }
  }
}

/**
 * A one-off command's work in this process: opens the database, loads the
 * current definitions (a file that fails to load is a warning; the others
 * still count), runs `fn` with the API, and closes.
 */
export async function withCurrentDefinitions<T>(settings: Settings, fn: (api: ApiServices, runtime: Runtime) => Promise<T>): Promise<T> {
  const { runtime, sync } = await openWithCurrentDefinitions(settings);
  try {
    for (const f of sync.result.files) {
      if (f.status === "error") process.stderr.write(`warning: ${f.error?.message ?? f.file}\n`);
    }
    return await fn(runtime.apiContext(), runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Opens the runtime and brings its stored definitions up to date with the directory, both at once: the files are
 * imported in their child processes while the database starts. Closes what it opened if either fails.
 */
export async function openWithCurrentDefinitions(settings: Settings): Promise<{ runtime: Runtime; sync: SyncOutcome }> {
  // Set before the definitions' child processes start: they inherit it (see openRuntime).
  process.env[DATA_DIR_ENV] = settings.dataDir;
  const opening = openRuntime(settings);
  const syncing = syncDefinitions(
    opening.then((r) => r.definitions),
    { dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs },
  );
  syncing.catch(() => undefined); // awaited below once the runtime is open; its error is reported from there
  const runtime = await opening;
  try {
    return { runtime, sync: await syncing };
  } catch (err) {
    await runtime.close();
    throw err;
  }
}

/**
 * Executors that no process would run. This process runs steps (dev, a one-off command) and has no Redis: nothing
 * would ever take a bullmq step. The API alone on Postgres cannot know (a reconciler elsewhere may have Redis); on
 * the embedded database it is the only process there is.
 */
export function unavailableExecutors(
  settings: Pick<Settings, "redisUrl" | "databaseUrl">,
  options: RuntimeOptions,
): ReadonlyMap<string, string> {
  const cannotTell = options.runsSteps === false && settings.databaseUrl !== undefined;
  return settings.redisUrl || cannotTell
    ? new Map()
    : new Map([
        [
          "bullmq",
          "no Redis is configured; set REDIS_URL (e.g. redis://127.0.0.1:6379) here and start `tributary worker` processes, or use the local executor",
        ],
      ]);
}

/** What the API's services are built from: the database, and the stores and catalog the process shares. */
export interface ApiParts {
  readonly db: Kysely<Database>;
  readonly definitions: DefinitionStore;
  readonly graphs: GraphCache;
  readonly catalog: Catalog;
  readonly runs: RunStore;
  readonly backfills: BackfillStore;
  readonly alerts: Pick<AlertStore, "list">;
  /** Executors no process would run (see unavailableExecutors): a run that needs one is refused. */
  readonly unavailableExecutors: ReadonlyMap<string, string>;
  /** No access control: every request is the local caller (see RuntimeOptions.openAccess). */
  readonly openAccess: boolean;
  /** Where large outputs live: a wipe deletes their objects from it (absent: a reconciler that has one does). */
  readonly outputStore?: OutputStore | null;
  /** Where try logs are: a restore of archived history writes them back there. */
  readonly logsDir?: string | null;
}

/**
 * A group of services whose commands take the request's Guard last: each runs under `guard.audited`, so a change it
 * authorised that then fails leaves a failed audit record.
 */
function withFailureAudit<T extends object>(group: T): T {
  const wrapped: Record<string, unknown> = { ...(group as Record<string, unknown>) };
  for (const [name, value] of Object.entries(group)) {
    if (typeof value !== "function") continue;
    const fn = value as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = (...args: unknown[]) => {
      const guard = args.at(-1);
      return isGuard(guard) ? guard.audited(() => fn(...args)) : fn(...args);
    };
  }
  return wrapped as T;
}

function isGuard(value: unknown): value is Guard {
  return typeof value === "object" && value !== null && "audited" in value && "authorize" in value;
}

/** What cancelling a run acts on: the assets of its steps. */
async function runScope(runs: RunStore, runId: string): Promise<AccessScope> {
  const run = await runs.getRun(runId);
  // An unknown run: the store's own error names it.
  return { assets: run ? [...new Set(run.steps.map((s) => s.assetKey))] : [], detail: { runId } };
}

/** What cancelling or resuming a backfill acts on: the assets it materialises. */
async function backfillScope(backfills: BackfillStore, id: string): Promise<AccessScope> {
  const backfill = await backfills.get(id).catch(() => undefined);
  return { assets: backfill ? [...backfill.selection.assetKeys] : [], detail: { backfillId: id } };
}

/** The assets a pause or resume names: listed keys, or the group's assets. */
async function pauseScope(graphs: GraphCache, target: PauseTarget): Promise<AccessScope> {
  const keys = new Set(target.assetKeys ?? []);
  if (target.group !== undefined && target.group !== "") {
    const { graph } = await graphs.current();
    for (const a of graph.assets) if (a.group === target.group) keys.add(a.key);
  }
  return { assets: [...keys], detail: target.group ? { group: target.group } : {} };
}

/** Group and owner of each asset in the current definitions; an asset no longer defined has neither. */
async function ownershipOf(graphs: GraphCache, keys: readonly string[]): Promise<AssetOwnership[]> {
  const { graph } = await graphs.current();
  return keys.map((key) => {
    const a = graph.get(key);
    return { key, group: a?.group ?? "", owner: a?.owner ?? null };
  });
}

/** The API's services in their groups, each command wired to the stores it writes, stamped with the current time. */
export function apiServices(parts: ApiParts): ApiServices {
  const { db, definitions, graphs, runs, backfills } = parts;
  const planning = { graphs, runs, definitions };
  const pauses = new PgPauseStore(db);
  const events = new PgEventStore(db);
  const evaluations = new PgAutomationStore(db);
  const pools = new PgPoolStore(db);
  const accessStore = new PgAccessStore(db);
  const authenticator = new Authenticator(accessStore, { open: parts.openAccess });
  // Lineage and erasure queries.
  const lineageServices = { graphs, definitions, lineage: new PgLineageStore(db) };
  const erasureServices = { ...lineageServices, erasures: new PgErasureStore(db) };
  const historyServices = {
    archives: new PgHistoryArchiveStore(db),
    outputStore: parts.outputStore ?? null,
    logsDir: parts.logsDir ?? null,
  };
  return {
    runs: withFailureAudit({
      store: runs,
      reads: new PgMaterializationQueryStore(db),
      launch: (request, guard) => launchRun({ ...planning, unavailableExecutors: parts.unavailableExecutors }, request, new Date(), guard),
      clearPartitions: (request, guard) => clearPartitions(planning, request, new Date(), guard),
      runChecks: (request, guard) => runChecks(planning, request, new Date(), guard),
      cancel: async (runId, guard) =>
        runs.requestCancel(runId, new Date(), await guard.authorize("cancelRun", "operator", await runScope(runs, runId))),
      clearMappedStep: async (target, guard) =>
        runs.clearMappedStep(
          target,
          new Date(),
          await guard.authorize("clearMappedStep", "operator", {
            assets: [target.assetKey],
            partitions: target.partitionKey ? [target.partitionKey] : [],
            detail: { runId: target.runId, mapIndex: target.mapIndex },
          }),
        ),
    }),
    backfills: withFailureAudit({
      store: backfills,
      launch: (request, guard) => launchBackfill({ ...planning, backfills }, request, new Date(), guard),
      cancel: async (id, guard) =>
        backfills.requestCancel(id, new Date(), await guard.authorize("cancelBackfill", "operator", await backfillScope(backfills, id))),
      resume: async (id, guard) =>
        backfills.resume(id, new Date(), await guard.authorize("resumeBackfill", "operator", await backfillScope(backfills, id))),
      retryFailures: (id, guard) => retryBackfillFailures({ ...planning, backfills }, id, new Date(), guard),
    }),
    assets: withFailureAudit({
      catalog: parts.catalog,
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
      partitionStatus: new PgPartitionStatusStore(db),
      checkResults: new PgCheckResultStore(db),
      reportEvent: (request, guard) => reportAssetEvent({ graphs, events, definitions }, request, new Date(), guard),
      addDynamicPartitions: (request, guard) => addDynamicPartitions({ graphs, definitions }, request, guard),
      wipePartitions: (request, guard) =>
        wipePartitions(
          {
            graphs,
            definitions,
            wipes: new PgPartitionWipeStore(db),
            deletions: new PgOutputDeletionStore(db),
            outputStore: parts.outputStore ?? null,
          },
          request,
          new Date(),
          guard,
        ),
    }),
    automation: withFailureAudit({
      evaluations: (request) => automationEvaluations({ graphs, definitions, evaluations, pauses }, request),
      pauses,
      pause: async (target, guard) =>
        pauses.pause(target, new Date(), await guard.authorize("pauseAutomation", "operator", await pauseScope(graphs, target))),
      resume: async (target, guard) =>
        pauses.resume(target, new Date(), await guard.authorize("resumeAutomation", "operator", await pauseScope(graphs, target))),
    }),
    lineage: {
      around: (request) => lineage(lineageServices, request),
      erasureImpact: async (request, guard) => {
        await guard.authorize("erasureImpact", "viewer", { assets: [request.assetKey], partitions: request.partitionKeys });
        return erasureImpact(lineageServices, request);
      },
      erasures: withFailureAudit({
        request: (input, guard) => requestErasure(erasureServices, input, new Date(), guard),
        report: (id, guard) => erasureReport(erasureServices, id, guard),
        list: async (options, guard) => {
          const all = await listErasures(erasureServices, options);
          const visible = await Promise.all(all.map((r) => guard.canView(r.assetKey)));
          return all.filter((_, i) => visible[i]);
        },
        retry: (id, guard) => retryErasure(erasureServices, id, new Date(), guard),
      }),
    },
    triggers: new PgTriggerQueryStore(db),
    history: withFailureAudit({
      days: async (guard) => {
        await guard.authorize("historyArchives", "viewer", { assets: null });
        return historyArchiveDays(historyServices);
      },
      restore: (input, guard) => restoreHistory(historyServices, input, new Date(), guard),
    }),
    pools: withFailureAudit({
      list: () => pools.list(),
      setSlots: async (input, guard) =>
        pools.setSlots(
          input,
          new Date(),
          await guard.authorize("setPoolSlots", "admin", { assets: null, detail: { pool: input.name, slots: input.slots } }),
        ),
    }),
    access: {
      authenticator,
      guardFor: (caller) =>
        new RequestAccess(caller, {
          teams: () => authenticator.teams(),
          ownership: (keys) => ownershipOf(graphs, keys),
          record: (entry) => accessStore.audit(entry, new Date()),
        }),
      auditEvents: async (query, guard) => {
        await guard.authorize("auditEvents", "admin", { assets: null });
        return accessStore.auditEvents(query);
      },
    },
    alerts: parts.alerts,
    now: () => new Date(),
  };
}

/** The stores behind `/metrics` and `/readyz` over one database. */
export function observabilityStores(db: Kysely<Database>): ObservabilityStores {
  return {
    metrics: new PgMetricsQueryStore(db),
    migrationStatus: (files) => migrationStatus(db, files),
  };
}

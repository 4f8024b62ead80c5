// Shared by the benchmarks: a generated definitions file stored the way `tributary check` / `dev` would (loader
// in child processes, snapshot in the database), the stores and executors over it, and runs waited for to their end.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { Kysely } from "kysely";
import { launchRun } from "../src/api/index.js";
// The CLI has no index module: these are the one way in to how `check` and `dev` store a load and build the API's context.
import { syncDefinitions, type Runtime } from "../src/cli/index.js";
import { LocalExecutor, StoreExecutionBackend } from "../src/executor/index.js";
import { GraphCache, PgDefinitionStore, PgRunStore, type Database } from "../src/storage/index.js";
import { sleep, type BenchScope } from "./_setup.js";
import { RUN_DECISIONS } from "../src/planner/index.js";

/** Where dispatched steps find their definitions and write their logs. */
export interface BenchDirs {
  readonly definitionsDir: string;
  readonly logsDir: string;
}

/** The stores a reconciler and `launchRun` work with. */
export interface BenchStores {
  readonly definitions: PgDefinitionStore;
  readonly runs: PgRunStore;
  readonly graphs: GraphCache;
}

/** Writes `source` as the definitions directory's one file, bench.ts. */
export async function writeBenchDefinitions(dir: string, source: string): Promise<void> {
  await writeFile(path.join(dir, "bench.ts"), source);
}

/** Writes `source` into `dir` and stores its load; throws when the file fails to load. */
export async function storeBenchDefinitions(
  db: Kysely<Database>,
  dir: string,
  source: string,
  timeoutMs = 60_000,
): Promise<PgDefinitionStore> {
  await writeBenchDefinitions(dir, source);
  const definitions = new PgDefinitionStore(db);
  const sync = await syncDefinitions(definitions, { dir, timeoutMs });
  const failed = sync.result.files.find((f) => f.status === "error");
  if (failed) throw new Error(`bench definitions failed to load: ${failed.error?.message}`);
  return definitions;
}

/** storeBenchDefinitions, then the run store and graph cache over the stored definitions. */
export async function storeBenchGraph(db: Kysely<Database>, dir: string, source: string, timeoutMs = 60_000): Promise<BenchStores> {
  await storeBenchDefinitions(db, dir, source, timeoutMs);
  return benchStores(db);
}

/** The stores over definitions already stored in `db`. */
export function benchStores(db: Kysely<Database>): BenchStores {
  const definitions = new PgDefinitionStore(db);
  return { definitions, runs: new PgRunStore(db, RUN_DECISIONS), graphs: new GraphCache(definitions) };
}

/**
 * What `tributary dev` opens on the Postgres database at `url` (migrated; stores, catalog, the API's context), with
 * `dir` as its definitions and data directory; closed with the scope. Loaded on demand: only the API benchmark needs it.
 */
export async function openBenchRuntime(scope: BenchScope, url: string, dir: string): Promise<Runtime> {
  const { openRuntime, resolveSettings } = await import("../src/cli/index.js");
  const runtime = await openRuntime(resolveSettings({ definitions: dir, dataDir: dir }, { DATABASE_URL: url }));
  scope.onClose(() => runtime.close());
  return runtime;
}

/**
 * The store-backed execution backend over `stores`; unless `fastPath` is false, with the completion fast path for
 * `executor` (a finished step's downstream steps are claimed for it in the transaction that records the step).
 */
export function benchBackend(stores: BenchStores, executor: string, dirs: BenchDirs, fastPath = true): StoreExecutionBackend {
  return new StoreExecutionBackend({ ...stores, outputStore: null, ...(fastPath ? { followUp: { executor, dirs } } : {}) });
}

/** The local executor as `tributary dev` builds it (with the completion fast path), over the given stores. */
export function benchLocalExecutor(stores: BenchStores, dirs: BenchDirs, concurrencyPerProcess: number): LocalExecutor {
  return new LocalExecutor(benchBackend(stores, "local", dirs), {
    processes: 2,
    concurrencyPerProcess,
    definitionsDir: dirs.definitionsDir,
  });
}

/** Launches a run and waits for it, timing from launch (planning included) to the run's end; throws unless it succeeded. */
export async function runToEnd(
  stores: BenchStores,
  assetKeys: string[],
  selection: { all: true } | { from: string; to: string } | undefined,
): Promise<{ runId: string; steps: number; ms: number }> {
  const started = performance.now();
  const { runId, steps } = await launchRun(
    stores,
    { assetKeys, ...(selection && "all" in selection ? { allPartitions: true } : selection) },
    new Date(),
  );
  for (;;) {
    const run = await stores.runs.getRunSummary(runId);
    if (run && ["success", "failed", "canceled"].includes(run.status)) {
      if (run.status !== "success") throw new Error(`bench run ${runId} ended ${run.status}`);
      return { runId, steps, ms: performance.now() - started };
    }
    await sleep(5);
  }
}

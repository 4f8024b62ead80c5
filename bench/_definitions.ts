// Shared by the benchmarks: stores a generated definitions file the way
// `tributary check` / `dev` would (loader in child processes, snapshot in the database).
import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { Kysely } from "kysely";
import { launchRun } from "../src/api/index.js";
import { syncDefinitions } from "../src/cli/definitions-sync.js";
import { LocalExecutor, StoreExecutionBackend } from "../src/executor/index.js";
import type { SnapshotAsset } from "../src/graph/index.js";
import { buildDispatch } from "../src/reconciler/index.js";
import { PgDefinitionStore, type ClaimedStep, type Database, type GraphCache, type PgRunStore } from "../src/storage/index.js";

export async function storeBenchDefinitions(db: Kysely<Database>, dir: string, source: string, timeoutMs = 60_000): Promise<PgDefinitionStore> {
  await writeFile(path.join(dir, "bench.ts"), source);
  const definitions = new PgDefinitionStore(db);
  const sync = await syncDefinitions(definitions, { dir, timeoutMs });
  const failed = sync.result.files.find((f) => f.status === "error");
  if (failed) throw new Error(`bench definitions failed to load: ${failed.error?.message}`);
  return definitions;
}

/** The local executor as `tributary dev` builds it (with the completion fast path), over the given stores. */
export function benchLocalExecutor(
  stores: { runs: PgRunStore; definitions: PgDefinitionStore; graphs: GraphCache },
  dirs: { definitionsDir: string; logsDir: string },
  concurrencyPerProcess: number,
): LocalExecutor {
  const followUp = { executor: "local", dispatchOf: (claim: ClaimedStep, def: { asset: SnapshotAsset }) => buildDispatch(claim, def, dirs) };
  const backend = new StoreExecutionBackend({ ...stores, outputStore: null, followUp });
  return new LocalExecutor(backend, { processes: 2, concurrencyPerProcess, definitionsDir: dirs.definitionsDir });
}

/** Launches a run and waits for it, timing from launch (planning included) to the run's end; throws unless it succeeded. */
export async function runToEnd(
  stores: { runs: PgRunStore; graphs: GraphCache; definitions: PgDefinitionStore },
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
    await new Promise((r) => setTimeout(r, 5));
  }
}

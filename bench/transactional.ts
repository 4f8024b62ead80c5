// The transactional executor's steps/s: N steps (static partitions of one
// asset) that each insert one row through ctx.tx, committed with the step's
// completion, on the local Postgres with one reconciler. For comparison, the
// same N steps through the local executor (2 worker processes), each inserting
// its row through its own pg pool, outside any step transaction. Prints one
// JSON object; records nothing.
//
//   npx tsx bench/transactional.ts [--steps 2000] [--concurrency 4,8] [--local-concurrency 4] [--no-local]
import { symlink } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { LocalExecutor, TransactionalExecutor } from "../src/executor/index.js";
import type { Executor } from "../src/execution/index.js";
import { Reconciler } from "../src/reconciler/index.js";
import type { PostgresHandle } from "../src/storage/index.js";
import { benchBackend, runToEnd, storeBenchGraph, type BenchDirs, type BenchStores } from "./_definitions.js";
import { printResult, REPO_ROOT, unlimitedDefaultPool, withScope } from "./_setup.js";

const { values: args } = parseArgs({
  options: {
    steps: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "4,8" },
    "local-concurrency": { type: "string", default: "4" },
    "no-local": { type: "boolean", default: false },
  },
});
const STEPS = Number(args.steps);
const CONCURRENCIES = args.concurrency.split(",").map(Number);
const LOCAL_CONCURRENCY = Number(args["local-concurrency"]);

const definitionsOf = (url: string) => `
import { asset, staticPartitions } from "tributary";
const keys = staticPartitions(Array.from({ length: ${STEPS} }, (_, i) => "k" + String(i).padStart(6, "0")));

export const tx = asset({ key: "bench/tx", executor: "transactional", partitions: keys }, async (ctx) => {
  await ctx.tx.insertInto("bench_rows").values({ asset: "tx", partition_key: ctx.partition.key }).execute();
  return null;
});

// The local executor's workers have no step transaction: each process keeps a pool of its own.
let pool;
export const local = asset({ key: "bench/local", partitions: keys }, async (ctx) => {
  if (!pool) {
    const pg = (await import("pg")).default;
    pool = new pg.Pool({ connectionString: ${JSON.stringify(url)}, max: ${LOCAL_CONCURRENCY} });
  }
  await pool.query("insert into bench_rows (asset, partition_key) values ('local', $1)", [ctx.partition.key]);
  return null;
});
`;

async function main(): Promise<void> {
  const results: Record<string, unknown> = { bench: "transactional", steps: STEPS, database: "postgres (local)", reconcilers: 1 };
  await withScope(async (scope) => {
    const { db, url, handle } = await scope.database("tx", 20);
    const dirs = { definitionsDir: await scope.tempDir("tx-defs"), logsDir: await scope.tempDir("tx-logs") };
    // The local step imports pg: resolve it from this checkout.
    await symlink(path.join(REPO_ROOT, "node_modules"), path.join(dirs.definitionsDir, "node_modules"));
    const stores = await storeBenchGraph(db, dirs.definitionsDir, definitionsOf(url), 60_000);
    await sql`create table bench_rows (id bigserial primary key, asset text not null, partition_key text not null)`.execute(db);
    await unlimitedDefaultPool(db);

    const transactional: Record<string, unknown>[] = [];
    for (const concurrency of CONCURRENCIES) {
      const executor = new TransactionalExecutor(benchBackend(stores, "transactional", dirs), {
        database: handle,
        runs: stores.runs,
        concurrency,
        definitionsDir: dirs.definitionsDir,
      });
      const t = await measure(stores, handle, dirs, "transactional", executor, "bench/tx");
      transactional.push({ concurrency, ...t });
      await sql`truncate bench_rows`.execute(db);
    }
    results.transactional = transactional;

    if (!args["no-local"]) {
      const executor = new LocalExecutor(benchBackend(stores, "local", dirs), {
        processes: 2,
        concurrencyPerProcess: LOCAL_CONCURRENCY,
        definitionsDir: dirs.definitionsDir,
      });
      await executor.ready();
      results.local = {
        processes: 2,
        concurrencyPerProcess: LOCAL_CONCURRENCY,
        ...(await measure(stores, handle, dirs, "local", executor, "bench/local")),
      };
    }
  });
  printResult(results);
}

/** One reconciler with this executor alone; a run of every partition of the asset, from launch to its end. */
async function measure(
  stores: BenchStores,
  handle: PostgresHandle,
  dirs: BenchDirs,
  kind: string,
  executor: Executor,
  assetKey: string,
): Promise<Record<string, number>> {
  const reconciler = new Reconciler({
    store: stores.runs,
    database: handle,
    graphs: stores.graphs,
    executors: { [kind]: executor },
    ...dirs,
    pollIntervalMs: 500,
    onPass: (ms, info) => {
      passes++;
      passMs += ms;
      claimed += info.dispatched;
    },
  });
  let passes = 0;
  let passMs = 0;
  let claimed = 0;
  await reconciler.start();
  try {
    const { ms } = await runToEnd(stores, [assetKey], { all: true });
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from bench_rows`.execute(handle.db);
    if (rows[0]!.n !== STEPS) throw new Error(`${kind}: ${rows[0]!.n} rows for ${STEPS} steps`);
    return {
      wallMs: Math.round(ms),
      stepsPerSec: Math.round((STEPS / ms) * 1000),
      rows: rows[0]!.n,
      // How the reconciler kept up: passes made, their mean length, steps claimed per pass.
      reconcilerPasses: passes,
      meanPassMs: Math.round((passMs / Math.max(1, passes)) * 10) / 10,
      stepsPerPass: Math.round((claimed / Math.max(1, passes)) * 10) / 10,
    };
  } finally {
    await reconciler.stop();
    await executor.close({ graceMs: 1_000 });
  }
}

await main();

// The transactional executor's steps/s: N steps (static partitions of one
// asset) that each insert one row through ctx.tx, committed with the step's
// completion, on the local Postgres with one reconciler. For comparison, the
// same N steps through the local executor (2 worker processes), each inserting
// its row through its own pg pool, outside any step transaction. Prints one
// JSON object; records nothing.
//
//   npx tsx bench/transactional.ts [--steps 2000] [--concurrency 4,8] [--local-concurrency 4] [--no-local]
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { LocalExecutor, StoreExecutionBackend, TransactionalExecutor, type Executor } from "../src/executor/index.js";
import type { SnapshotAsset } from "../src/graph/index.js";
import { buildDispatch, Reconciler } from "../src/reconciler/index.js";
import {
  createDatabase,
  databaseUrlWithName,
  dropDatabase,
  GraphCache,
  migrate,
  openPostgres,
  PgRunStore,
  type ClaimedStep,
  type PgDefinitionStore,
} from "../src/storage/index.js";
import { runToEnd, storeBenchDefinitions } from "./_definitions.js";

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
const adminUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const REPO = fileURLToPath(new URL("..", import.meta.url));

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
  const dbName = `tributary_bench_tx_${process.pid}`;
  await createDatabase(adminUrl, dbName);
  const url = databaseUrlWithName(adminUrl, dbName);
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-bench-tx-defs-"));
  const logsDir = await mkdtemp(path.join(tmpdir(), "tributary-bench-tx-logs-"));
  // The local step imports pg: resolve it from this checkout.
  await symlink(path.join(REPO, "node_modules"), path.join(dir, "node_modules"));
  const handle = await openPostgres({ kind: "postgres", url, maxConnections: 20 });
  const results: Record<string, unknown> = { bench: "transactional", steps: STEPS, database: "postgres (local)", reconcilers: 1 };
  try {
    await migrate(handle.db);
    const definitions = await storeBenchDefinitions(handle.db, dir, definitionsOf(url), 60_000);
    await sql`create table bench_rows (id bigserial primary key, asset text not null, partition_key text not null)`.execute(handle.db);
    await sql`update pools set slots = 100000 where name = 'default_pool'`.execute(handle.db);
    const runs = new PgRunStore(handle.db);
    const graphs = new GraphCache(definitions);
    const dirs = { definitionsDir: dir, logsDir };
    const followUp = (kind: string) => ({ executor: kind, dispatchOf: (claim: ClaimedStep, def: { asset: SnapshotAsset }) => buildDispatch(claim, def, dirs) });

    const transactional: Record<string, unknown>[] = [];
    for (const concurrency of CONCURRENCIES) {
      const backend = new StoreExecutionBackend({ runs, definitions, graphs, outputStore: null, followUp: followUp("transactional") });
      const executor = new TransactionalExecutor(backend, {
        database: handle,
        runs,
        concurrency,
        definitionsDir: dir,
      });
      const t = await measure({ runs, graphs, definitions, handle, dirs }, "transactional", executor, "bench/tx");
      transactional.push({ concurrency, ...t });
      await sql`truncate bench_rows`.execute(handle.db);
    }
    results.transactional = transactional;

    if (!args["no-local"]) {
      const backend = new StoreExecutionBackend({ runs, definitions, graphs, outputStore: null, followUp: followUp("local") });
      const executor = new LocalExecutor(backend, { processes: 2, concurrencyPerProcess: LOCAL_CONCURRENCY, definitionsDir: dir });
      await executor.ready();
      results.local = { processes: 2, concurrencyPerProcess: LOCAL_CONCURRENCY, ...(await measure({ runs, graphs, definitions, handle, dirs }, "local", executor, "bench/local")) };
    }
  } finally {
    await handle.close();
    await dropDatabase(adminUrl, dbName);
    for (const d of [dir, logsDir]) await rm(d, { recursive: true, force: true });
  }
  console.log(JSON.stringify(results));
}

/** One reconciler with this executor alone; a run of every partition of the asset, from launch to its end. */
async function measure(
  s: { runs: PgRunStore; graphs: GraphCache; definitions: PgDefinitionStore; handle: Awaited<ReturnType<typeof openPostgres>>; dirs: { definitionsDir: string; logsDir: string } },
  kind: string,
  executor: Executor,
  assetKey: string,
): Promise<Record<string, number>> {
  const reconciler = new Reconciler({
    store: s.runs,
    database: s.handle,
    graphs: s.graphs,
    executors: { [kind]: executor },
    definitionsDir: s.dirs.definitionsDir,
    logsDir: s.dirs.logsDir,
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
    const { ms } = await runToEnd({ graphs: s.graphs, runs: s.runs, definitions: s.definitions }, [assetKey], { all: true });
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from bench_rows`.execute(s.handle.db);
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

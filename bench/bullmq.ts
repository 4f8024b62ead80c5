// W1–W3 (see bench/execution.ts) through the BullMQ fleet: one reconciler
// enqueues into Redis, N real `tributary worker` processes (1 worker process
// each) run the steps. Prints one JSON object.
//
//   npx tsx bench/bullmq.ts [--workers 1,2,4] [--only w1,w2,w3] [--report api|database]
//
// --report api (default): workers report through the execution API of a
// `tributary api` process started here, holding no database credentials
// (each try has its own token); --report database: workers write results to
// Postgres themselves (DATABASE_URL). The difference is the API's cost.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { BullmqExecutor } from "../src/executor/bullmq-executor.js";
import { Reconciler } from "../src/reconciler/index.js";
import {
  createDatabase,
  databaseUrlWithName,
  dropDatabase,
  GraphCache,
  migrate,
  openPostgres,
  PgRunStore,
  PgTryTokenStore,
} from "../src/storage/index.js";
import { runToEnd, storeBenchDefinitions } from "./_definitions.js";

const { values: args } = parseArgs({
  options: {
    workers: { type: "string", default: "1,2,4" },
    only: { type: "string", default: "w1,w2,w3" },
    report: { type: "string", default: "api" },
  },
});
const adminUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const redisUrl = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const BIN = path.resolve(import.meta.dirname, "../bin/tributary.mjs");

const DEFINITIONS = `
import { allPartitions, asset, dep, staticPartitions } from "tributary";
const keys = (n: number, p: string) => Array.from({ length: n }, (_, i) => p + String(i).padStart(5, "0"));
const chains = staticPartitions(keys(2000, "c"));
const executor = "bullmq";
export const a = asset({ key: "w1/a", partitions: chains, executor }, () => 1);
export const b = asset({ key: "w1/b", partitions: chains, deps: { a }, executor }, (_ctx, { a }) => a + 1);
export const c = asset({ key: "w1/c", partitions: chains, deps: { b }, executor }, (_ctx, { b }) => b + 1);
export const root = asset({ key: "w2/root", executor }, () => 1);
export const child = asset({ key: "w2/child", partitions: staticPartitions(keys(500, "k")), deps: { root }, executor }, () => 1);
export const join = asset({ key: "w2/join", deps: { all: dep(child, allPartitions()) }, executor }, (_ctx, { all }) => all.length);
export const burst = asset({ key: "w3/burst", partitions: staticPartitions(keys(5000, "b")), executor }, () => null);
`;

async function main(): Promise<void> {
  const results: Record<string, unknown> = { bench: "bullmq", report: args.report, database: "postgres (local)", redis: redisUrl };
  for (const n of args.workers.split(",").map(Number)) results[`workers${n}`] = await withWorkers(n);
  console.log(JSON.stringify(results));
}

async function withWorkers(count: number): Promise<Record<string, unknown>> {
  const dbName = `tributary_bench_bullmq_${process.pid}_${count}`;
  await createDatabase(adminUrl, dbName);
  const url = databaseUrlWithName(adminUrl, dbName);
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-bench-defs-"));
  const logsDir = await mkdtemp(path.join(tmpdir(), "tributary-bench-logs-"));
  const handle = await openPostgres({ kind: "postgres", url, maxConnections: 10 });
  const workers: ChildProcess[] = [];
  let api: ChildProcess | undefined;
  const out: Record<string, unknown> = {};
  let reconciler: Reconciler | undefined;
  let executor: BullmqExecutor | undefined;
  try {
    await migrate(handle.db);
    const definitions = await storeBenchDefinitions(handle.db, dir, DEFINITIONS, 60_000);
    const runs = new PgRunStore(handle.db);
    const graphs = new GraphCache(definitions);
    await sql`update pools set slots = 100000 where name = 'default_pool'`.execute(handle.db);
    // A fresh Redis namespace per configuration: jobs of an earlier one must not leak in.
    const tokens = new PgTryTokenStore(handle.db);
    // A Redis prefix of this configuration's own: jobs of an earlier one (or another deployment) never mix in.
    const prefix = `tributary-bench-${process.pid}-${count}`;
    executor = new BullmqExecutor({
      redisUrl,
      prefix,
      definitionsDir: dir,
      logsDir,
      maxWaiting: 2_000,
      ...(args.report === "api"
        ? {
            issueTokens: async (steps: readonly { stepId: number; tryNumber: number }[]) =>
              new Map((await tokens.issue(steps.map((s) => ({ stepId: s.stepId, tryNumber: s.tryNumber })), new Date())).map((t) => [t.stepId, t.token])),
          }
        : {}),
    });
    reconciler = new Reconciler({ store: runs, database: handle, graphs, executors: { bullmq: executor }, definitionsDir: dir, logsDir, pollIntervalMs: 500, claimBatch: 512 });
    await reconciler.start();
    let apiUrl: string | undefined;
    if (args.report === "api") {
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      api = await startProcess(["api", "--port", String(port), "--definitions", dir, "--data-dir", path.join(logsDir, "api")], { DATABASE_URL: url }, "/readyz", port);
      apiUrl = `http://127.0.0.1:${port}`;
    }
    for (let i = 0; i < count; i++) {
      const common = ["worker", "--definitions", dir, "--data-dir", path.join(logsDir, `w${i}`), "--processes", "1", "--concurrency", "256"];
      workers.push(
        apiUrl
          ? await startProcess([...common, "--url", apiUrl], { REDIS_URL: redisUrl, DATABASE_URL: "", TRIBUTARY_REDIS_PREFIX: prefix }, "takes steps from queue")
          : await startProcess(common, { REDIS_URL: redisUrl, DATABASE_URL: url, TRIBUTARY_REDIS_PREFIX: prefix }, "takes steps from queue"),
      );
    }
    await runToEnd({ runs, graphs, definitions }, ["w2/root"], undefined); // warm-up: each worker imports the file
    if (args.only.includes("w1")) {
      const t = await runToEnd({ runs, graphs, definitions }, ["w1/a", "w1/b", "w1/c"], { all: true });
      out.w1 = { steps: t.steps, wallMs: Math.round(t.ms), stepsPerSec: Math.round((t.steps / t.ms) * 1000) };
    }
    if (args.only.includes("w2")) {
      const t = await runToEnd({ runs, graphs, definitions }, ["w2/root", "w2/child", "w2/join"], { all: true });
      out.w2 = { steps: t.steps, wallMs: Math.round(t.ms) };
    }
    if (args.only.includes("w3")) {
      const t = await runToEnd({ runs, graphs, definitions }, ["w3/burst"], { all: true });
      out.w3 = { steps: t.steps, wallMs: Math.round(t.ms), stepsPerSec: Math.round((t.steps / t.ms) * 1000) };
    }
  } finally {
    for (const w of workers) w.kill("SIGTERM");
    await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode === null ? w.once("exit", r) : r(null)))));
    api?.kill("SIGTERM");
    if (api && api.exitCode === null) await new Promise((r) => api!.once("exit", r));
    await reconciler?.stop();
    await executor?.close();
    await handle.close();
    await dropDatabase(adminUrl, dbName);
    await rm(dir, { recursive: true, force: true });
    await rm(logsDir, { recursive: true, force: true });
  }
  return out;
}

/** A `tributary …` child process, once it says `ready` on stderr (or, with a port, answers `ready` as a path). */
async function startProcess(argv: string[], env: Record<string, string>, ready: string, port?: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, ...argv], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let output = "";
  child.stderr!.on("data", (d: Buffer) => {
    output += d.toString();
    if (process.env.BENCH_VERBOSE) process.stderr.write(`[${argv[0]}] ${d.toString()}`);
  });
  const deadline = Date.now() + 60_000;
  const isReady = async () =>
    port === undefined ? output.includes(ready) : await fetch(`http://127.0.0.1:${port}${ready}`).then((r) => r.ok, () => false);
  while (!(await isReady())) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`tributary ${argv[0]} did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

await main();

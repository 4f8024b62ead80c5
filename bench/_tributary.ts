// Tributary's side of the execution workloads (bench/_workloads.ts): the workloads' assets stored as a definitions
// file on a scratch Postgres database, one or two reconcilers with the local executor (the completion fast path on
// unless BENCH_NO_FAST_PATH), and W1–W3 run as runs launched and waited for.
import { sql, type Kysely } from "kysely";
import { LocalExecutor } from "../src/executor/index.js";
import type { Database } from "../src/storage/index.js";
import { benchBackend, runToEnd, storeBenchGraph, type BenchStores } from "./_definitions.js";
import { round1, unlimitedDefaultPool, type BenchScope } from "./_setup.js";
import { throughput, W1_CHAINS, W2_CHILDREN, W3_STEPS, type W1Result, type W2Result, type W3Result } from "./_workloads.js";

/** W1–W3's assets, and W4's: one step lists 10 000 items, a mapped asset expands into one step per item, a reader gathers them. */
export const WORKLOAD_DEFINITIONS = `
import { allPartitions, asset, dep, staticPartitions } from "tributary";
const keys = (n: number, p: string) => Array.from({ length: n }, (_, i) => p + String(i).padStart(5, "0"));
const chains = staticPartitions(keys(${W1_CHAINS}, "c"));
export const a = asset({ key: "w1/a", partitions: chains }, () => 1);
export const b = asset({ key: "w1/b", partitions: chains, deps: { a } }, (_ctx, { a }) => a + 1);
export const c = asset({ key: "w1/c", partitions: chains, deps: { b } }, (_ctx, { b }) => b + 1);
export const root = asset({ key: "w2/root" }, () => 1);
export const child = asset({ key: "w2/child", partitions: staticPartitions(keys(${W2_CHILDREN}, "k")), deps: { root } }, () => 1);
export const join = asset({ key: "w2/join", deps: { all: dep(child, allPartitions()) } }, (_ctx, { all }) => all.length);
export const burst = asset({ key: "w3/burst", partitions: staticPartitions(keys(${W3_STEPS}, "b")) }, () => null);
export const list = asset({ key: "w4/list" }, () => Array.from({ length: 10000 }, (_, i) => i));
export const mapped = asset({ key: "w4/mapped", deps: { list }, map: ({ list }) => list }, () => null);
export const gathered = asset({ key: "w4/gathered", deps: { mapped } }, (_ctx, { mapped }) => mapped.length);
`;

/** A scratch database with the workloads' assets and `reconcilers` running reconcilers, warmed up. */
export interface TributaryBench {
  readonly db: Kysely<Database>;
  readonly stores: BenchStores;
  w1(): Promise<W1Result & { readonly runId: string }>;
  w2(): Promise<W2Result>;
  w3(): Promise<W3Result>;
}

export async function startTributaryBench(scope: BenchScope, reconcilers: number): Promise<TributaryBench> {
  const { db, handle } = await scope.database("execution");
  const dirs = { definitionsDir: await scope.tempDir("defs"), logsDir: await scope.tempDir("logs") };
  const stores = await storeBenchGraph(db, dirs.definitionsDir, WORKLOAD_DEFINITIONS, 60_000);
  await unlimitedDefaultPool(db);
  for (let i = 0; i < reconcilers; i++) {
    const executor = new LocalExecutor(benchBackend(stores, "local", dirs, !process.env.BENCH_NO_FAST_PATH), {
      processes: reconcilers === 1 ? 2 : 1,
      concurrencyPerProcess: Number(process.env.BENCH_CPP ?? 256),
      maxBatchSize: Number(process.env.BENCH_BATCH ?? 500),
      definitionsDir: dirs.definitionsDir,
    });
    await scope.reconciler({
      store: stores.runs,
      database: handle,
      graphs: stores.graphs,
      executors: { local: executor },
      ...dirs,
      pollIntervalMs: 500,
      claimBatch: Number(process.env.BENCH_CLAIM ?? 512),
    });
  }
  // Warm up the worker processes (first import of the definitions file).
  await runToEnd(stores, ["w2/root"], undefined);
  return {
    db,
    stores,
    async w1() {
      const t = await runToEnd(stores, ["w1/a", "w1/b", "w1/c"], { all: true });
      return { runId: t.runId, ...throughput(t.steps, t.ms), handoffMs: (await handoff(db, t.runId)).handoffMs };
    },
    async w2() {
      const t = await runToEnd(stores, ["w2/root", "w2/child", "w2/join"], { all: true });
      return { steps: t.steps, wallMs: Math.round(t.ms) };
    },
    async w3() {
      const t = await runToEnd(stores, ["w3/burst"], { all: true });
      return throughput(t.steps, t.ms);
    },
  };
}

/** Upstream end → downstream start over a run's edges, and where the time went (p50 per stage). */
export async function handoff(
  db: Kysely<Database>,
  runId: string,
): Promise<{ handoffMs: W1Result["handoffMs"]; handoffStagesP50Ms: Record<string, number> }> {
  const { rows } = await sql<{ p50: number; p99: number; n: number; to_scheduled: number; to_queued: number; to_started: number }>`
    select percentile_cont(0.5) within group (order by extract(epoch from (d.started_at - u.ended_at)) * 1000) as p50,
           percentile_cont(0.99) within group (order by extract(epoch from (d.started_at - u.ended_at)) * 1000) as p99,
           count(*)::int as n,
           percentile_cont(0.5) within group (order by extract(epoch from (s.scheduled_at - u.ended_at)) * 1000) as to_scheduled,
           percentile_cont(0.5) within group (order by extract(epoch from (d.queued_at - s.scheduled_at)) * 1000) as to_queued,
           percentile_cont(0.5) within group (order by extract(epoch from (d.started_at - d.queued_at)) * 1000) as to_started
    from step_deps sd
    join steps s on s.id = sd.step_id
    join step_tries d on d.step_id = sd.step_id and d.try_number = 1
    join step_tries u on u.step_id = sd.upstream_step_id and u.try_number = 1
    where s.run_id = ${runId}::uuid`.execute(db);
  const h = rows[0]!;
  return {
    handoffMs: { p50: round1(h.p50), p99: round1(h.p99), samples: h.n },
    handoffStagesP50Ms: {
      endToScheduled: round1(h.to_scheduled),
      scheduledToQueued: round1(h.to_queued),
      queuedToStarted: round1(h.to_started),
    },
  };
}

// W1–W3 from the Execution core issue: no-op steps on the local Postgres,
// the local executor, one or two reconcilers. Prints one JSON object.
//
//   npx tsx bench/execution.ts [--reconcilers 1|2] [--only w1,w2,w3,w4]
//
// W1 chain: 2 000 independent 3-step chains (assets a → b → c, 2 000 static
//    partitions, identity mapping): steps/s end to end, and the hand-off latency
//    from an upstream step's end to its downstream step's start (p50, p99).
// W2 fan-out/fan-in: 1 root, 500 children, 1 join: wall time.
// W3 burst: 5 000 ready root steps at once: steps/s.
// W4 fan-out at run time: one step lists 10 000 items, the mapped asset expands
//    into 10 000 no-op mapped steps, a reader gathers their outputs: wall time,
//    expansion (the expanding try's end → its mapped steps created), and the
//    mapped steps' own span (first created → last ended). The gather happens in
//    the transaction that records the last mapped step.
import { parseArgs } from "node:util";
import { sql, type Kysely } from "kysely";
import { benchBackend, runToEnd, storeBenchGraph } from "./_definitions.js";
import { printResult, round1, unlimitedDefaultPool, withScope } from "./_setup.js";
import { LocalExecutor } from "../src/executor/index.js";
import type { PgRunStore, Database } from "../src/storage/index.js";

const { values: args } = parseArgs({
  options: { reconcilers: { type: "string", default: "1" }, only: { type: "string", default: "w1,w2,w3,w4" } },
});
const reconcilerCount = Number(args.reconcilers);
const only = new Set(args.only.split(","));

const DEFINITIONS = `
import { allPartitions, asset, dep, staticPartitions } from "tributary";
const keys = (n: number, p: string) => Array.from({ length: n }, (_, i) => p + String(i).padStart(5, "0"));
const chains = staticPartitions(keys(2000, "c"));
export const a = asset({ key: "w1/a", partitions: chains }, () => 1);
export const b = asset({ key: "w1/b", partitions: chains, deps: { a } }, (_ctx, { a }) => a + 1);
export const c = asset({ key: "w1/c", partitions: chains, deps: { b } }, (_ctx, { b }) => b + 1);
export const root = asset({ key: "w2/root" }, () => 1);
export const child = asset({ key: "w2/child", partitions: staticPartitions(keys(500, "k")), deps: { root } }, () => 1);
export const join = asset({ key: "w2/join", deps: { all: dep(child, allPartitions()) } }, (_ctx, { all }) => all.length);
export const burst = asset({ key: "w3/burst", partitions: staticPartitions(keys(5000, "b")) }, () => null);
export const list = asset({ key: "w4/list" }, () => Array.from({ length: 10000 }, (_, i) => i));
export const mapped = asset({ key: "w4/mapped", deps: { list }, map: ({ list }) => list }, () => null);
export const gathered = asset({ key: "w4/gathered", deps: { mapped } }, (_ctx, { mapped }) => mapped.length);
`;

async function main(): Promise<void> {
  const results: Record<string, unknown> = { bench: "execution", reconcilers: reconcilerCount, database: "postgres (local)" };
  await withScope(async (scope) => {
    const { db, handle } = await scope.database("execution");
    const dirs = { definitionsDir: await scope.tempDir("defs"), logsDir: await scope.tempDir("logs") };
    const stores = await storeBenchGraph(db, dirs.definitionsDir, DEFINITIONS, 60_000);
    if (process.env.BENCH_PROFILE) profile(stores.runs, results);
    await unlimitedDefaultPool(db);

    for (let i = 0; i < reconcilerCount; i++) {
      const executor = new LocalExecutor(benchBackend(stores, "local", dirs, !process.env.BENCH_NO_FAST_PATH), {
        processes: reconcilerCount === 1 ? 2 : 1,
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

    if (only.has("w1")) {
      const t = await runToEnd(stores, ["w1/a", "w1/b", "w1/c"], { all: true });
      results.w1 = {
        steps: t.steps,
        wallMs: Math.round(t.ms),
        stepsPerSec: Math.round((t.steps / t.ms) * 1000),
        ...(await handoff(db, t.runId)),
      };
      // The same chains, 50 at a time: hand-off when a slot is free (orchestration overhead, no queueing).
      const light = await runToEnd(stores, ["w1/a", "w1/b", "w1/c"], { from: "c00000", to: "c00049" });
      results.w1Unsaturated = { steps: light.steps, wallMs: Math.round(light.ms), ...(await handoff(db, light.runId)) };
    }
    if (only.has("w2")) {
      const t = await runToEnd(stores, ["w2/root", "w2/child", "w2/join"], { all: true });
      results.w2 = { steps: t.steps, wallMs: Math.round(t.ms) };
    }
    if (only.has("w3")) {
      const t = await runToEnd(stores, ["w3/burst"], { all: true });
      results.w3 = { steps: t.steps, wallMs: Math.round(t.ms), stepsPerSec: Math.round((t.steps / t.ms) * 1000) };
    }
    if (only.has("w4")) {
      const t = await runToEnd(stores, ["w4/list", "w4/mapped", "w4/gathered"], undefined);
      const { rows } = await sql<{ mapped: number; expand_ms: number; run_ms: number }>`
        select count(*) filter (where s.map_index >= 0)::int as mapped,
               extract(epoch from (max(s.created_at) filter (where s.map_index >= 0)
                                   - max(t.ended_at) filter (where s.asset_key = 'w4/mapped' and s.map_index = -1))) * 1000 as expand_ms,
               extract(epoch from (max(s.ended_at) filter (where s.map_index >= 0) - min(s.created_at) filter (where s.map_index >= 0))) * 1000 as run_ms
        from steps s left join step_tries t on t.step_id = s.id and t.try_number = 1
        where s.run_id = ${t.runId}::uuid`.execute(db);
      const m = rows[0]!;
      results.w4 = {
        mappedSteps: m.mapped,
        wallMs: Math.round(t.ms),
        mappedStepsPerSec: Math.round((m.mapped / m.run_ms) * 1000),
        expandMs: round1(m.expand_ms),
        runMappedMs: Math.round(m.run_ms),
      };
    }
  });
  printResult(results);
}

/** Upstream end → downstream start over a run's edges, and where the time went (p50 per stage). */
async function handoff(db: Kysely<Database>, runId: string): Promise<Record<string, unknown>> {
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

/** With BENCH_PROFILE=1: time spent in each store method, and batch sizes. */
function profile(store: PgRunStore, results: Record<string, unknown>): void {
  const stats: Record<string, { calls: number; ms: number; items: number }> = {};
  results.profile = stats;
  for (const name of ["claimRunnable", "markStarted", "heartbeat", "completeSteps", "housekeeping", "latestOutputs"] as const) {
    const original = (store[name] as (...a: unknown[]) => Promise<unknown>).bind(store);
    (store as unknown as Record<string, unknown>)[name] = async (...a: unknown[]) => {
      const t = performance.now();
      const out = await original(...a);
      const s = (stats[name] ??= { calls: 0, ms: 0, items: 0 });
      s.calls++;
      s.ms = Math.round(s.ms + performance.now() - t);
      s.items += Array.isArray(a[0]) ? a[0].length : Array.isArray(out) ? out.length : 0;
      return out;
    };
  }
}

await main();

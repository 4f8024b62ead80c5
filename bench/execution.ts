// Tributary's execution workloads W1–W3 (bench/_workloads.ts) and W4 on the local Postgres with no-op steps, the
// local executor and one or two reconcilers. Prints one JSON object.
//
//   npx tsx bench/execution.ts [--reconcilers 1|2] [--only w1,w2,w3,w4]
//
// W4 fan-out at run time: one step lists 10 000 items, the mapped asset expands
//    into 10 000 no-op mapped steps, a reader gathers their outputs: wall time,
//    expansion (the expanding try's end → its mapped steps created), and the
//    mapped steps' own span (first created → last ended). The gather happens in
//    the transaction that records the last mapped step.
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { runToEnd } from "./_definitions.js";
import { printResult, round1, withScope } from "./_setup.js";
import { handoff, startTributaryBench } from "./_tributary.js";
import type { PgRunStore } from "../src/storage/index.js";

const { values: args } = parseArgs({
  options: { reconcilers: { type: "string", default: "1" }, only: { type: "string", default: "w1,w2,w3,w4" } },
});
const reconcilerCount = Number(args.reconcilers);
const only = new Set(args.only.split(","));

async function main(): Promise<void> {
  const results: Record<string, unknown> = { bench: "execution", reconcilers: reconcilerCount, database: "postgres (local)" };
  await withScope(async (scope) => {
    const bench = await startTributaryBench(scope, reconcilerCount);
    const { db, stores } = bench;
    if (process.env.BENCH_PROFILE) profile(stores.runs, results);

    if (only.has("w1")) {
      const { runId, ...w1 } = await bench.w1();
      results.w1 = { ...w1, ...(await handoff(db, runId)) };
      // The same chains, 50 at a time: hand-off when a slot is free (orchestration overhead, no queueing).
      const light = await runToEnd(stores, ["w1/a", "w1/b", "w1/c"], { from: "c00000", to: "c00049" });
      results.w1Unsaturated = { steps: light.steps, wallMs: Math.round(light.ms), ...(await handoff(db, light.runId)) };
    }
    if (only.has("w2")) results.w2 = await bench.w2();
    if (only.has("w3")) results.w3 = await bench.w3();
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

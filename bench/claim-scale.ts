// The cost of a claim, and of finding the steps a completion makes runnable, as the number of waiting steps grows:
// a backfill held back by a pool or a run's max active steps leaves tens of thousands of steps scheduled, and a large
// run keeps as many pending. Neither should cost more per call because of them.
//
// For each size N, a fresh database with one running run of N scheduled steps and N pending steps (each pending step
// waiting on a scheduled one), seeded with bulk SQL. Then:
// - `claim`: PgRunStore.claimRunnable of 100 steps (the reconciler's claim), 20 times;
// - `complete`: PgRunStore.completeSteps of 100 claimed steps, each of which makes one pending step runnable, 20 times.
// Prints one JSON object: p50/p95/max ms per call and size.
//
//   npx tsx bench/claim-scale.ts [--sizes 2000,20000,200000]
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { RUN_DECISIONS } from "../src/planner/index.js";
import { PgRunStore } from "../src/storage/index.js";
import { p50p95max, printResult, unlimitedDefaultPool, withScope } from "./_setup.js";

const { values } = parseArgs({ options: { sizes: { type: "string", default: "2000,20000,200000" } } });
const SIZES = values.sizes.split(",").map(Number);
const CALLS = 20;
const BATCH = 100;

async function main(): Promise<void> {
  const results: Record<string, unknown> = { bench: "claim-scale", database: "postgres (local)", batch: BATCH, calls: CALLS };
  for (const n of SIZES) {
    results[`steps${n}`] = await withScope(async (scope) => {
      const { db } = await scope.database(`claim_${n}`);
      await unlimitedDefaultPool(db);
      const { rows } = await sql<{ id: string }>`
        insert into runs (status, origin, snapshot_version, plan, started_at, steps_total)
        values ('running', 'manual', 1, '{}', now(), ${2 * n}) returning id`.execute(db);
      const runId = rows[0]!.id;
      // Scheduled steps 1..n (partitions of bench/up), pending steps n+1..2n (of bench/down), each waiting on one.
      await sql`
        insert into steps (id, run_id, asset_key, partition_key, state, scheduled_at, upstream_total)
        select i, ${runId}::uuid, case when i <= ${n} then 'bench/up' else 'bench/down' end, 'p' || lpad((i % ${n})::text, 7, '0'),
               case when i <= ${n} then 'scheduled' else 'pending' end, case when i <= ${n} then now() end, case when i <= ${n} then 0 else 1 end
        from generate_series(1, ${2 * n}) as i`.execute(db);
      await sql`insert into step_deps (step_id, upstream_step_id) select i + ${n}, i from generate_series(1, ${n}) as i`.execute(db);
      await sql`select setval('steps_id_seq', ${2 * n})`.execute(db);
      await sql`analyze steps`.execute(db);
      await sql`analyze step_deps`.execute(db);
      const store = new PgRunStore(db, RUN_DECISIONS);
      const claimMs: number[] = [];
      const completeMs: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        let t = performance.now();
        const claimed = await store.claimRunnable({ now: new Date(), capacity: { local: BATCH }, limit: BATCH, agingShare: 0.1 });
        claimMs.push(performance.now() - t);
        if (claimed.length !== BATCH) throw new Error(`claimed ${claimed.length} steps, expected ${BATCH}`);
        const now = new Date();
        t = performance.now();
        const summary = await store.completeSteps(
          claimed.map((s) => ({
            stepId: s.stepId,
            tryNumber: s.tryNumber,
            outcome: "success" as const,
            output: { inline: "null", sizeBytes: 4 },
            dataVersion: "v",
            codeVersion: null,
            inputs: [],
            workerId: "bench",
            startedAt: now,
            endedAt: now,
            logRef: null,
          })),
          now,
        );
        completeMs.push(performance.now() - t);
        if (summary.scheduled !== BATCH) throw new Error(`completions scheduled ${summary.scheduled} steps, expected ${BATCH}`);
      }
      return { claim: p50p95max(claimMs), complete: p50p95max(completeMs) };
    });
  }
  printResult(results);
}

await main();

// The backfill benchmark: 365 daily partitions × a 25-asset graph
// (9 125 no-op steps) from launch to completion, on the local Postgres, the
// local executor and one reconciler with the backfill task. Prints one JSON
// object with a line per pacing.
//   npx tsx bench/backfill.ts [--only 1x16,1x64,7x16,365x1] [--days 365]
// Pacings are <maxPartitionsPerRun>x<maxConcurrentRuns>. Every pacing
// backfills the same year again (a fresh backfill re-materialises it).
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { launchBackfill } from "../src/api/index.js";
import { benchLocalExecutor, storeBenchGraph } from "./_definitions.js";
import { printResult, round1, sleep, unlimitedDefaultPool, withScope } from "./_setup.js";
import { BackfillTask } from "../src/reconciler/index.js";
import { PgBackfillStore } from "../src/storage/index.js";

const { values: args } = parseArgs({
  options: { only: { type: "string", default: "1x16,1x64,7x16,365x1" }, days: { type: "string", default: "365" } },
});
const pacings = args.only.split(",").map((p) => {
  const [perRun, concurrent] = p.split("x").map(Number);
  if (!perRun || !concurrent) throw new Error(`--only: "${p}" is not <maxPartitionsPerRun>x<maxConcurrentRuns>`);
  return { maxPartitionsPerRun: perRun, maxConcurrentRuns: concurrent };
});
const days = Number(args.days);
const ASSETS = 25;

// g/00 is the root; g/i reads g/(i-1) and, from g/03 on, g/(i-3): a deep
// graph with fan-in, the shape of a warehouse's staging → marts chain.
const DEFINITIONS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01", timezone: "UTC" });
const key = (i: number) => "g/" + String(i).padStart(2, "0");
const built: any[] = [];
for (let i = 0; i < ${ASSETS}; i++) {
  const deps: Record<string, any> = {};
  if (i >= 1) deps.prev = built[i - 1];
  if (i >= 3) deps.back = built[i - 3];
  built.push(asset({ key: key(i), partitions: days, deps }, () => null));
}
${Array.from({ length: ASSETS }, (_, i) => `export const g${i} = built[${i}];`).join("\n")}
`;

async function main(): Promise<void> {
  const results: Record<string, unknown> = {
    bench: "backfill",
    database: "postgres (local)",
    assets: ASSETS,
    days,
    steps: ASSETS * days,
  };
  await withScope(async (scope) => {
    const { db, handle } = await scope.database("backfill");
    const dirs = { definitionsDir: await scope.tempDir("backfill-defs"), logsDir: await scope.tempDir("backfill-logs") };
    const stores = await storeBenchGraph(db, dirs.definitionsDir, DEFINITIONS, 60_000);
    const { runs, graphs, definitions } = stores;
    const backfills = new PgBackfillStore(db);
    await unlimitedDefaultPool(db);

    const executor = benchLocalExecutor(stores, dirs, 128);
    let passes = 0;
    const task = new BackfillTask({
      backfills,
      graphs,
      definitions,
      log: (level, m) => level !== "info" && process.stderr.write(`[${level}] ${m}\n`),
    });
    await scope.reconciler({
      store: runs,
      database: handle,
      graphs,
      executors: { local: executor },
      ...dirs,
      // The fallback timer is long, so a result that depended on it would show.
      pollIntervalMs: 5_000,
      tasks: [{ name: task.name, run: (now) => (passes++, task.run(now)) }],
    });

    const last = new Date(Date.UTC(2025, 0, days)).toISOString().slice(0, 10);
    const out: Record<string, unknown>[] = [];
    for (const pacing of pacings) {
      passes = 0;
      const started = performance.now();
      const b = await launchBackfill(
        { graphs, runs, definitions, backfills },
        { assetKeys: Array.from({ length: ASSETS }, (_, i) => `g/${String(i).padStart(2, "0")}`), from: "2025-01-01", to: last, ...pacing },
        new Date(),
      );
      const launchMs = performance.now() - started;
      let record = b;
      for (;;) {
        record = (await backfills.get(b.id))!;
        if (["completed", "failed", "canceled"].includes(record.status)) break;
        await sleep(10);
      }
      const wallMs = performance.now() - started;
      if (record.status !== "completed") throw new Error(`backfill ${b.id} ended ${record.status}: ${JSON.stringify(record.error)}`);
      // Refill: a run's creation after the latest end of a run before it (the
      // wave gap Dagster's daemon fills with a 30 s sleep); the first wave has none.
      const { rows } = await sql<{ runs: number; gap_p50: number | null; gap_max: number | null }>`
        with r as (
          select r.created_at,
                 (select max(p.ended_at) from runs p where p.backfill_id = r.backfill_id and p.ended_at <= r.created_at) as prev_end
          from runs r where r.backfill_id = ${b.id}::uuid
        )
        select count(*)::int as runs,
               percentile_cont(0.5) within group (order by extract(epoch from (created_at - prev_end)) * 1000) as gap_p50,
               max(extract(epoch from (created_at - prev_end)) * 1000) as gap_max
        from r`.execute(db);
      const r = rows[0]!;
      const { rows: inner } = await sql<{
        run_p50: number;
        handoff_p50: number;
        handoff_p99: number;
        to_scheduled: number;
        to_queued: number;
        to_started: number;
      }>`
        select (select percentile_cont(0.5) within group (order by extract(epoch from (ended_at - created_at)) * 1000)
                from runs where backfill_id = ${b.id}::uuid) as run_p50,
               percentile_cont(0.5) within group (order by extract(epoch from (d.started_at - u.ended_at)) * 1000) as handoff_p50,
               percentile_cont(0.99) within group (order by extract(epoch from (d.started_at - u.ended_at)) * 1000) as handoff_p99,
               percentile_cont(0.5) within group (order by extract(epoch from (s.scheduled_at - u.ended_at)) * 1000) as to_scheduled,
               percentile_cont(0.5) within group (order by extract(epoch from (d.queued_at - s.scheduled_at)) * 1000) as to_queued,
               percentile_cont(0.5) within group (order by extract(epoch from (d.started_at - d.queued_at)) * 1000) as to_started
        from step_deps sd join steps s on s.id = sd.step_id join runs r on r.id = s.run_id
        join step_tries d on d.step_id = sd.step_id and d.try_number = 1
        join step_tries u on u.step_id = sd.upstream_step_id and u.try_number = 1
        where r.backfill_id = ${b.id}::uuid`.execute(db);
      out.push({
        maxPartitionsPerRun: pacing.maxPartitionsPerRun,
        maxConcurrentRuns: pacing.maxConcurrentRuns,
        runs: r.runs,
        steps: record.done,
        wallMs: Math.round(wallMs),
        launchMs: Math.round(launchMs),
        stepsPerSec: Math.round((record.done / wallMs) * 1000),
        taskPasses: passes,
        runMsP50: round1(inner[0]!.run_p50),
        handoffMs: { p50: round1(inner[0]!.handoff_p50), p99: round1(inner[0]!.handoff_p99) },
        handoffStagesP50Ms: {
          endToScheduled: round1(inner[0]!.to_scheduled),
          scheduledToQueued: round1(inner[0]!.to_queued),
          queuedToStarted: round1(inner[0]!.to_started),
        },
        ...(r.gap_p50 !== null ? { refillMs: { p50: round1(r.gap_p50), max: round1(r.gap_max) } } : {}),
      });
      process.stderr.write(`${JSON.stringify(out[out.length - 1])}\n`);
    }
    results.pacings = out;
  });
  printResult(results);
}

await main();

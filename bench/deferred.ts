// The deferred-steps benchmark: 3 000 steps wait at once on file
// triggers (ctx.defer(fileExists(...))) with the local Postgres, the local
// executor, one reconciler, and one `tributary triggerer` child process. It
// measures what the wait costs (worker slots held, the triggerer's memory and
// CPU while it checks 3 000 files every second) and how fast a step runs again
// once its file appears (file written → trigger fired → step running).
//   npx tsx bench/deferred.ts [--steps 3000] [--interval 1s] [--wave 100]
// Files appear in waves of --wave every 100 ms, so the triggerer and the
// reconciler see a steady arrival rate rather than one burst.
import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { launchRun } from "../src/api/index.js";
import { benchLocalExecutor, storeBenchGraph } from "./_definitions.js";
import { floorRank, printResult, REPO_ROOT, sleep, stopProcess, unlimitedDefaultPool, withScope } from "./_setup.js";

const { values: args } = parseArgs({
  options: {
    steps: { type: "string", default: "3000" },
    interval: { type: "string", default: "1s" },
    wave: { type: "string", default: "100" },
  },
});
const STEPS = Number(args.steps);
const WAVE = Number(args.wave);
const CAPACITY = 16;

const definitions = (landing: string) => `
import { asset, hourly, fileExists } from "tributary";
const hours = hourly({ start: "2025-01-01T00:00", timezone: "UTC" });
export const waits = asset({ key: "bench/waits", partitions: hours }, async (ctx) => {
  const found = await ctx.defer(fileExists(${JSON.stringify(landing)} + "/{start}.ready"), { interval: ${JSON.stringify(args.interval)}, timeout: "6h" });
  return found;
});
`;

/** RSS (MB) and cumulative CPU seconds of a process, from /proc. */
async function usage(pid: number): Promise<{ rssMb: number; cpuSec: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  const stat = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  const ticks = Number(stat[11]) + Number(stat[12]);
  return { rssMb: Math.round(rssKb / 102.4) / 10, cpuSec: ticks / 100 };
}

/** The triggerer and every process below it (the custom-kind child), summed. */
async function treeUsage(pid: number): Promise<{ rssMb: number; cpuSec: number }> {
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "")).trim().split(/\s+/).filter(Boolean);
  const all = await Promise.all([pid, ...children.map(Number)].map((p) => usage(p).catch(() => ({ rssMb: 0, cpuSec: 0 }))));
  return { rssMb: Math.round(all.reduce((a, u) => a + u.rssMb, 0) * 10) / 10, cpuSec: all.reduce((a, u) => a + u.cpuSec, 0) };
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = {
    bench: "deferred",
    database: "postgres (local)",
    steps: STEPS,
    interval: args.interval,
    executorSlots: CAPACITY,
  };
  await withScope(async (scope) => {
    const { db, url, handle } = await scope.database("deferred");
    const scratch = await scope.tempDir("deferred");
    const dir = path.join(scratch, "defs");
    const logsDir = path.join(scratch, "logs");
    const landing = path.join(scratch, "landing");
    await Promise.all([mkdir(dir), mkdir(logsDir), mkdir(landing)]);
    const stores = await storeBenchGraph(db, dir, definitions(landing));
    const { runs, graphs, definitions: defs } = stores;
    await unlimitedDefaultPool(db);
    const executor = benchLocalExecutor(stores, { definitionsDir: dir, logsDir }, CAPACITY / 2);
    await scope.reconciler({ store: runs, database: handle, graphs, executors: { local: executor }, definitionsDir: dir, logsDir });

    const triggerer = spawn(
      process.execPath,
      ["--import", "tsx", path.join(REPO_ROOT, "src/cli/main.ts"), "triggerer", "--definitions", dir],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, DATABASE_URL: url },
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    scope.onClose(() => stopProcess(triggerer));
    await sleep(2_000);
    const idleBefore = await treeUsage(triggerer.pid!);

    // 1. Every step defers: how long until all wait, and what they hold then.
    const last = new Date(Date.UTC(2025, 0, 1) + (STEPS - 1) * 3_600_000).toISOString().slice(0, 16).replace("T", "-");
    const launched = performance.now();
    const { runId } = await launchRun(
      { graphs, runs, definitions: defs },
      { assetKeys: ["bench/waits"], from: "2025-01-01-00:00", to: last },
      new Date(),
    );
    for (;;) {
      const { rows } = await sql<{
        n: number;
      }>`select count(*)::int as n from steps where run_id = ${runId} and state = 'deferred'`.execute(db);
      if (rows[0]!.n === STEPS) break;
      await sleep(50);
    }
    const deferMs = performance.now() - launched;
    const { rows: held } = await sql<{ active: number; occupied: number; running: number }>`
      select (select steps_active from runs where id = ${runId}) as active,
             (select occupied_slots from pools where name = 'default_pool') as occupied,
             (select count(*)::int from steps where run_id = ${runId} and state in ('queued', 'running')) as running`.execute(db);
    results.allDeferredMs = Math.round(deferMs);
    results.whileWaiting = { ...held[0]!, executorFreeSlots: executor.freeSlots() };

    // 2. Waiting: the triggerer checks every file every interval.
    await sleep(3_000);
    const a = await treeUsage(triggerer.pid!);
    const windowMs = 10_000;
    await sleep(windowMs);
    const b = await treeUsage(triggerer.pid!);
    const { rows: checks } = await sql<{ checks: number }>`select coalesce(sum(attempts), 0)::int as checks from triggers`.execute(db);
    results.triggerer = {
      rssMbIdle: idleBefore.rssMb,
      rssMbHolding: b.rssMb,
      cpuPercentWhileWaiting: Math.round(((b.cpuSec - a.cpuSec) / (windowMs / 1000)) * 1000) / 10,
      checksRecorded: checks[0]!.checks,
    };

    // 3. Files appear in waves; each step's latency from its file to running again.
    const { rows: parts } = await sql<{ partition_key: string; start: string }>`
      select partition_key, partition_window->>'start' as start from triggers order by partition_key`.execute(db);
    const written = new Map<string, number>();
    const wavesStarted = performance.now();
    for (let i = 0; i < parts.length; i += WAVE) {
      const wave = parts.slice(i, i + WAVE);
      const at = Date.now();
      await Promise.all(wave.map((p) => writeFile(path.join(landing, `${p.start}.ready`), "ok")));
      for (const p of wave) written.set(p.partition_key, at);
      await sleep(100);
    }
    for (;;) {
      const { rows } = await sql<{ status: string }>`select status from runs where id = ${runId}`.execute(db);
      if (rows[0]!.status !== "running" && rows[0]!.status !== "queued") break;
      await sleep(50);
    }
    results.resumeAllMs = Math.round(performance.now() - wavesStarted);
    const { rows: timeline } = await sql<{ partition_key: string; fired: Date; started: Date; status: string }>`
      select s.partition_key, t.ended_at as fired, r.started_at as started, (select status from runs where id = ${runId}) as status
      from steps s join triggers t on t.step_id = s.id
      join step_tries r on r.step_id = s.id and r.try_number = s.try_number
      where s.run_id = ${runId}`.execute(db);
    const toFired = timeline.map((r) => r.fired.getTime() - written.get(r.partition_key)!).sort((x, y) => x - y);
    const toRunning = timeline.map((r) => r.started.getTime() - written.get(r.partition_key)!).sort((x, y) => x - y);
    const pct = (xs: number[], p: number) => floorRank(xs, p / 100)!;
    results.runStatus = timeline[0]?.status;
    results.fileToFiredMs = { p50: pct(toFired, 50), p99: pct(toFired, 99) };
    results.fileToRunningMs = { p50: pct(toRunning, 50), p99: pct(toRunning, 99), max: toRunning.at(-1) };
  });
  printResult(results);
}

await main();

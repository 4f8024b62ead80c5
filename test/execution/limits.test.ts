import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness, sleep } from "./harness.js";

const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01" });
const nap = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const pooled = asset({ key: "l/pooled", partitions: days, pool: "p" }, async () => { await nap(100); return 1; });
export const gate = asset({ key: "l/gate", priority: 100 }, async () => { await nap(1000); return 1; });
export const high = asset({ key: "l/high", partitions: days, priority: 10 }, async () => { await nap(15); return 1; });
export const low = asset({ key: "l/low", partitions: days }, async () => { await nap(15); return 1; });
export const low2 = asset({ key: "l/low2", partitions: days }, async () => { await nap(15); return 1; });
export const limited = asset({ key: "l/limited", partitions: days, maxConcurrency: 1 }, async () => { await nap(60); return 1; });
export const job = asset({ key: "l/job", maxActiveRuns: 1 }, async () => { await nap(400); return 1; });
`;

const dayKey = (i: number): string => new Date(Date.UTC(2025, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);

interface Interval {
  start: number;
  end: number;
}

/** The most intervals open at one instant (touching ends do not overlap). */
function maxOverlap(intervals: readonly Interval[]): number {
  const points = intervals.flatMap((i) => [
    { t: i.start, d: 1 },
    { t: i.end, d: -1 },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let open = 0;
  let max = 0;
  for (const p of points) max = Math.max(max, (open += p.d));
  return max;
}

async function tryIntervals(h: Harness, assetKey: string): Promise<Interval[]> {
  const { rows } = await sql<{ started_at: Date; ended_at: Date }>`
    select t.started_at, t.ended_at from step_tries t join steps s on s.id = t.step_id
    where s.asset_key = ${assetKey} and t.started_at is not null`.execute(h.db);
  return rows.map((r) => ({ start: r.started_at.getTime(), end: r.ended_at.getTime() }));
}

describePostgres("execution: pools, priorities and concurrency limits", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("never runs more steps of a pool than its slots, with two reconcilers sharing the database", async () => {
    h = await Harness.create({ files: { "limits.ts": DEFS }, nodes: 2, node: { capacity: 8 } });
    await h.setPool("p", 2);
    let maxHeld = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await sql<{ n: number; occupied: number }>`
          select (select count(*)::int from steps where pool = 'p' and state in ('queued', 'running')) as n,
                 (select occupied_slots from pools where name = 'p') as occupied`.execute(h!.db);
        maxHeld = Math.max(maxHeld, rows[0]!.n, rows[0]!.occupied);
        await sleep(5);
      }
    })();
    const runs = await h.waitForRuns(
      await Promise.all([
        h.launch(["l/pooled"], { from: "2025-01-01", to: "2025-01-10" }),
        h.launch(["l/pooled"], { from: "2025-01-11", to: "2025-01-20" }),
      ]),
      30_000,
    );
    sampling = false;
    await sampler;
    expect(runs.map((r) => r.status)).toEqual(["success", "success"]);
    const intervals = await tryIntervals(h, "l/pooled");
    expect(intervals).toHaveLength(20);
    expect(maxOverlap(intervals)).toBe(2);
    expect(maxHeld).toBeLessThanOrEqual(2);
    const pool = await sql<{ occupied_slots: number }>`select occupied_slots from pools where name = 'p'`.execute(h.db);
    expect(pool.rows[0]!.occupied_slots).toBe(0);
    // Both reconcilers took part.
    expect(h.nodes.every((n) => n.backend.finishedCount > 0)).toBe(true);
  });

  it("runs higher priority first and FIFO among equals", async () => {
    h = await Harness.create({ files: { "limits.ts": DEFS }, node: { capacity: 1 } });
    const gateRun = await h.launch(["l/gate"]);
    await h.until(async () => (await h!.runs.getRun(gateRun))!.steps[0]!.state === "running", 10_000, "the gate step to run");
    // While the only slot is busy, queue work in this order: low, low2, high.
    const lowRun = await h.launch(["l/low"], { from: "2025-01-01", to: "2025-01-03" });
    const low2Run = await h.launch(["l/low2"], { from: "2025-01-01", to: "2025-01-03" });
    const highRun = await h.launch(["l/high"], { from: "2025-01-01", to: "2025-01-03" });
    await h.waitForRuns([gateRun, lowRun, low2Run, highRun]);
    const { rows } = await sql<{ asset_key: string; partition_key: string }>`
      select s.asset_key, s.partition_key from step_tries t join steps s on s.id = t.step_id
      where s.asset_key <> 'l/gate' order by t.started_at, t.id`.execute(h.db);
    expect(rows.map((r) => `${r.asset_key}@${r.partition_key.slice(-2)}`)).toEqual([
      "l/high@01",
      "l/high@02",
      "l/high@03",
      "l/low@01",
      "l/low@02",
      "l/low@03",
      "l/low2@01",
      "l/low2@02",
      "l/low2@03",
    ]);
  });

  it("does not starve a low-priority backfill under a steady stream of higher-priority work", async () => {
    h = await Harness.create({ files: { "limits.ts": DEFS }, node: { capacity: 1 } });
    // Hold the only slot, so the backfill and the stream compete from the start.
    const gateRun = await h.launch(["l/gate"]);
    await h.until(async () => (await h!.runs.getRun(gateRun))!.steps[0]!.state === "running", 10_000, "the gate step to run");
    const backfill = await h.launch(["l/low"], { from: "2025-01-01", to: "2025-01-03" }, { priority: -10, origin: "backfill" });
    const streamed: string[] = [gateRun];
    const deadline = Date.now() + 30_000;
    let day = 0;
    // Keep at least 10 high-priority steps waiting until the backfill is done.
    for (;;) {
      const run = (await h.runs.getRun(backfill))!;
      if (run.status !== "running" && run.status !== "queued") break;
      if (Date.now() > deadline) throw new Error(`the backfill starved: ${await h.describe([backfill])}`);
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from steps where asset_key = 'l/high' and state in ('scheduled', 'pending')`.execute(h.db);
      if (rows[0]!.n < 10) {
        const start = (day += 10) % 300;
        streamed.push(await h.launch(["l/high"], { from: dayKey(start), to: dayKey(start + 9) }));
      }
      await sleep(10);
    }
    const run = await h.waitForRun(backfill);
    expect(run.status).toBe("success");
    // Each backfill step started while higher-priority steps were waiting.
    for (const s of run.steps) {
      const started = s.tries[0]!.startedAt!;
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from steps
        where asset_key = 'l/high' and scheduled_at < ${started} and (queued_at is null or queued_at > ${started})`.execute(h.db);
      expect(rows[0]!.n).toBeGreaterThan(0);
    }
    // …and higher-priority work did run meanwhile, most of it.
    const { rows: highBefore } = await sql<{ n: number }>`
      select count(*)::int as n from step_tries t join steps s on s.id = t.step_id
      where s.asset_key = 'l/high' and t.started_at < ${run.endedAt}`.execute(h.db);
    expect(highBefore[0]!.n).toBeGreaterThanOrEqual(10);
    // Let the stream drain before stopping.
    await h.waitForRuns(streamed, 60_000);
  });

  it("keeps an asset's maxConcurrency across runs", async () => {
    h = await Harness.create({ files: { "limits.ts": DEFS }, node: { capacity: 8 } });
    const runs = await h.waitForRuns([
      await h.launch(["l/limited"], { from: "2025-01-01", to: "2025-01-04" }),
      await h.launch(["l/limited"], { from: "2025-01-05", to: "2025-01-08" }),
    ]);
    expect(runs.map((r) => r.status)).toEqual(["success", "success"]);
    const intervals = await tryIntervals(h, "l/limited");
    expect(intervals).toHaveLength(8);
    expect(maxOverlap(intervals)).toBe(1);
  });

  it("keeps a second run queued until the first ends with maxActiveRuns: 1", async () => {
    const harness = await Harness.create({ files: { "limits.ts": DEFS }, node: { capacity: 8 } });
    h = harness;
    const first = await harness.launch(["l/job"]);
    const second = await harness.launch(["l/job"]);
    // While the first runs, the second waits with its step pending (however loaded the machine, so it is waited for).
    const seen = await h.until(
      async () => {
        const status = (await harness.runs.getRun(first))!.status;
        // The second is read in the same poll: while the first is still running, it must be waiting.
        return status === "queued" ? undefined : { status, second: (await harness.runs.getRun(second))! };
      },
      30_000,
      "the first run to start",
    );
    if (seen.status === "running" && (await harness.runs.getRun(first))!.status === "running") {
      expect(seen.second.status).toBe("queued");
      expect(seen.second.steps.map((s) => s.state)).toEqual(["pending"]);
    }
    const [a, b] = await h.waitForRuns([first, second]);
    expect([a!.status, b!.status]).toEqual(["success", "success"]);
    // The tries are timed by the executor on one clock (a run's own start is the reconciler pass's time).
    expect(b!.steps[0]!.tries[0]!.startedAt!.getTime()).toBeGreaterThanOrEqual(a!.steps[0]!.tries[0]!.endedAt!.getTime());
  });
});

import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createApiApp, launchBackfill, retryBackfillFailures, type LaunchBackfillRequest } from "../../src/api/index.js";
import { BackfillTask } from "../../src/reconciler/index.js";
import { GraphCache, PgBackfillStore, type BackfillRecord, type BackfillStatus } from "../../src/storage/index.js";
import { ACTIVE_IDS_QUERY } from "../../src/storage/pg-backfill-store.js";
import { describePostgres } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { Harness, sleep, type HarnessOptions } from "./harness.js";

// raw (daily; fails where a marker file says so, waits while "hold" exists)
//  → clean (daily) → week (weekly rollup)
//                  → roll7 (daily, reads the last seven days of clean)
// plus hours (hourly, unrelated), high (daily, the "scheduled work" of the priority test).
const defs = (markers: string) => `
import { existsSync, writeFileSync } from "node:fs";
import { asset, daily, dep, hourly, timeWindow, weekly } from "tributary";
const days = daily({ start: "2025-01-06" });
const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));
const marker = (name: string) => existsSync(${JSON.stringify(markers)} + "/" + name);
export const raw = asset({ key: "bf/raw", partitions: days, retries: 0 }, async (ctx) => {
  if (marker("fail-" + ctx.partition.key)) throw new Error("marker says fail " + ctx.partition.key);
  writeFileSync(${JSON.stringify(markers)} + "/started-" + ctx.partition.key, "");
  while (marker("hold")) await nap(10);
  await nap(marker("slow") ? 60 : 2);
  return ctx.partition.key;
});
export const clean = asset({ key: "bf/clean", partitions: days, deps: { raw } }, async (_ctx, { raw }) => raw);
export const week = asset(
  { key: "bf/week", partitions: weekly({ start: "2025-01-06" }), deps: { clean: dep(clean, timeWindow()) } },
  async (_ctx, { clean }) => clean.length,
);
export const roll7 = asset(
  { key: "bf/roll7", partitions: days, deps: { clean: dep(clean, timeWindow({ startOffset: -6 })) } },
  async (_ctx, { clean }) => clean.length,
);
export const hours = asset({ key: "bf/hours", partitions: hourly({ start: "2025-01-06" }) }, async () => 1);
export const high = asset({ key: "bf/high", partitions: days }, async () => { await nap(3); return 1; });
`;

const ENDED: readonly BackfillStatus[] = ["completed", "failed", "canceled"];

describePostgres("execution: backfills", () => {
  let h: Harness | undefined;
  let markers: string;
  /** What the backfill tasks logged as errors: none expected. */
  let taskErrors: string[] = [];
  /** The graph caches of the nodes' backfill tasks. */
  let nodeGraphs: GraphCache[] = [];
  /** Per node, the backfill task's passes that have ended. */
  let backfillPasses: number[] = [];
  beforeEach(async () => {
    markers = await mkdtemp(path.join(tmpdir(), "tributary-backfill-markers-"));
    taskErrors = [];
    nodeGraphs = [];
    backfillPasses = [];
  });
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    await rm(markers, { recursive: true, force: true });
    expect(taskErrors).toEqual([]);
  });

  const start = async (options: Partial<HarnessOptions> = {}) => {
    h = await Harness.create({
      files: { "backfill.ts": defs(markers) },
      tasks: (s) => {
        nodeGraphs.push(s.graphs);
        const node = backfillPasses.push(0) - 1;
        const task = new BackfillTask({
          backfills: new PgBackfillStore(s.handle.db),
          graphs: s.graphs,
          definitions: s.definitions,
          log: (level, message) => {
            if (level === "error") taskErrors.push(message);
          },
        });
        // Counted, so a test can wait for passes that began after a change (one in flight may hold the old graph).
        return [
          {
            name: task.name,
            run: async (now: Date) => {
              await task.run(now);
              backfillPasses[node]!++;
            },
          },
        ];
      },
      ...options,
    });
    return h;
  };
  const store = () => new PgBackfillStore(h!.db);
  const services = () => ({ graphs: h!.graphs, runs: h!.runs, definitions: h!.definitions, backfills: store() });
  const launch = (request: LaunchBackfillRequest) => launchBackfill(services(), request, new Date());
  const marker = (name: string) => writeFile(path.join(markers, name), "");
  const unmark = (name: string) => rm(path.join(markers, name), { force: true });

  async function waitForBackfill(id: string, statuses: readonly BackfillStatus[] = ENDED, timeoutMs = 60_000): Promise<BackfillRecord> {
    return h!.until(
      async () => {
        const b = await store().get(id);
        return b && statuses.includes(b.status) ? b : undefined;
      },
      timeoutMs,
      `backfill ${id} to be ${statuses.join(" or ")}`,
    );
  }
  /** Each run of the backfill in creation order: its steps as asset@partition. */
  async function runsOf(
    id: string,
  ): Promise<{ id: string; status: string; key: string | null; steps: string[]; created: Date; ended: Date | null }[]> {
    const { rows } = await sql<{
      id: string;
      status: string;
      idempotency_key: string | null;
      created_at: Date;
      ended_at: Date | null;
      steps: string[];
    }>`
      select r.id, r.status, r.idempotency_key, r.created_at, r.ended_at,
             array_agg(s.asset_key || '@' || s.partition_key order by s.id) as steps
      from runs r join steps s on s.run_id = r.id
      where r.backfill_id = ${id}::uuid group by r.id
      order by r.created_at, (r.tags->>'tributary/chunk')::int`.execute(h!.db);
    return rows.map((r) => ({
      id: r.id,
      status: r.status,
      key: r.idempotency_key,
      steps: r.steps,
      created: r.created_at,
      ended: r.ended_at,
    }));
  }
  /** Per run of the backfill, in chunk order: when its first step started and its last one ended (executor clock). */
  async function stepSpans(id: string): Promise<{ start: number; end: number }[]> {
    const { rows } = await sql<{ start: Date; end: Date }>`
      select min(t.started_at) as start, max(t.ended_at) as end
      from runs r join steps s on s.run_id = r.id join step_tries t on t.step_id = s.id
      where r.backfill_id = ${id}::uuid group by r.id order by r.created_at, (r.tags->>'tributary/chunk')::int`.execute(h!.db);
    return rows.map((r) => ({ start: r.start.getTime(), end: r.end.getTime() }));
  }
  /** Each run's steps started after every step of the run before it ended. */
  async function expectSequential(id: string): Promise<void> {
    const spans = await stepSpans(id);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start, `run ${i}`).toBeGreaterThanOrEqual(spans[i - 1]!.end);
  }
  const backfillCount = async () => Number((await sql<{ n: string }>`select count(*) as n from backfills`.execute(h!.db)).rows[0]!.n);
  const materialized = async (asset: string) =>
    (
      await sql<{ partition_key: string }>`
      select partition_key from partition_status where asset_key = ${asset} and last_materialization_event_id is not null
      order by partition_key`.execute(h!.db)
    ).rows.map((r) => r.partition_key);

  it("runs oldest partitions first, one run per chunk with every selected asset, weeks after their days", async () => {
    await start();
    const b = await launch({ assetKeys: ["bf/raw", "bf/clean", "bf/week"], from: "2025-01-06", to: "2025-01-19" });
    expect(b).toMatchObject({ status: "requested", requested: 14 + 14 + 2, maxConcurrentRuns: 1, maxPartitionsPerRun: 1, priority: -10 });
    const done = await waitForBackfill(b.id);
    expect(done).toMatchObject({ status: "completed", requested: 30, done: 30, failed: 0, inProgress: 0 });
    expect(done.completedAt).not.toBeNull();
    const runs = await runsOf(b.id);
    expect(runs).toHaveLength(14);
    expect(runs.every((r) => r.status === "success")).toBe(true);
    expect(runs.map((r) => r.key)).toEqual(runs.map((_, k) => `backfill:${b.id}:${k}`));
    expect(runs[0]!.steps).toEqual(["bf/raw@2025-01-06", "bf/clean@2025-01-06"]);
    expect(runs[6]!.steps).toEqual(["bf/raw@2025-01-12", "bf/clean@2025-01-12", "bf/week@2025-01-06"]);
    expect(runs[13]!.steps).toEqual(["bf/raw@2025-01-19", "bf/clean@2025-01-19", "bf/week@2025-01-13"]);
    // Oldest first, one at a time: each run started after the one before it ended.
    await expectSequential(b.id);
    const { rows } = await sql<{ origin: string; priority: number }>`
      select distinct r.origin, s.priority from runs r join steps s on s.run_id = r.id where r.backfill_id = ${b.id}::uuid`.execute(h!.db);
    expect(rows).toEqual([{ origin: "backfill", priority: -10 }]);
    expect(await materialized("bf/week")).toEqual(["2025-01-06", "2025-01-13"]);
    const weekOut = await sql<{ inline_value: unknown }>`
      select inline_value from outputs where asset_key = 'bf/week' order by partition_key`.execute(h!.db);
    expect(weekOut.rows.map((r) => r.inline_value)).toEqual([7, 7]);
  });

  it("maxPartitionsPerRun: that many partitions per run, the rest in the last", async () => {
    await start();
    const b = await launch({ assetKeys: ["bf/raw"], from: "2025-01-06", to: "2025-01-15", maxPartitionsPerRun: 4, maxConcurrentRuns: 3 });
    expect((await waitForBackfill(b.id)).status).toBe("completed");
    const runs = await runsOf(b.id);
    expect(runs.map((r) => r.steps.length).sort()).toEqual([2, 4, 4]);
    expect(runs.find((r) => r.steps.length === 2)!.steps).toEqual(["bf/raw@2025-01-14", "bf/raw@2025-01-15"]);
    // One big run for a warehouse that prefers it.
    const big = await launch({ assetKeys: ["bf/raw", "bf/clean"], from: "2025-01-06", to: "2025-02-09", maxPartitionsPerRun: 365 });
    expect(await waitForBackfill(big.id)).toMatchObject({ status: "completed", done: 70 });
    const [one] = await runsOf(big.id);
    expect((await runsOf(big.id)).length).toBe(1);
    expect(one!.steps).toHaveLength(70);
  });

  it("paces: never more than maxConcurrentRuns runs in flight, with two reconcilers", async () => {
    await start({ nodes: 2 });
    await marker("slow");
    const b = await launch({ assetKeys: ["bf/raw", "bf/clean"], from: "2025-01-06", to: "2025-01-25", maxConcurrentRuns: 3 });
    let most = 0;
    for (;;) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from runs where backfill_id = ${b.id}::uuid and status in ('queued', 'running')`.execute(h!.db);
      most = Math.max(most, rows[0]!.n);
      const now = await store().get(b.id);
      if (now && ENDED.includes(now.status)) break;
      await sleep(5);
    }
    const done = await waitForBackfill(b.id);
    expect(done).toMatchObject({ status: "completed", done: 40, failed: 0 });
    expect(most).toBeLessThanOrEqual(3);
    // (How many were seen at once at the most depends on the machine's load: only the bound is asserted.) The runs'
    // recorded times cannot show the bound: a run's created_at is the start of the backfill pass that created it, and
    // the pass reads which runs have ended after that, so a run that ended in between seems to overlap the run that
    // replaced it (on a loaded machine, up to 6 "at once" from three passes' worth).
    const runs = await runsOf(b.id);
    expect(runs).toHaveLength(20);
    // Two reconcilers advanced it, and no chunk got two runs.
    expect(new Set(runs.map((r) => r.key)).size).toBe(20);
  });

  it("a chunk that reads what earlier chunks make (startOffset -6) waits for them", async () => {
    await start();
    await marker("slow");
    const seed = await h!.launch(["bf/raw", "bf/clean"], { from: "2025-01-06", to: "2025-01-12" });
    expect((await h!.waitForRun(seed)).status).toBe("success");
    const b = await launch({ assetKeys: ["bf/raw", "bf/clean", "bf/roll7"], from: "2025-01-13", to: "2025-01-18", maxConcurrentRuns: 4 });
    expect((await waitForBackfill(b.id)).status).toBe("completed");
    const runs = await runsOf(b.id);
    expect(runs).toHaveLength(6);
    // roll7 of day k reads clean of days k-6…k: with room for four runs, each still starts after the one before it ended.
    await expectSequential(b.id);
    const out = await sql<{ inline_value: unknown }>`
      select inline_value from outputs where asset_key = 'bf/roll7' order by partition_key`.execute(h!.db);
    expect(out.rows.map((r) => r.inline_value)).toEqual([7, 7, 7, 7, 7, 7]);
  });

  it("stays below scheduled work in priority, but is never starved by it", async () => {
    await start({ node: { capacity: 1 } });
    await marker("hold");
    // Hold the only slot, so the backfill and the stream compete from the start.
    const gate = await h!.launch(["bf/raw"], { partition: "2025-03-01" });
    await h!.until(async () => (await h!.runs.getRun(gate))!.steps[0]!.state === "running", 10_000, "the gate step to run");
    const b = await launch({ assetKeys: ["bf/clean"], from: "2025-01-06", to: "2025-01-08", includeUpstream: true });
    const streamed: string[] = [];
    let day = 0;
    await unmark("hold");
    const deadline = Date.now() + 60_000;
    for (;;) {
      const now = (await store().get(b.id))!;
      if (ENDED.includes(now.status)) break;
      if (Date.now() > deadline) throw new Error(`the backfill starved: ${JSON.stringify(now)}`);
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from steps where asset_key = 'bf/high' and state in ('scheduled', 'pending')`.execute(h!.db);
      if (rows[0]!.n < 10) {
        const first = new Date(Date.UTC(2025, 0, 6 + (day % 300)));
        day += 10;
        const last = new Date(first.getTime() + 9 * 86_400_000);
        streamed.push(await h!.launch(["bf/high"], { from: first.toISOString().slice(0, 10), to: last.toISOString().slice(0, 10) }));
      }
      await sleep(10);
    }
    expect((await store().get(b.id))!.status).toBe("completed");
    // Every backfill step started while higher-priority steps were waiting…
    const { rows: steps } = await sql<{ started_at: Date }>`
      select t.started_at from step_tries t join steps s on s.id = t.step_id join runs r on r.id = s.run_id
      where r.backfill_id = ${b.id}::uuid`.execute(h!.db);
    expect(steps).toHaveLength(6);
    for (const s of steps) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from steps
        where asset_key = 'bf/high' and scheduled_at < ${s.started_at} and (queued_at is null or queued_at > ${s.started_at})`.execute(
        h!.db,
      );
      expect(rows[0]!.n).toBeGreaterThan(0);
    }
    // …and scheduled work ran meanwhile, most of it.
    const { rows: highBefore } = await sql<{ n: number }>`
      select count(*)::int as n from step_tries t join steps s on s.id = t.step_id
      where s.asset_key = 'bf/high' and t.started_at < (select max(ended_at) from runs where backfill_id = ${b.id}::uuid)`.execute(h!.db);
    expect(highBefore[0]!.n).toBeGreaterThanOrEqual(20);
    await h!.waitForRuns(streamed, 60_000);
  });

  it("cancel stops it and cancels its runs in flight; resume finishes it", async () => {
    await start();
    await marker("hold");
    const b = await launch({ assetKeys: ["bf/raw", "bf/clean"], from: "2025-01-06", to: "2025-01-11", maxConcurrentRuns: 2 });
    await h!.until(async () => ((await runsOf(b.id)).length === 2 ? true : undefined), 15_000, "two runs");
    const canceling = await store().requestCancel(b.id, new Date());
    expect(canceling.status).toBe("canceling");
    const canceled = await waitForBackfill(b.id, ["canceled"]);
    expect(canceled.canceledAt).not.toBeNull();
    expect(canceled.cursor.redo).toEqual([0, 1]);
    const runs = await runsOf(b.id);
    expect(runs.map((r) => r.status)).toEqual(["canceled", "canceled"]);
    // Canceled means no new runs, however long we wait.
    await unmark("hold");
    await sleep(300);
    expect(await runsOf(b.id)).toHaveLength(2);
    await expect(store().requestCancel(b.id, new Date())).resolves.toMatchObject({ status: "canceled" });

    const resumed = await store().resume(b.id, new Date());
    expect(resumed.status).toBe("requested");
    const done = await waitForBackfill(b.id);
    expect(done).toMatchObject({ status: "completed", requested: 12, done: 12, failed: 0 });
    expect(await materialized("bf/clean")).toEqual(["2025-01-06", "2025-01-07", "2025-01-08", "2025-01-09", "2025-01-10", "2025-01-11"]);
    const after = await runsOf(b.id);
    // The two canceled chunks ran again under a new key, then the rest.
    expect(after.map((r) => r.key)).toEqual([
      `backfill:${b.id}:0`,
      `backfill:${b.id}:1`,
      `backfill:${b.id}:0:1`,
      `backfill:${b.id}:1:1`,
      `backfill:${b.id}:2:1`,
      `backfill:${b.id}:3:1`,
      `backfill:${b.id}:4:1`,
      `backfill:${b.id}:5:1`,
    ]);
    await expect(store().resume(b.id, new Date())).rejects.toMatchObject({ code: "BACKFILL_NOT_CANCELED" });
    await expect(store().requestCancel(b.id, new Date())).rejects.toMatchObject({ code: "BACKFILL_NOT_ACTIVE" });
  });

  it("re-runs only the failed partitions (and what they blocked) as a new backfill", async () => {
    await start();
    await marker("fail-2025-01-08");
    const b = await launch({ assetKeys: ["bf/raw", "bf/clean", "bf/week"], from: "2025-01-06", to: "2025-01-19", maxConcurrentRuns: 2 });
    const failed = await waitForBackfill(b.id);
    // raw and clean of the 8th fail in their run; the first week, which reads the 8th, is blocked (never run).
    expect(failed).toMatchObject({ status: "failed", requested: 30, done: 27, failed: 3 });
    expect(failed.cursor.failedPartitions).toEqual({ "bf/raw": "2-3", "bf/clean": "2-3", "bf/week": "0-1" });
    expect((await runsOf(b.id)).flatMap((r) => r.steps).filter((s) => s.startsWith("bf/week"))).toEqual(["bf/week@2025-01-13"]);
    await expect(retryBackfillFailures(services(), "00000000-0000-0000-0000-000000000000", new Date())).rejects.toMatchObject({
      code: "BACKFILL_NOT_FOUND",
    });

    await unmark("fail-2025-01-08");
    const retry = await retryBackfillFailures(services(), b.id, new Date());
    expect(retry).toMatchObject({ requested: 3, selection: { retryOf: b.id }, tags: { "tributary/retry-of": b.id } });
    expect(await waitForBackfill(retry.id)).toMatchObject({ status: "completed", done: 3, failed: 0 });
    expect((await runsOf(retry.id)).map((r) => r.steps)).toEqual([["bf/raw@2025-01-08", "bf/clean@2025-01-08", "bf/week@2025-01-06"]]);
    expect(await materialized("bf/week")).toEqual(["2025-01-06", "2025-01-13"]);
    await expect(retryBackfillFailures(services(), retry.id, new Date())).rejects.toMatchObject({ code: "BACKFILL_NOTHING_FAILED" });
    // The original keeps its history.
    expect((await store().get(b.id))!.status).toBe("failed");
  });

  it("launched twice: a partition is never in two active runs at once; the second counts what the first made", async () => {
    await start({ nodes: 2 });
    await marker("slow");
    const first = await launch({ assetKeys: ["bf/raw", "bf/clean"], from: "2025-01-06", to: "2025-01-13", maxConcurrentRuns: 2 });
    const second = await launch({ assetKeys: ["bf/raw", "bf/clean"], from: "2025-01-06", to: "2025-01-13", maxConcurrentRuns: 2 });
    const [a, b] = [await waitForBackfill(first.id), await waitForBackfill(second.id)];
    expect([a.status, b.status]).toEqual(["completed", "completed"]);
    expect(a.done + b.done).toBe(32);
    // Every partition materialised exactly once: the second backfill waited for the first's runs and counted them covered.
    const { rows } = await sql<{ asset_key: string; partition_key: string; n: number }>`
      select s.asset_key, s.partition_key, count(*)::int as n from steps s join runs r on r.id = s.run_id
      where r.backfill_id in (${first.id}::uuid, ${second.id}::uuid) group by 1, 2`.execute(h!.db);
    expect(rows).toHaveLength(16);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(a.done - a.cursor.covered + (b.done - b.cursor.covered)).toBe(16);
    // And no two runs holding the same partition were ever in flight together.
    const overlaps = await sql<{ n: number }>`
      select count(*)::int as n from steps s1 join runs r1 on r1.id = s1.run_id
      join steps s2 on s2.asset_key = s1.asset_key and s2.partition_key = s1.partition_key and s2.run_id <> s1.run_id
      join runs r2 on r2.id = s2.run_id
      where r1.backfill_id is not null and r2.backfill_id is not null
        and r1.created_at < r2.ended_at and r2.created_at < r1.ended_at`.execute(h!.db);
    expect(overlaps.rows[0]!.n).toBe(0);
  });

  it("a partition already in a manual run makes the chunk wait, then counts as covered", async () => {
    await start();
    await marker("hold");
    const manual = await h!.launch(["bf/raw"], { partition: "2025-01-07" });
    await h!.until(async () => (await h!.runs.getRun(manual))!.steps[0]!.state === "running", 10_000, "the manual step to run");
    const b = await launch({ assetKeys: ["bf/raw"], from: "2025-01-06", to: "2025-01-08", maxConcurrentRuns: 2 });
    const waiting = await h!.until(
      async () => {
        const now = await store().get(b.id);
        return now?.cursor.waiting ? now : undefined;
      },
      15_000,
      "the second chunk to wait",
    );
    expect(waiting.cursor.waiting).toMatch(/chunk 1: 1 partitions of it are being materialised by another run \("bf\/raw" 2025-01-07\)/);
    expect(await runsOf(b.id)).toHaveLength(1);
    await unmark("hold");
    const done = await waitForBackfill(b.id);
    expect(done).toMatchObject({ status: "completed", done: 3, cursor: expect.objectContaining({ covered: 1, waiting: null }) });
    expect((await runsOf(b.id)).map((r) => r.steps)).toEqual([["bf/raw@2025-01-06"], ["bf/raw@2025-01-08"]]);
  });

  it("continues from the stored state after the reconcilers restart", async () => {
    // A step the old nodes were handed must be handed back, not left to the queued timeout (out of reach here).
    await start({ nodes: 2, queuedTimeoutMs: 600_000 });
    await marker("slow");
    const b = await launch({ assetKeys: ["bf/raw", "bf/clean"], from: "2025-01-06", to: "2025-01-20", maxConcurrentRuns: 2 });
    // Budgets for fifteen two-step runs, two at a time, on a loaded machine.
    await h!.until(async () => ((await store().get(b.id))!.cursor.next >= 5 ? true : undefined), 120_000, "five chunks started");
    await h!.restartNodes();
    const mid = (await store().get(b.id))!;
    expect(mid.status).toBe("running");
    const done = await waitForBackfill(b.id, ENDED, 180_000);
    expect(done).toMatchObject({ status: "completed", requested: 30, done: 30, failed: 0, inProgress: 0 });
    const runs = await runsOf(b.id);
    expect(runs.map((r) => r.key)).toEqual(runs.map((_, k) => `backfill:${b.id}:${k}`));
    expect(runs.every((r) => r.status === "success")).toBe(true);
    expect(await materialized("bf/clean")).toHaveLength(15);
  }, 330_000);

  it("fails with the reason when its assets' partitions change under it, after its runs in flight end", async () => {
    await start();
    await marker("hold");
    const b = await launch({ assetKeys: ["bf/raw"], from: "2025-01-06", to: "2025-01-08" });
    await h!.until(async () => ((await runsOf(b.id)).length === 1 ? true : undefined), 15_000, "its first run");
    // Its step is running (held by the marker) before the definitions change under it.
    await h!.until(
      async () => {
        const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from steps s join runs r on r.id = s.run_id where r.backfill_id = ${b.id}::uuid and s.state = 'running'`.execute(
          h!.db,
        );
        return rows[0]!.n === 1 || undefined;
      },
      15_000,
      "its first step to run",
    );
    // And its code is running (a step is "running" from its claim, before its code is imported): the definitions
    // directory is replaced next, and a step importing it then would fail for a reason that is not this test's.
    await h!.until(async () => existsSync(path.join(markers, "started-2025-01-06")) || undefined, 30_000, "its code to run");
    const version = await h!.redefine({
      "backfill.ts": defs(markers).replace('daily({ start: "2025-01-06" })', 'daily({ start: "2025-01-05" })'),
    });
    // The reconcilers see the new definitions within their cache's second.
    await h!.until(
      async () => {
        for (const g of nodeGraphs) if ((await g.current()).version !== version) return undefined;
        return true;
      },
      10_000,
      "the reconcilers to see the new definitions",
    );
    // A pass that began before took the old definitions: two more passes each, and every pass since has the new ones.
    const seen = [...backfillPasses];
    await h!.until(async () => backfillPasses.every((n, i) => n >= seen[i]! + 2) || undefined, 30_000, "two backfill passes more");
    await unmark("hold");
    const failed = await waitForBackfill(b.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({ code: "BACKFILL_DEFINITIONS_CHANGED", message: expect.stringMatching(/"bf\/raw" changed/) });
    expect((await runsOf(b.id)).map((r) => r.status)).toEqual(["success"]);
    expect(failed).toMatchObject({ done: 1, inProgress: 0 });
  });

  it("with no backfill active, a pass costs one query, on the partial index of active backfills", async () => {
    await start({ start: false });
    const real = store();
    const calls: string[] = [];
    const spy = {
      activeIds: (limit?: number) => (calls.push("activeIds"), real.activeIds(limit)),
      advance: (...args: Parameters<typeof real.advance>) => (calls.push("advance"), real.advance(...args)),
    } as unknown as PgBackfillStore;
    const graphs = { current: () => (calls.push("graph"), h!.graphs.current()) } as unknown as GraphCache;
    const task = new BackfillTask({ backfills: spy, graphs, definitions: h!.definitions });
    await task.run(new Date());
    expect(calls).toEqual(["activeIds"]);
    const plan = await h!.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      return (await sql<{ "QUERY PLAN": unknown }>`explain (format json) ${ACTIVE_IDS_QUERY} limit 50`.execute(trx)).rows[0]!["QUERY PLAN"];
    });
    expect(JSON.stringify(plan)).toContain("backfills_active_idx");
    // A finished backfill is not in that index: still nothing to advance.
    const b = await launch({ assetKeys: ["bf/raw"], partitions: ["2025-01-06"] });
    await sql`update backfills set status = 'completed' where id = ${b.id}::uuid`.execute(h!.db);
    calls.length = 0;
    await task.run(new Date());
    expect(calls).toEqual(["activeIds"]);
  });

  it("bad input is refused with a clear error and nothing is stored", async () => {
    await start();
    const before = await backfillCount();
    const outside = launch({ assetKeys: ["bf/raw"], from: "2024-12-30", to: "2025-01-10" });
    await expect(outside).rejects.toMatchObject({ name: "PartitionError" });
    await expect(outside).rejects.toThrow(/bf\/raw.*existing partitions at .*: "2025-01-06" … /s);
    const future = launch({ assetKeys: ["bf/raw"], from: "2025-01-06", to: "2099-01-01" });
    await expect(future).rejects.toMatchObject({ code: "PARTITION_NOT_EXISTING" });
    await expect(future).rejects.toThrow(/bf\/raw.*does not exist yet.*existing partitions at .*: "2025-01-06" … /s);
    const unknown = launch({ assetKeys: ["bf/clen"], from: "2025-01-06", to: "2025-01-10" });
    await expect(unknown).rejects.toMatchObject({ code: "GRAPH_UNKNOWN_ASSET" });
    await expect(unknown).rejects.toThrow(/bf\/clean/);
    const mixed = launch({ assetKeys: ["bf/raw", "bf/hours"], from: "2025-01-06", to: "2025-01-10" });
    await expect(mixed).rejects.toMatchObject({ code: "BACKFILL_UNRELATED_PARTITIONS" });
    await expect(mixed).rejects.toThrow(/"bf\/hours" \(hourly.*"bf\/raw" \(daily|"bf\/raw" \(daily.*"bf\/hours" \(hourly/);
    const lacking = launch({ assetKeys: ["bf/clean"], from: "2025-01-06", to: "2025-01-10" });
    await expect(lacking).rejects.toMatchObject({ code: "PLAN_MISSING_UPSTREAM" });
    await expect(lacking).rejects.toThrow(/"bf\/raw" \(read by "bf\/clean"\): 5 partition\(s\) not materialised.*--include-upstream/s);
    await expect(launch({ assetKeys: ["bf/raw"], from: "2025-01-06", to: "2025-01-10", maxConcurrentRuns: 0 })).rejects.toMatchObject({
      code: "INPUT_INVALID",
    });
    await expect(launch({ assetKeys: ["bf/raw"], from: "2025-01-06", partitions: ["2025-01-07"] })).rejects.toMatchObject({
      code: "INPUT_INVALID",
    });
    await expect(launch({ assetKeys: [] })).rejects.toMatchObject({ code: "PLAN_SELECTION_EMPTY" });
    expect(await backfillCount()).toBe(before);
    // The missing upstream, planned in with includeUpstream.
    const withUpstream = await launch({ assetKeys: ["bf/clean"], from: "2025-01-06", to: "2025-01-07", includeUpstream: true });
    expect(withUpstream.requested).toBe(4);
    expect(await waitForBackfill(withUpstream.id)).toMatchObject({ status: "completed", done: 4 });
  });

  it("GraphQL: launchBackfill, backfill(id) with counts and runs, cancel, resume, retry; bad input writes nothing", async () => {
    await start();
    const backfills = store();
    const context = apiServicesOn(h!.db, { graphs: new GraphCache(h!.definitions), definitions: h!.definitions, runs: h!.runs, backfills });
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    const gql = async <T>(query: string, variables: Record<string, unknown> = {}) => {
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query, variables }),
      });
      return (await res.json()) as { data?: T; errors?: { message: string }[] };
    };
    const LAUNCH = `mutation ($input: LaunchBackfillInput!) { launchBackfill(input: $input) { id status requested maxConcurrentRuns } }`;
    const before = await backfillCount();
    // Each error keeps its stable code in-process (vitest.config.ts loads one copy of graphql); nothing is written.
    for (const input of [
      { assetKeys: [] },
      { assetKeys: ["bf/raw"], from: "2025-01-06", to: "2025-01-07", maxConcurrentRuns: 0 },
      { assetKeys: ["bf/raw"], from: "2025-01-06", partitions: ["2025-01-06"] },
      { assetKeys: ["bf/nope"], from: "2025-01-06", to: "2025-01-07" },
    ]) {
      const errors = (await gql(LAUNCH, { input })).errors as { message: string; extensions?: { code?: string } }[] | undefined;
      expect(errors?.length, JSON.stringify(input)).toBe(1);
      expect(errors?.[0]?.extensions?.code ?? "INTERNAL_SERVER_ERROR", JSON.stringify(errors)).not.toBe("INTERNAL_SERVER_ERROR");
    }
    expect(await backfillCount()).toBe(before);

    const launched = await gql<{ launchBackfill: { id: string; status: string; requested: number; maxConcurrentRuns: number } }>(LAUNCH, {
      input: { assetKeys: ["bf/raw", "bf/clean"], partitions: ["2025-01-06", "2025-01-09"], maxConcurrentRuns: 2 },
    });
    expect(launched.errors).toBeUndefined();
    const id = launched.data!.launchBackfill.id;
    expect(launched.data!.launchBackfill).toMatchObject({ status: "requested", requested: 4, maxConcurrentRuns: 2 });
    await waitForBackfill(id);
    const read = await gql<{ backfill: Record<string, unknown> & { runs: { origin: string; status: string }[] } }>(
      `query ($id: String!) { backfill(id: $id) { id status assetKeys partitions requested done failed inProgress chunks runsCreated
          failedPartitions { assetKey } runs { origin status } } }`,
      { id },
    );
    expect(read.data!.backfill).toMatchObject({
      status: "completed",
      assetKeys: ["bf/raw", "bf/clean"],
      partitions: ["2025-01-06", "2025-01-09"],
      requested: 4,
      done: 4,
      failed: 0,
      inProgress: 0,
      chunks: 2,
      runsCreated: 2,
      failedPartitions: [],
    });
    expect(read.data!.backfill.runs).toEqual([
      { origin: "backfill", status: "success" },
      { origin: "backfill", status: "success" },
    ]);
    const list = await gql<{ backfills: { id: string }[] }>(`{ backfills(status: completed) { id } }`);
    expect(list.data!.backfills.map((b) => b.id)).toContain(id);
    expect((await gql(`mutation { resumeBackfill(id: "${id}") { id } }`)).errors).toHaveLength(1);
    expect((await gql(`mutation { retryBackfillFailures(id: "${id}") { id } }`)).errors).toHaveLength(1);
    expect((await gql<{ backfill: null }>(`{ backfill(id: "nope") { id } }`)).data).toEqual({ backfill: null });

    await marker("hold");
    const held = await gql<{ launchBackfill: { id: string } }>(LAUNCH, {
      input: { assetKeys: ["bf/raw"], from: "2025-01-10", to: "2025-01-12" },
    });
    const heldId = held.data!.launchBackfill.id;
    await h!.until(async () => ((await runsOf(heldId)).length === 1 ? true : undefined), 15_000, "its first run");
    const canceled = await gql<{ cancelBackfill: { status: string } }>(`mutation { cancelBackfill(id: "${heldId}") { status } }`);
    expect(canceled.data!.cancelBackfill.status).toBe("canceling");
    await waitForBackfill(heldId, ["canceled"]);
    await unmark("hold");
    const resumed = await gql<{ resumeBackfill: { status: string } }>(`mutation { resumeBackfill(id: "${heldId}") { status } }`);
    expect(resumed.data!.resumeBackfill.status).toBe("requested");
    expect((await waitForBackfill(heldId)).status).toBe("completed");
  });
});

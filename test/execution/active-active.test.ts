import { sql } from "kysely";
import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness, sleep, type Harness as H } from "./harness.js";

const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2020-01-01" });
const g = globalThis;
/** Counts invocations per (run, asset, partition, try) in this process: a try dispatched twice shows up here. */
function count(ctx) {
  const k = ctx.run.id + "|" + ctx.assetKey + "|" + ctx.partition.key + "|" + ctx.tryNumber;
  g.__tributaryInvocations ??= new Map();
  g.__tributaryInvocations.set(k, (g.__tributaryInvocations.get(k) ?? 0) + 1);
}
export const root = asset({ key: "b/root", partitions: days }, async (ctx) => { count(ctx); return 1; });
export const a = asset({ key: "b/a", partitions: days }, async (ctx) => { count(ctx); return 1; });
export const b = asset({ key: "b/b", partitions: days, deps: { a } }, async (ctx, { a }) => { count(ctx); return a + 1; });
export const c = asset({ key: "b/c", partitions: days, deps: { b } }, async (ctx, { b }) => { count(ctx); return b + 1; });
export const slowish = asset({ key: "b/slowish", partitions: days, retries: { max: 2, delay: 0 } }, async (ctx) => {
  count(ctx);
  await new Promise((resolve) => setTimeout(resolve, 10));
  return 1;
});
`;

// Fan-in under one_success across three pools: completions, cascades, claims and
// cancellations all lock steps, pools and runs at once.
const TANGLE = `
import { asset, daily } from "tributary";
const days = daily({ start: "2020-01-01" });
const nap = () => new Promise((r) => setTimeout(r, Math.random() * 5));
export const a = asset({ key: "s/a", partitions: days, pool: "pa" }, async () => { await nap(); return 1; });
export const b = asset({ key: "s/b", partitions: days, pool: "pb" }, async () => { await nap(); return 1; });
export const c = asset({ key: "s/c", partitions: days, pool: "pc", triggerRule: "one_success", deps: { a, b } }, async () => { await nap(); return 1; });
export const d = asset({ key: "s/d", partitions: days, pool: "pa", deps: { c } }, async () => { await nap(); return 1; });
`;

const dayKey = (i: number): string => new Date(Date.UTC(2020, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);

function invocations(): Map<string, number> {
  const g = globalThis as { __tributaryInvocations?: Map<string, number> };
  g.__tributaryInvocations ??= new Map();
  return g.__tributaryInvocations;
}

async function expectNoDrift(h: H, runIds: readonly string[]): Promise<void> {
  const { rows } = await sql<{ id: string; steps_total: number; steps_done: number; steps_active: number; actual_done: number }>`
    select r.id, r.steps_total, r.steps_done, r.steps_active,
           (select count(*)::int from steps s where s.run_id = r.id
             and s.state in ('success', 'failed', 'skipped', 'upstream_failed', 'removed')) as actual_done
    from runs r where r.id = any(${runIds}::uuid[])`.execute(h.db);
  for (const r of rows) {
    expect(r.steps_active).toBe(0);
    expect(r.steps_done).toBe(r.steps_total);
    expect(r.actual_done).toBe(r.steps_total);
  }
  const pools = await sql<{
    name: string;
    occupied_slots: number;
  }>`select name, occupied_slots from pools where occupied_slots <> 0`.execute(h.db);
  expect(pools.rows).toEqual([]);
}

describePostgres("execution: two reconcilers, one database", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    invocations().clear();
  });

  it("runs a burst of 2 000 root steps and 300 three-step chains exactly once each", async () => {
    h = await Harness.create({ files: { "burst.ts": DEFS }, nodes: 2, node: { capacity: 64 } });
    const runs = await Promise.all([
      h.launch(["b/root"], { from: dayKey(0), to: dayKey(1999) }),
      h.launch(["b/a", "b/b", "b/c"], { from: dayKey(0), to: dayKey(299) }),
    ]);
    const done = await h.waitForRuns(runs, 120_000);
    expect(done.map((r) => [r.status, r.steps.length])).toEqual([
      ["success", 2000],
      ["success", 900],
    ]);
    const { rows } = await sql<{ steps: number; tries: number; max_tries: number; outputs: number; events: number; not_success: number }>`
      select (select count(*)::int from steps) as steps,
             (select count(*)::int from step_tries) as tries,
             (select coalesce(max(n), 0)::int from (select count(*) as n from step_tries group by step_id) t) as max_tries,
             (select count(distinct step_id)::int from outputs) as outputs,
             (select count(*)::int from events where kind = 'materialization') as events,
             (select count(*)::int from steps where state <> 'success' or try_number <> 1) as not_success`.execute(h.db);
    expect(rows[0]).toEqual({ steps: 2900, tries: 2900, max_tries: 1, outputs: 2900, events: 2900, not_success: 0 });
    await expectNoDrift(h, runs);
    expect([...invocations().values()].every((n) => n === 1)).toBe(true);
    expect(invocations().size).toBe(2900);
    expect(h.errors()).toEqual([]);
    // Both reconcilers took part.
    expect(h.nodes.map((n) => n.backend.finishedCount > 100)).toEqual([true, true]);
    // Chains passed values along.
    const c = await sql<{ inline_value: unknown }>`
      select distinct inline_value from outputs where asset_key = 'b/c'`.execute(h.db);
    expect(c.rows).toEqual([{ inline_value: 3 }]);
  });

  it("finishes everything when one of two reconcilers dies mid-burst; only its lost tries run again", async () => {
    h = await Harness.create({
      files: { "burst.ts": DEFS },
      nodes: 2,
      node: { capacity: 32 },
      zombieAfterMs: 1_000,
      queuedTimeoutMs: 1_000,
      heartbeatIntervalMs: 200,
    });
    const runId = await h.launch(["b/slowish"], { from: dayKey(0), to: dayKey(1999) });
    await h.until(
      async () => {
        const { rows } = await sql<{
          n: number;
        }>`select count(*)::int as n from steps where run_id = ${runId} and state = 'success'`.execute(h!.db);
        return rows[0]!.n >= 400;
      },
      60_000,
      "the burst to get going",
    );
    const dead = h.nodes[0]!;
    // Die with steps in hand (claimed, loading, running or reported but not yet delivered).
    await h.until(async () => dead.executor.freeSlots() < 32, 10_000, "the first reconciler to hold steps");
    await dead.crash();
    const doneByDead = dead.backend.finishedCount;

    const run = await h.waitForRun(runId, 120_000);
    expect(run.status).toBe("success");
    expect(run.steps.every((s) => s.state === "success")).toBe(true);
    expect(doneByDead).toBeGreaterThan(0);

    // Each step materialised once.
    const { rows } = await sql<{ outputs: number; distinct_steps: number; events: number }>`
      select count(*)::int as outputs, count(distinct step_id)::int as distinct_steps,
             (select count(*)::int from events where run_id = ${runId} and kind = 'materialization') as events
      from outputs where run_id = ${runId}`.execute(h.db);
    expect(rows[0]).toEqual({ outputs: 2000, distinct_steps: 2000, events: 2000 });
    // A step has more than one try only when the dead reconciler had it: its earlier tries failed as zombies
    // (running) or were handed out again (queued, never started).
    const retried = await sql<{ code: string | null; state: string; failure_class: string | null; n: number }>`
      select t.error->>'code' as code, t.state, t.failure_class, count(*)::int as n from step_tries t
      where t.run_id = ${runId} and t.state <> 'success' group by 1, 2, 3 order by 1`.execute(h.db);
    expect(retried.rows.length).toBeGreaterThan(0);
    for (const r of retried.rows) expect(["STEP_ZOMBIE", "STEP_QUEUED_TIMEOUT"]).toContain(r.code);
    // Lost with the reconciler: never the steps' own failures.
    for (const r of retried.rows) expect(r.failure_class).toBe("infrastructure");
    const lost = retried.rows.reduce((n, r) => n + r.n, 0);
    expect(lost).toBeLessThanOrEqual(32);
    // No try was dispatched twice: every (step, try) ran at most once, anywhere.
    expect([...invocations().values()].every((n) => n === 1)).toBe(true);
    await expectNoDrift(h, [runId]);
    // The survivor saw nothing go wrong (the dead one's errors died with it).
    expect(h.nodes[1]!.errors.filter((e) => !/zombie step\(s\) failed/.test(e))).toEqual([]);
  });

  it("never deadlocks or drifts with claims, completions, cascades and cancellations racing across pools", async () => {
    h = await Harness.create({ files: { "tangle.ts": TANGLE }, nodes: 2, node: { capacity: 32 }, housekeepingIntervalMs: 20 });
    for (const p of ["pa", "pb", "pc"]) await h.setPool(p, 20);
    const runs: string[] = [];
    for (let i = 0; i < 12; i++) runs.push(await h.launch(["s/a", "s/b", "s/c", "s/d"], { from: dayKey(i * 50), to: dayKey(i * 50 + 49) }));
    await h.until(
      async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from steps where state = 'success'`.execute(h!.db);
        return rows[0]!.n >= 200;
      },
      30_000,
      "the runs to get going",
    );
    const canceled = runs.filter((_, i) => i % 3 === 0);
    for (const id of canceled) await h.runs.requestCancel(id, new Date());
    const done = await h.waitForRuns(runs, 60_000);
    // Postgres resolves a deadlock by failing one transaction; callers retry, so it shows only in the errors.
    expect(h.errors()).toEqual([]);
    for (const r of done) {
      if (canceled.includes(r.id)) expect(["canceled", "success"]).toContain(r.status);
      else expect(r.status).toBe("success");
    }
    expect(done.filter((r) => r.status === "canceled").length).toBeGreaterThan(0);
    await expectNoDrift(h, runs);
    const twice = await sql<{
      n: number;
    }>`select count(*)::int as n from (select step_id from step_tries group by step_id having count(*) > 1) t`.execute(h.db);
    expect(twice.rows[0]!.n).toBe(0);
  });

  it("hands steps that a closing executor dropped unstarted to the other reconciler, without counting the try", async () => {
    h = await Harness.create({ files: { "burst.ts": DEFS }, nodes: 2, node: { capacity: 16 } });
    const leaving = h.nodes[0]!;
    const staying = h.nodes[1]!;
    // Both hold their steps until the first one has some: otherwise the
    // second may run all 100 before the first claims any.
    leaving.backend.pauseInputs();
    staying.backend.pauseInputs();
    const runId = await h.launch(["b/root"], { from: dayKey(0), to: dayKey(99) });
    await h.until(async () => leaving.executor.freeSlots() < 16, 30_000, "the first reconciler to hold steps");
    staying.backend.resumeInputs();
    // A graceful stop (a deploy, a scale-down): the steps it holds have not started.
    await leaving.reconciler.stop();
    await leaving.executor.close({ graceMs: 1_000 });
    leaving.backend.resumeInputs();

    const run = await h.waitForRun(runId, 30_000);
    expect(run.status).toBe("success");
    const released = run.steps.filter((s) => s.tries.length > 1);
    expect(released.length).toBeGreaterThan(0);
    for (const s of released) {
      expect(s.tries.map((t) => [t.state, (t.error as { code?: string } | null)?.code ?? null])).toEqual([
        ["failed", "EXECUTOR_CLOSED"],
        ["success", null],
      ]);
      // The dropped try did not use up the step's (zero) retries.
      expect(s.maxTries).toBe(2);
    }
    await expectNoDrift(h, [runId]);
  });
  it("hands out a lost try again once when two reconcilers report it, never one that started, and frees its pool slot", async () => {
    h = await Harness.create({ files: { "burst.ts": DEFS }, nodes: 2, start: false });
    const runId = await h.launch(["b/root"], { from: dayKey(0), to: dayKey(3) });
    const claimed = await h.runs.claimRunnable({ now: new Date(), capacity: { local: 4 }, limit: 4 });
    expect(claimed).toHaveLength(4);
    const [started, ...queued] = claimed;
    const now = new Date();
    await h.runs.markStarted(
      [{ stepId: started!.stepId, tryNumber: started!.tryNumber, workerId: "w", hostname: "h", pid: 1, startedAt: now }],
      now,
    );
    const handedOut = await h.runs.handedOut(["local"], new Date(Date.now() + 1_000), 100);
    expect(handedOut.map((t) => t.stepId).sort()).toEqual(queued.map((c) => c.stepId).sort());
    // Both reconcilers saw every try lost (the started one included, as a stale view might): three move, once.
    const everything = claimed.map((c) => ({ stepId: c.stepId, tryNumber: c.tryNumber }));
    const moved = await Promise.all(h.nodes.map((n) => n.runs.requeueLost(everything, new Date(), "the queue no longer holds this try")));
    expect(moved[0]! + moved[1]!).toBe(3);
    const { rows } = await sql<{ id: string; state: string; try_number: number; tries_before: number; code: string | null }>`
      select s.id, s.state, s.try_number, s.tries_before, t.error->>'code' as code
      from steps s left join step_tries t on t.step_id = s.id and t.try_number = s.try_number
      where s.run_id = ${runId} order by s.id`.execute(h.db);
    for (const r of rows) {
      if (Number(r.id) === started!.stepId) expect(r).toMatchObject({ state: "running", tries_before: 0, code: null });
      else expect(r).toMatchObject({ state: "scheduled", try_number: 1, tries_before: 1, code: "STEP_DISPATCH_LOST" });
    }
    const pools = await sql<{ occupied_slots: number }>`select occupied_slots from pools where name = 'default_pool'`.execute(h.db);
    expect(pools.rows[0]!.occupied_slots).toBe(1);
    // Handed out again, they run as new tries.
    await h.startNodes();
    await h.until(
      async () => {
        const done = await sql<{ n: number }>`select count(*)::int as n from steps
                                              where id = any(${queued.map((c) => c.stepId)}::bigint[]) and state = 'success'`.execute(
          h!.db,
        );
        return done.rows[0]!.n === 3;
      },
      60_000,
      "the lost tries to run again",
    );
  });

  it("completes a step while another transaction holds a key-share lock on its run (no lock cycle through the run row)", async () => {
    h = await Harness.create({ files: { "burst.ts": DEFS }, nodes: 1, start: false });
    const runId = await h.launch(["b/root"], { from: dayKey(0), to: dayKey(1) });
    const { rows: steps } = await sql<{
      id: string;
      executor: string;
    }>`select id, executor from steps where run_id = ${runId} order by id`.execute(h.db);
    const claimed = await h.runs.claimRunnable({ now: new Date(), capacity: { [steps[0]!.executor]: 2 }, limit: 2 });
    expect(claimed.map((c) => c.stepId).sort()).toEqual(steps.map((s) => Number(s.id)).sort());
    const [mine, theirs] = steps.map((s) => Number(s.id));
    // Another transaction updates a step of the same run twice: the second update re-checks the foreign key and
    // holds KEY SHARE on the run until it commits (as a completion whose follow-up claim re-updates a step does).
    const other = new pg.Client({ connectionString: h.url });
    await other.connect();
    try {
      await other.query("begin");
      await other.query("update steps set updated_at = now() where id = $1", [theirs]);
      await other.query("update steps set updated_at = now() where id = $1", [theirs]);
      const completion = h.runs.completeSteps(
        [
          {
            stepId: mine!,
            tryNumber: 1,
            startedAt: null,
            endedAt: new Date(),
            workerId: null,
            logRef: null,
            outcome: "failed",
            retryable: false,
            failureClass: "user",
            error: { name: "Error", code: "STEP_FAILED", message: "boom" },
          },
        ],
        new Date(),
      );
      // Before FOR NO KEY UPDATE, the completion's run lock waited here for the other transaction to end.
      const settled = await Promise.race([completion.then(() => "completed"), sleep(10_000).then(() => "blocked")]);
      expect(settled).toBe("completed");
      await other.query("commit");
    } finally {
      await other.end();
    }
    const { rows } = await sql<{
      steps_done: number;
      steps_failed: number;
    }>`select steps_done, steps_failed from runs where id = ${runId}`.execute(h.db);
    expect(rows[0]).toEqual({ steps_done: 1, steps_failed: 1 });
  });
});

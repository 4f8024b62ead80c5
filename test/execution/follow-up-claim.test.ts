import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import type { StepCompletion } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// A completion that hands out the steps its results made runnable (the follow-up claim) takes them from pending
// straight to queued; those it cannot take are scheduled, as without a follow-up.
const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2020-01-01" });
export const a = asset({ key: "f/a", partitions: days }, () => 1);
export const b = asset({ key: "f/b", partitions: days, deps: { a } }, (_ctx, { a }) => a + 1);
export const z = asset({ key: "f/z", partitions: days }, () => 1);
export const y = asset({ key: "f/y", partitions: days, deps: { z } }, (_ctx, { z }) => z + 1);
export const x = asset({ key: "f/x", partitions: days, triggerRule: "one_success", deps: { a, y } }, () => 1);
`;

const DAY0 = "2020-01-01";
const DAY1 = "2020-01-02";

function succeeded(stepId: number, at: Date): StepCompletion {
  return {
    stepId,
    tryNumber: 1,
    startedAt: at,
    endedAt: at,
    workerId: "w-1",
    logRef: null,
    outcome: "success",
    output: { inline: "1", sizeBytes: 1 },
    dataVersion: "v1",
    codeVersion: null,
    inputs: [],
  };
}

function failed(stepId: number, at: Date): StepCompletion {
  return {
    stepId,
    tryNumber: 1,
    startedAt: at,
    endedAt: at,
    workerId: "w-1",
    logRef: null,
    outcome: "failed",
    retryable: false,
    failureClass: "user",
    error: { name: "Error", code: "STEP_FAILED", message: "boom" },
  };
}

interface StepRow {
  id: number;
  asset_key: string;
  partition_key: string;
  state: string;
  try_number: number;
  scheduled_at: Date | null;
  queued_at: Date | null;
  ended_at: Date | null;
  skip_reason: string | null;
}

describePostgres("execution: the follow-up claim of a completion", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  async function stepsOf(runId: string): Promise<Map<string, StepRow>> {
    const { rows } = await sql<StepRow>`
      select id::int as id, asset_key, partition_key, state, try_number, scheduled_at, queued_at, ended_at, skip_reason
      from steps where run_id = ${runId}::uuid`.execute(h!.db);
    return new Map(rows.map((r) => [`${r.asset_key}@${r.partition_key}`, r]));
  }

  async function tries(stepId: number): Promise<number> {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from step_tries where step_id = ${stepId}`.execute(h!.db);
    return rows[0]!.n;
  }

  it("hands out as many runnable steps as it may, runnable from the completion on; the rest are scheduled and claimed later", async () => {
    h = await Harness.create({ files: { "f.ts": DEFS }, nodes: 1, start: false });
    const runId = await h.launch(["f/a", "f/b"], { from: DAY0, to: DAY1 });
    const t1 = new Date();
    const roots = await h.runs.claimRunnable({ now: t1, capacity: { local: 10 }, limit: 10 });
    expect(roots.map((c) => c.assetKey)).toEqual(["f/a", "f/a"]);

    const t2 = new Date(t1.getTime() + 1_000);
    const summary = await h.runs.completeSteps(
      roots.map((c) => succeeded(c.stepId, t2)),
      t2,
      Math.random,
      { executor: "local", limit: 1 },
    );
    expect(summary.scheduled).toBe(2);
    expect(summary.claimed).toHaveLength(1);
    const handed = summary.claimed[0]!;
    expect(handed).toMatchObject({ assetKey: "f/b", tryNumber: 1 });

    const steps = await stepsOf(runId);
    const mine = [...steps.values()].find((s) => s.id === handed.stepId)!;
    const other = [...steps.values()].find((s) => s.asset_key === "f/b" && s.id !== handed.stepId)!;
    // Handed out: queued at the completion's time, and runnable since then (no wait between the two).
    expect(mine).toMatchObject({ state: "queued", try_number: 1, skip_reason: null, ended_at: null });
    expect(mine.scheduled_at?.getTime()).toBe(t2.getTime());
    expect(mine.queued_at?.getTime()).toBe(t2.getTime());
    expect(await tries(mine.id)).toBe(1);
    // Over the follow-up's limit: scheduled as a completion without a follow-up leaves it, with no try yet.
    expect(other).toMatchObject({ state: "scheduled", try_number: 0, skip_reason: null, ended_at: null, queued_at: null });
    expect(other.scheduled_at?.getTime()).toBe(t2.getTime());
    expect(await tries(other.id)).toBe(0);

    const t3 = new Date(t2.getTime() + 1_000);
    const later = await h.runs.claimRunnable({ now: t3, capacity: { local: 10 }, limit: 10 });
    expect(later.map((c) => c.stepId)).toEqual([other.id]);
    const { rows } = await sql<{ steps_active: number }>`select steps_active from runs where id = ${runId}::uuid`.execute(h.db);
    expect(rows[0]!.steps_active).toBe(2);
  });

  it("with no free slot, schedules every runnable step and hands out none", async () => {
    h = await Harness.create({ files: { "f.ts": DEFS }, nodes: 1, start: false });
    const runId = await h.launch(["f/a", "f/b"], { from: DAY0, to: DAY1 });
    const t1 = new Date();
    const roots = await h.runs.claimRunnable({ now: t1, capacity: { local: 10 }, limit: 10 });
    const t2 = new Date(t1.getTime() + 1_000);
    // A pool of one slot, held by the other root once this one's is given back: the follow-up may take nothing.
    await sql`update pools set slots = 1 where name = 'default_pool'`.execute(h.db);
    const summary = await h.runs.completeSteps([succeeded(roots[0]!.stepId, t2)], t2, Math.random, { executor: "local", limit: 5 });
    expect(summary).toMatchObject({ scheduled: 1, claimed: [] });
    const b = [...(await stepsOf(runId)).values()].filter((s) => s.asset_key === "f/b" && s.state !== "pending");
    expect(b).toHaveLength(1);
    expect(b[0]).toMatchObject({ state: "scheduled", try_number: 0 });
    expect(b[0]!.scheduled_at?.getTime()).toBe(t2.getTime());
  });

  it("judges a step held runnable once, though a step beside it upstream ends in the same cascade", async () => {
    h = await Harness.create({ files: { "f.ts": DEFS }, nodes: 1, start: false });
    const runId = await h.launch(["f/a", "f/z", "f/y", "f/x"], { partition: DAY0 });
    const t1 = new Date();
    const roots = await h.runs.claimRunnable({ now: t1, capacity: { local: 10 }, limit: 10 });
    const a = roots.find((c) => c.assetKey === "f/a")!;
    const z = roots.find((c) => c.assetKey === "f/z")!;
    const t2 = new Date(t1.getTime() + 1_000);
    // a succeeds: x (one_success) may run. z fails: y is upstream_failed, which ends an upstream of x in turn.
    const summary = await h.runs.completeSteps([succeeded(a.stepId, t2), failed(z.stepId, t2)], t2, Math.random, {
      executor: "local",
      limit: 5,
    });
    expect(summary.scheduled).toBe(1);
    expect(summary.claimed.map((c) => c.assetKey)).toEqual(["f/x"]);
    const steps = await stepsOf(runId);
    expect(steps.get(`f/y@${DAY0}`)).toMatchObject({ state: "upstream_failed" });
    expect(steps.get(`f/x@${DAY0}`)).toMatchObject({ state: "queued", try_number: 1 });
    expect(await tries(steps.get(`f/x@${DAY0}`)!.id)).toBe(1);
  });
});

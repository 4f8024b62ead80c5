import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness, sleep, type ExecutorChoice } from "./harness.js";

const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01" });

export const slow = asset({ key: "c/slow", partitions: days, retries: { max: 3, delay: 0 } }, async (ctx) => {
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 10_000);
    ctx.signal.addEventListener("abort", () => { clearTimeout(timer); reject(ctx.signal.reason); });
  });
  return 1;
});
export const job = asset({ key: "c/job", maxActiveRuns: 1 }, async () => { await new Promise((r) => setTimeout(r, 300)); return 3; });
export const after = asset({ key: "c/after", partitions: days, deps: { slow } }, async () => 2);
`;

describePostgres("execution: canceling a run mid-flight", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  for (const executor of ["in-process", "local"] as ExecutorChoice[]) {
    it(`fails running steps with STEP_CANCELED, skips the rest, and starts nothing more (${executor})`, async () => {
      h = await Harness.create({ files: { "cancel.ts": DEFS }, executor, node: { capacity: 2 } });
      const runId = await h.launch(["c/slow", "c/after"], { from: "2025-01-01", to: "2025-01-06" });
      await h.until(
        async () => {
          const { rows } = await sql<{
            n: number;
          }>`select count(*)::int as n from steps where run_id = ${runId} and state = 'running'`.execute(h!.db);
          return rows[0]!.n === 2;
        },
        20_000,
        "two steps to run",
      );
      const requested = await h.runs.requestCancel(runId, new Date());
      expect(requested.cancelRequestedAt).not.toBeNull();
      // Asking twice is harmless.
      await h.runs.requestCancel(runId, new Date());

      const run = await h.waitForRun(runId, 20_000);
      expect(run.status).toBe("canceled");
      const states = run.steps.map((s) => s.state).sort();
      expect(states).toEqual([...Array(2).fill("failed"), ...Array(10).fill("skipped")]);
      for (const s of run.steps.filter((s) => s.state === "failed")) {
        expect(s.tries).toHaveLength(1);
        expect(s.error).toMatchObject({ code: "STEP_CANCELED" });
      }
      for (const s of run.steps.filter((s) => s.state === "skipped")) {
        expect(s.tries).toEqual([]);
        expect(s.skipReason).toBe("run canceled");
      }
      expect(run).toMatchObject({ stepsDone: 12, stepsActive: 0 });

      // Nothing starts afterwards, even with retries left and slots free.
      await sleep(400);
      const { rows } = await sql<{ tries: number; late: number; occupied: number }>`
        select (select count(*)::int from step_tries where run_id = ${runId}) as tries,
               (select count(*)::int from step_tries where run_id = ${runId} and queued_at >= ${run.cancelRequestedAt}) as late,
               (select occupied_slots from pools where name = 'default_pool') as occupied`.execute(h.db);
      expect(rows[0]).toEqual({ tries: 2, late: 0, occupied: 0 });
    });
  }

  it("cancels a run still queued behind maxActiveRuns, and the job's next run goes ahead", async () => {
    h = await Harness.create({ files: { "cancel.ts": DEFS } });
    const first = await h.launch(["c/job"]);
    const second = await h.launch(["c/job"]);
    const third = await h.launch(["c/job"]);
    await h.until(async () => (await h!.runs.getRun(first))!.steps[0]!.state === "running", 10_000, "the first run's step to run");
    expect((await h.runs.getRun(second))!.status).toBe("queued");
    await h.runs.requestCancel(second, new Date());
    const canceled = await h.waitForRun(second);
    expect(canceled.status).toBe("canceled");
    expect(canceled.steps.map((s) => [s.state, s.tries.length])).toEqual([["skipped", 0]]);
    expect(canceled.startedAt).toBeNull();
    // The first run is unaffected; the third one runs after it.
    const [a, c] = await h.waitForRuns([first, third]);
    expect([a!.status, c!.status]).toEqual(["success", "success"]);
    // Judged by the steps' tries, which the executor times on one clock: the runs' own times are taken by the calls
    // that end one and start the other (a reconciler pass may start the next run with the time it began at).
    expect(c!.steps[0]!.tries[0]!.startedAt!.getTime()).toBeGreaterThanOrEqual(a!.steps[0]!.tries.at(-1)!.endedAt!.getTime());
  });
});

import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

const DEFS = `
import { asset } from "tributary";

export const ok = asset({ key: "t/ok" }, async () => "ok");
export const bad = asset({ key: "t/bad" }, async () => { throw new Error("bad on purpose"); });
export const skipper = asset({ key: "t/skipper" }, async (ctx) => ctx.skip("nothing to do today"));

// all_success (the default): a failure fails downstream, transitively; a skip skips it, transitively.
export const afterBad = asset({ key: "t/after_bad", deps: { bad } }, async () => "never");
export const afterAfterBad = asset({ key: "t/after_after_bad", deps: { afterBad } }, async () => "never");
export const afterSkip = asset({ key: "t/after_skip", deps: { skipper } }, async () => "never");
export const afterAfterSkip = asset({ key: "t/after_after_skip", deps: { afterSkip } }, async () => "never");

export const allDone = asset({ key: "t/all_done", triggerRule: "all_done", deps: { bad, ok } }, async (_ctx, i) => ({ ok: i.ok, bad: i.bad ?? null }));
export const allDoneAfterCascade = asset({ key: "t/all_done_cascade", triggerRule: "all_done", deps: { afterBad } }, async () => "ran");
export const oneFailed = asset({ key: "t/one_failed", triggerRule: "one_failed", deps: { bad, ok } }, async () => "cleanup");
export const oneFailedNone = asset({ key: "t/one_failed_none", triggerRule: "one_failed", deps: { ok } }, async () => "never");
export const oneSuccess = asset({ key: "t/one_success", triggerRule: "one_success", deps: { bad, ok } }, async () => "ran");
export const allFailed = asset({ key: "t/all_failed", triggerRule: "all_failed", deps: { bad } }, async () => "ran");
export const nfmos = asset({ key: "t/nfmos", triggerRule: "none_failed_min_one_success", deps: { ok, skipper } }, async () => "ran");
export const nfmosAllSkipped = asset({ key: "t/nfmos_all_skipped", triggerRule: "none_failed_min_one_success", deps: { skipper } }, async () => "never");
export const nfmosFailed = asset({ key: "t/nfmos_failed", triggerRule: "none_failed_min_one_success", deps: { ok, bad } }, async () => "never");
export const noneSkipped = asset({ key: "t/none_skipped", triggerRule: "none_skipped", deps: { ok, skipper } }, async () => "never");
export const allSkipped = asset({ key: "t/all_skipped", triggerRule: "all_skipped", deps: { skipper } }, async () => "ran");
export const always = asset({ key: "t/always", triggerRule: "always", deps: { afterBad } }, async () => "ran");
`;

describePostgres("execution: trigger rules through the real store", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create({ files: { "rules.ts": DEFS } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("applies the rules, cascades upstream_failed and skipped, and fails the run", async () => {
    const keys = [
      "t/ok",
      "t/bad",
      "t/skipper",
      "t/after_bad",
      "t/after_after_bad",
      "t/after_skip",
      "t/after_after_skip",
      "t/all_done",
      "t/all_done_cascade",
      "t/one_failed",
      "t/one_failed_none",
      "t/one_success",
      "t/all_failed",
      "t/nfmos",
      "t/nfmos_all_skipped",
      "t/nfmos_failed",
      "t/none_skipped",
      "t/all_skipped",
      "t/always",
    ];
    const run = await h.waitForRun(await h.launch(keys));
    const state = Object.fromEntries(run.steps.map((s) => [s.assetKey, s.state]));
    expect(state).toEqual({
      "t/ok": "success",
      "t/bad": "failed",
      "t/skipper": "skipped",
      "t/after_bad": "upstream_failed",
      "t/after_after_bad": "upstream_failed",
      "t/after_skip": "skipped",
      "t/after_after_skip": "skipped",
      "t/all_done": "success",
      "t/all_done_cascade": "success",
      "t/one_failed": "success",
      "t/one_failed_none": "skipped",
      "t/one_success": "success",
      "t/all_failed": "success",
      "t/nfmos": "success",
      "t/nfmos_all_skipped": "skipped",
      "t/nfmos_failed": "upstream_failed",
      "t/none_skipped": "skipped",
      "t/all_skipped": "success",
      "t/always": "success",
    });
    expect(run.status).toBe("failed");
    expect(run).toMatchObject({ stepsTotal: keys.length, stepsDone: keys.length, stepsFailed: 4, stepsActive: 0 });

    const step = (k: string) => run.steps.find((s) => s.assetKey === k)!;
    expect(step("t/skipper").skipReason).toBe("nothing to do today");
    expect(step("t/after_skip").skipReason).toMatch(/trigger rule all_success/);
    // Steps decided by their trigger rule never ran: no try.
    for (const k of ["t/after_bad", "t/after_after_bad", "t/after_skip", "t/nfmos_failed", "t/none_skipped"])
      expect(step(k).tries).toEqual([]);
    // all_done ran after a failure; the failed upstream gives it no value.
    const allDoneOut = await sql<{
      inline_value: unknown;
    }>`select inline_value from outputs where step_id = ${step("t/all_done").id}`.execute(h.db);
    expect(allDoneOut.rows[0]!.inline_value).toEqual({ ok: "ok", bad: null });
    // A skipped step is recorded as a skipped try with its reason, and no materialisation.
    expect(step("t/skipper").tries.map((t) => t.state)).toEqual(["skipped"]);
    const events = await sql<{
      asset_key: string;
      kind: string;
    }>`select asset_key, kind from events where run_id = ${run.id} and asset_key in ('t/skipper', 't/bad') order by 1`.execute(h.db);
    expect(events.rows).toEqual([{ asset_key: "t/bad", kind: "failure" }]);
    const ps = await sql<{
      asset_key: string;
      status: string;
    }>`select asset_key, status from partition_status where asset_key in ('t/bad', 't/skipper', 't/after_bad')`.execute(h.db);
    expect(ps.rows).toEqual([{ asset_key: "t/bad", status: "failed" }]);
  });

  it("ends a run of successes and skips as success", async () => {
    const run = await h.waitForRun(await h.launch(["t/ok", "t/skipper", "t/after_skip", "t/after_after_skip", "t/nfmos", "t/all_skipped"]));
    expect(Object.fromEntries(run.steps.map((s) => [s.assetKey, s.state]))).toEqual({
      "t/ok": "success",
      "t/skipper": "skipped",
      "t/after_skip": "skipped",
      "t/after_after_skip": "skipped",
      "t/nfmos": "success",
      "t/all_skipped": "success",
    });
    expect(run.status).toBe("success");
    expect(run).toMatchObject({ stepsDone: 6, stepsFailed: 0, stepsActive: 0 });
    const pool = await sql<{ occupied_slots: number }>`select occupied_slots from pools where name = 'default_pool'`.execute(h.db);
    expect(pool.rows[0]!.occupied_slots).toBe(0);
  });
});

import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { AutomationTask } from "../../src/reconciler/index.js";
import { PgAutomationStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// Ten days of orders; 2020-01-05 has none. A blocking check refuses empty days, a non-blocking one warns about
// small ones, and the daily report reads each day.
const DEFS = `
import { asset, check, daily } from "tributary";
const days = daily({ start: "2020-01-01" });
export const orders = asset({ key: "c/orders", partitions: days, owner: "team:sales" }, async (ctx) => ({
  rows: ctx.partition.key === "2020-01-05" ? (globalThis.__tributaryRowsOnTheFifth ?? 0) : ctx.partition.key === "2020-01-07" ? 2 : 10,
}));
export const notEmpty = check(orders, { name: "not_empty", blocking: true }, (_ctx, value) => ({
  passed: value.rows > 0,
  metadata: { rows: value.rows },
}));
export const bigEnough = check(orders, { name: "big_enough", severity: "warn" }, (_ctx, value) => ({ passed: value.rows >= 5 }));
export const report = asset({ key: "c/report", partitions: days, deps: { orders } }, async (_ctx, { orders }) => ({ total: orders.rows }));
`;

// Checks that go wrong themselves.
const WRONG = `
import { asset, check } from "tributary";
export const table = asset({ key: "w/table" }, async () => ({ rows: 3 }));
export const throwsBlocking = check(table, { name: "throws_blocking", blocking: true }, () => { throw new Error("warehouse unreachable"); });
export const throwsSoft = check(table, { name: "throws_soft" }, () => { throw new Error("flaky"); });
export const answersWrong = check(table, { name: "answers_wrong" }, () => ({ ok: true }));
export const reader = asset({ key: "w/reader", deps: { table } }, async (_ctx, { table }) => table.rows);
`;

// An eager reader of a source whose check refuses one day.
const AUTO = `
import { asset, check, daily, eager } from "tributary";
const days = daily({ start: "2025-03-01" });
export const src = asset({ key: "ca/src", partitions: days }, async (ctx) => ({ ok: ctx.partition.key !== "2025-03-02" }));
export const sane = check(src, { name: "sane", blocking: true }, (_ctx, v) => ({ passed: v.ok }));
export const clean = asset({ key: "ca/clean", partitions: days, automation: eager(), deps: { src } }, async (_ctx, { src }) => src.ok);
`;

describePostgres("execution: asset checks", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("a failing blocking check stops only its partition's readers; results, marks and alerts are recorded", async () => {
    h = await Harness.create({ files: { "orders.ts": DEFS } });
    const runId = await h.launch(["c/orders", "c/report"], { from: "2020-01-01", to: "2020-01-10" });
    const run = await h.waitForRun(runId, 60_000);
    expect(run.status).toBe("failed");
    const step = (asset: string, partition: string, check: string | null = null) =>
      run.steps.find((s) => s.assetKey === asset && s.partitionKey === partition && s.checkName === check)!;
    expect(run.steps).toHaveLength(40);
    for (let d = 1; d <= 10; d++) {
      const day = `2020-01-${String(d).padStart(2, "0")}`;
      expect(step("c/orders", day).state).toBe("success");
      expect(step("c/orders", day, "big_enough").state).toBe("success"); // non-blocking: never fails its step
      if (day === "2020-01-05") {
        const failedCheck = step("c/orders", day, "not_empty");
        expect(failedCheck.state).toBe("failed");
        expect(failedCheck.error).toMatchObject({ code: "CHECK_FAILED" });
        expect((failedCheck.error as { message: string }).message).toContain(
          'blocking check "not_empty" of asset "c/orders" failed on partition "2020-01-05"',
        );
        const blocked = step("c/report", day);
        expect(blocked.state).toBe("upstream_failed");
        expect(blocked.skipReason).toContain('blocking check "not_empty" of asset "c/orders" failed on partition "2020-01-05"');
        // The check ran after the asset and before the reader.
        expect(failedCheck.upstream).toEqual([step("c/orders", day).id]);
      } else {
        expect(step("c/orders", day, "not_empty").state).toBe("success");
        expect(step("c/report", day).state).toBe("success");
        expect(step("c/report", day).upstream).toContain(step("c/orders", day, "not_empty").id);
        // A non-blocking check is nobody's upstream.
        expect(step("c/report", day).upstream).not.toContain(step("c/orders", day, "big_enough").id);
      }
    }

    const results = await sql<{
      partition_key: string;
      check_name: string;
      passed: boolean;
      blocking: boolean;
      severity: string;
      metadata: unknown;
      judged: boolean;
    }>`
      select r.partition_key, r.check_name, r.passed, r.blocking, r.severity, r.metadata,
             (r.event_id = ps.last_materialization_event_id) as judged
      from check_results r join partition_status ps on ps.asset_key = r.asset_key and ps.partition_key = r.partition_key
      where r.run_id = ${runId} order by r.partition_key, r.check_name`.execute(h.db);
    expect(results.rows).toHaveLength(20);
    expect(results.rows.every((r) => r.judged)).toBe(true);
    expect(results.rows.filter((r) => !r.passed).map((r) => [r.partition_key, r.check_name, r.blocking, r.severity])).toEqual([
      ["2020-01-05", "big_enough", false, "warn"],
      ["2020-01-05", "not_empty", true, "error"],
      ["2020-01-07", "big_enough", false, "warn"],
    ]);
    expect(results.rows.find((r) => r.partition_key === "2020-01-05" && r.check_name === "not_empty")!.metadata).toEqual({ rows: 0 });

    // Only the partition whose latest materialisation failed a blocking check is marked; its status is still
    // what was materialised (the data exists), and nothing else of the asset is marked.
    const marks = await sql<{ partition_key: string; failed_check: string; status: string }>`
      select partition_key, failed_check, status from partition_status where asset_key = 'c/orders' and failed_check is not null`.execute(
      h.db,
    );
    expect(marks.rows).toEqual([{ partition_key: "2020-01-05", failed_check: "not_empty", status: "materialized" }]);
    // Failed checks are never failed materialisations.
    const failures = await sql<{ n: number }>`select count(*)::int as n from events where kind = 'failure' and run_id = ${runId}`.execute(
      h.db,
    );
    expect(failures.rows[0]!.n).toBe(0);

    // Every failed check is alerted to the owner, blocking or not.
    const alerts = await sql<{ partition_key: string; owner: string; check: string; blocking: boolean }>`
      select partition_key, owner, payload->>'check' as check, (payload->>'blocking')::boolean as blocking
      from alerts where kind = 'check_failed' order by partition_key, payload->>'check'`.execute(h.db);
    expect(alerts.rows).toEqual([
      { partition_key: "2020-01-05", owner: "team:sales", check: "big_enough", blocking: false },
      { partition_key: "2020-01-05", owner: "team:sales", check: "not_empty", blocking: true },
      { partition_key: "2020-01-07", owner: "team:sales", check: "big_enough", blocking: false },
    ]);

    // Materialising the day again (now with rows) clears the mark once the check passes on the new data.
    (globalThis as { __tributaryRowsOnTheFifth?: number }).__tributaryRowsOnTheFifth = 4; // the in-process executor shares this realm
    const rerun = await h.waitForRun(await h.launch(["c/orders", "c/report"], { from: "2020-01-05", to: "2020-01-05" }), 30_000);
    expect(rerun.status, JSON.stringify(rerun.steps.map((s) => [s.checkName ?? s.assetKey, s.state, s.error]))).toBe("success");
    const after = await sql<{ n: number }>`select count(*)::int as n from partition_status where failed_check is not null`.execute(h.db);
    expect(after.rows[0]!.n).toBe(0);
    delete (globalThis as { __tributaryRowsOnTheFifth?: number }).__tributaryRowsOnTheFifth;
  });

  it("records a check that throws or answers wrong as a failed result with the error, not a crashed run", async () => {
    h = await Harness.create({ files: { "wrong.ts": WRONG } });
    const run = await h.waitForRun(await h.launch(["w/table", "w/reader"]), 30_000);
    const byName = Object.fromEntries(run.steps.map((s) => [s.checkName ?? s.assetKey, s]));
    expect(byName["w/table"]!.state).toBe("success");
    // A blocking check that throws blocks its readers; the others only record the failure.
    expect(byName["throws_blocking"]!.state).toBe("failed");
    expect((byName["throws_blocking"]!.error as { message: string }).message).toMatch(
      /blocking check "throws_blocking" of asset "w\/table" failed on the asset: it threw .*warehouse unreachable/,
    );
    expect(byName["throws_soft"]!.state).toBe("success");
    expect(byName["answers_wrong"]!.state).toBe("success");
    expect(byName["w/reader"]!.state).toBe("upstream_failed");
    expect(run.status).toBe("failed");
    const results = await sql<{ check_name: string; passed: boolean; code: string; message: string }>`
      select check_name, passed, error->>'code' as code, error->>'message' as message
      from check_results order by check_name`.execute(h.db);
    expect(results.rows.map((r) => [r.check_name, r.passed])).toEqual([
      ["answers_wrong", false],
      ["throws_blocking", false],
      ["throws_soft", false],
    ]);
    expect(results.rows[0]!.code).toBe("CHECK_RESULT_INVALID");
    expect(results.rows[0]!.message).toContain('check "answers_wrong" must return { passed: boolean, metadata? }, but "passed" is missing');
    expect(results.rows[2]!.message).toContain("flaky");
  });
  it("runs checks in worker processes too (local executor), with the same verdicts", async () => {
    h = await Harness.create({ files: { "orders.ts": DEFS }, executor: "local" });
    const run = await h.waitForRun(await h.launch(["c/orders", "c/report"], { from: "2020-01-01", to: "2020-01-10" }), 60_000);
    const states = (pred: (s: (typeof run.steps)[number]) => boolean) => run.steps.filter(pred).map((s) => `${s.partitionKey} ${s.state}`);
    expect(states((s) => s.checkName === "not_empty" && s.state !== "success")).toEqual(["2020-01-05 failed"]);
    expect(states((s) => s.assetKey === "c/report" && s.state !== "success")).toEqual(["2020-01-05 upstream_failed"]);
    const failed = await sql<{ partition_key: string; check_name: string }>`
      select partition_key, check_name from check_results where not passed order by 1, 2`.execute(h.db);
    expect(failed.rows).toEqual([
      { partition_key: "2020-01-05", check_name: "big_enough" },
      { partition_key: "2020-01-05", check_name: "not_empty" },
      { partition_key: "2020-01-07", check_name: "big_enough" },
    ]);
  });
  it("automation does not build on data that failed a blocking check", async () => {
    h = await Harness.create({ files: { "auto.ts": AUTO } });
    const run = await h.waitForRun(await h.launch(["ca/src"], { from: "2025-03-01", to: "2025-03-02" }), 30_000);
    expect(run.status).toBe("failed");
    const automation = new AutomationTask({
      store: new PgAutomationStore(h.db),
      runs: h.runs,
      graphs: h.graphs,
      definitions: h.definitions,
      owner: "checks-test",
      minIntervalMs: 0,
    });
    // Tick until the good day is requested, then a few more times (the failed day must never be).
    const requestedDays = async () =>
      (
        await sql<{ partition_key: string }>`select partition_key from steps where asset_key = 'ca/clean' order by 1`.execute(h!.db)
      ).rows.map((r) => r.partition_key);
    await h.until(
      async () => {
        await automation.tick(new Date("2025-03-05T00:00:00Z"));
        return (await requestedDays()).length > 0;
      },
      30_000,
      "automation to request ca/clean",
    );
    for (let i = 0; i < 3; i++) await automation.tick(new Date("2025-03-05T00:00:00Z"));
    const requested = { rows: (await requestedDays()).map((partition_key) => ({ partition_key })) };
    const debug = await sql`select ps.partition_key, ps.failed_check from partition_status ps where asset_key = 'ca/src'`.execute(h.db);
    expect(
      requested.rows.map((r) => r.partition_key),
      JSON.stringify(debug.rows),
    ).toEqual(["2025-03-01"]);
  });
});

import type { Hono } from "hono";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runShape } from "../../src/planner/index.js";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { call, post, restApp, rowCounts, type Json } from "./rest-client.js";

// POST /dags/{dag_id}/clearTaskInstances: dry runs (Airflow's default) answer what a clear would rerun and write
// nothing; a clear of several tasks is all or nothing. Real Postgres, the in-process executor, responses checked
// against Airflow's spec.

const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-06" });
export const raw = asset({ key: "shop/raw", partitions: days }, async (ctx) => {
  if (ctx.partition.key === "2025-01-08") throw new Error("no data for " + ctx.partition.key);
  return { n: 1 };
});
export const total = asset({ key: "shop/total", partitions: days, deps: { raw } }, async (ctx, { raw }) => raw.n + 1);
`;
const CLEAR: [string, string] = ["/dags/{dag_id}/clearTaskInstances", "post"];
const PATH = "/dags/shop/clearTaskInstances";
const day = (d: string) => `2025-01-${d}T00:00:00.000Z`;
const refs = (body: Json) => (body.task_instances as Json[]).map((t) => [t.task_id, t.execution_date, t.dag_run_id]);

describePostgres("REST clearTaskInstances: dry runs and all-or-nothing clears", () => {
  let h: Harness;
  let app: Hono;
  let runId = "";

  beforeAll(async () => {
    h = await Harness.create({ files: { "shop.ts": DEFS } });
    app = restApp(h);
    // One run over three days: raw fails on the 8th, so total's 8th never runs.
    runId = await h.launch(["shop/raw", "shop/total"], { from: "2025-01-07", to: "2025-01-09" });
    expect((await h.waitForRun(runId)).status).toBe("failed");
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  it("answers a dry run (the default) with the task instances a clear would rerun, writing nothing", async () => {
    const before = await rowCounts(h.db);
    // Airflow's defaults: dry_run and only_failed, every task of the DAG. total has no failed partition: skipped.
    expect(refs(await call(app, CLEAR, PATH, post({})))).toEqual([["shop/raw", day("08"), runId]]);

    // A run's task and what reads it: each reference names the run whose step would be cleared.
    const downstream = await call(
      app,
      CLEAR,
      PATH,
      post({ task_ids: ["shop/raw"], dag_run_id: runId, only_failed: false, include_downstream: true }),
    );
    expect(refs(downstream)).toEqual([
      ["shop/raw", day("07"), runId],
      ["shop/raw", day("08"), runId],
      ["shop/raw", day("09"), runId],
      ["shop/total", day("07"), runId],
      ["shop/total", day("08"), runId],
      ["shop/total", day("09"), runId],
    ]);
    expect(downstream.task_instances[0]).toEqual({ dag_id: "shop", dag_run_id: runId, task_id: "shop/raw", execution_date: day("07") });

    // A partition that never ran would be run for the first time: there is no run to name.
    const fresh = await call(
      app,
      CLEAR,
      PATH,
      post({ task_ids: ["shop/raw"], only_failed: false, start_date: day("09"), end_date: "2025-01-10T06:00:00Z" }),
    );
    expect(fresh.task_instances).toEqual([
      { dag_id: "shop", dag_run_id: runId, task_id: "shop/raw", execution_date: day("09") },
      { dag_id: "shop", task_id: "shop/raw", execution_date: day("10") },
    ]);
    expect(await rowCounts(h.db)).toEqual(before);
  });

  it("clears exactly what the dry run announced", async () => {
    const body = { task_ids: ["shop/raw"], dag_run_id: runId, include_downstream: true, only_failed: false };
    const preview = refs(await call(app, CLEAR, PATH, post(body))).map(([task, date]) => [task, date]);
    const cleared = await call(app, CLEAR, PATH, post({ ...body, dry_run: false }));
    const rerunId = cleared.task_instances[0].dag_run_id as string;
    expect(refs(cleared)).toEqual(preview.map(([task, date]) => [task, date, rerunId]));
    const rerun = await h.waitForRun(rerunId);
    expect(rerun.origin).toBe("rerun");
    expect(rerun.steps.map((s) => [s.assetKey, s.partitionKey]).sort()).toEqual(
      ["shop/raw", "shop/total"].flatMap((a) => ["2025-01-07", "2025-01-08", "2025-01-09"].map((p) => [a, p])),
    );
    // The newest step of each partition is now the rerun's: a dry run names it.
    expect(
      refs(
        await call(app, CLEAR, PATH, post({ task_ids: ["shop/total"], only_failed: false, start_date: day("07"), end_date: day("07") })),
      ),
    ).toEqual([["shop/total", day("07"), rerunId]]);
  });

  it("clears several tasks all or nothing: a plan error on the second leaves the first uncleared", async () => {
    const before = await rowCounts(h.db);
    // raw's 8th can be rerun alone; total's 8th reads raw's 8th, which was never materialised.
    const body = { task_ids: ["shop/raw", "shop/total"], only_failed: false, start_date: day("08"), end_date: day("08") };
    for (const dryRun of [false, true]) {
      const refused = await call(app, CLEAR, PATH, post({ ...body, dry_run: dryRun }), 400);
      expect(refused.detail).toMatch(/"shop\/raw" \(read by "shop\/total"\).*\[PLAN_MISSING_UPSTREAM\]/s);
    }
    expect(await rowCounts(h.db)).toEqual(before);

    // Both tasks fine: both reruns are created (one per task, in one transaction).
    const ok = await call(app, CLEAR, PATH, post({ ...body, start_date: day("07"), end_date: day("07"), dry_run: false }));
    const runs = [...new Set((ok.task_instances as Json[]).map((t) => t.dag_run_id as string))];
    expect(refs(ok).map(([task, date]) => [task, date])).toEqual([
      ["shop/raw", day("07")],
      ["shop/total", day("07")],
    ]);
    expect(runs).toHaveLength(2);
    expect((await h.waitForRuns(runs)).map((r) => r.status)).toEqual(["success", "success"]);
    expect((await rowCounts(h.db)).runs).toBe(before.runs + 2);
  });

  it("creates several runs in one transaction: an invalid one leaves none of them", async () => {
    const before = await rowCounts(h.db);
    const { graph } = await h.graphs.current({ fresh: true });
    const plan = { version: 1, missing: [], steps: [{ index: 0, assetKey: "shop/raw", partitionKey: "2025-01-07", upstream: [] }] };
    const good = { ...runShape(graph, plan), origin: "rerun" as const };
    await expect(h.runs.createRuns([good, { ...good, maxActiveSteps: 0 }], new Date())).rejects.toThrow(/max_active_steps/);
    expect(await rowCounts(h.db)).toEqual(before);
  });
});

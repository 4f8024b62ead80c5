import type { Hono } from "hono";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { call, post, restApp, rowCounts, type Json } from "./rest-client.js";

// What the REST API answers where Airflow clients rely on it: the order of DAG runs by logical date, a clear with
// nothing to clear, and a trigger that cannot run. Real Postgres, the in-process executor, Airflow's spec.

const DEFS = `
import { asset, daily, timeWindows } from "tributary";
export const day = asset({ key: "shop/day", partitions: daily({ start: "2025-01-06" }) }, async (ctx) => ctx.partition.key);
// Keys whose text order is not time order.
export const euro = asset({ key: "euro/day", partitions: timeWindows({ cron: "0 0 * * *", start: "2024-12-30", format: "dd.MM.yyyy" }) }, async (ctx) => ctx.partition.key);
export const raw = asset({ key: "ingest/raw", partitions: daily({ start: "2025-01-06" }) }, async (ctx) => ctx.partition.key);
export const report = asset({ key: "report/total", partitions: daily({ start: "2025-01-06" }), deps: { raw } }, async (ctx, { raw }) => String(raw));
`;
const RUNS: [string, string] = ["/dags/{dag_id}/dagRuns", "get"];
const TRIGGER: [string, string] = ["/dags/{dag_id}/dagRuns", "post"];
const CLEAR: [string, string] = ["/dags/{dag_id}/clearTaskInstances", "post"];

describePostgres("REST answers", () => {
  let h: Harness;
  let app: Hono;
  const runOf: Record<string, string> = {};

  beforeAll(async () => {
    h = await Harness.create({ files: { "shop.ts": DEFS } });
    app = restApp(h);
    // Created in an order that is neither the logical dates' nor their reverse.
    for (const p of ["2025-01-09", "2025-01-07", "2025-01-10", "2025-01-08"]) runOf[p] = await h.launch(["shop/day"], { partition: p });
    for (const p of ["01.01.2025", "31.12.2024", "02.01.2025"]) runOf[p] = await h.launch(["euro/day"], { partition: p });
    await h.waitForRuns(Object.values(runOf));
  }, 90_000);
  afterAll(async () => {
    await h?.stop();
  });

  it("orders DAG runs by logical date with order_by=-execution_date (the default) and execution_date", async () => {
    const dates = (body: Json) => (body.dag_runs as Json[]).map((r) => [r.execution_date, r.dag_run_id]);
    const newestFirst = ["2025-01-10", "2025-01-09", "2025-01-08", "2025-01-07"].map((d) => [`${d}T00:00:00.000Z`, runOf[d]]);
    expect(dates(await call(app, RUNS, "/dags/shop/dagRuns"))).toEqual(newestFirst);
    expect(dates(await call(app, RUNS, "/dags/shop/dagRuns?order_by=-execution_date"))).toEqual(newestFirst);
    expect(dates(await call(app, RUNS, "/dags/shop/dagRuns?order_by=execution_date"))).toEqual([...newestFirst].reverse());
    // Pages follow the same order.
    expect(dates(await call(app, RUNS, "/dags/shop/dagRuns?limit=2&offset=1"))).toEqual(newestFirst.slice(1, 3));

    // Keys like 31.12.2024 sort by their windows, not as text.
    expect(dates(await call(app, RUNS, "/dags/euro/dagRuns"))).toEqual([
      ["2025-01-02T00:00:00.000Z", runOf["02.01.2025"]],
      ["2025-01-01T00:00:00.000Z", runOf["01.01.2025"]],
      ["2024-12-31T00:00:00.000Z", runOf["31.12.2024"]],
    ]);

    const refused = await call(app, RUNS, "/dags/shop/dagRuns?order_by=start_date", {}, 400);
    expect(refused.detail).toMatch(/order_by.*-execution_date/);
  });

  it("answers a clear with nothing to clear with an empty list, dry run or not, writing nothing", async () => {
    const before = await rowCounts(h.db);
    // Airflow's defaults: a dry run of the failed task instances; nothing failed.
    expect(await call(app, CLEAR, "/dags/shop/clearTaskInstances", post({}))).toEqual({ task_instances: [] });
    expect(await call(app, CLEAR, "/dags/shop/clearTaskInstances", post({ dry_run: false }))).toEqual({ task_instances: [] });
    expect(
      await call(app, CLEAR, "/dags/shop/clearTaskInstances", post({ task_ids: ["shop/day"], dag_run_id: runOf["2025-01-07"] })),
    ).toEqual({ task_instances: [] });
    expect(await rowCounts(h.db)).toEqual(before);
  });

  it("says what to do in REST terms when a triggered run would read upstream partitions that are not there", async () => {
    const refused = await call(app, TRIGGER, "/dags/report/dagRuns", post({ conf: { partition_key: "2025-01-08" } }), 400);
    expect(refused.detail).toContain('"ingest/raw"');
    expect(refused.detail).not.toMatch(/--[a-z]/);
    expect(refused.detail).toContain("POST /api/v1/dags/ingest/dagRuns");
  });
});

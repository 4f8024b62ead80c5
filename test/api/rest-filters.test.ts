import type { Hono } from "hono";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { call, restApp, rowCounts, type Json } from "./rest-client.js";

// The list filters of GET …/dagRuns (in SQL) and GET …/taskInstances (one run's steps), and `fields`, against real
// runs; every response checked against Airflow's spec.

const DEFS = `
import { asset, daily, staticPartitions } from "tributary";
const days = daily({ start: "2025-01-06" });
export const raw = asset({ key: "shop/raw", partitions: days, pool: "warehouse", queue: "heavy" }, async (ctx) => {
  if (ctx.partition.key === "2025-01-09") throw new Error("no data");
  return { n: 1 };
});
export const total = asset({ key: "shop/total", partitions: days, deps: { raw } }, async (ctx, { raw }) => raw.n + 1);
export const region = asset({ key: "geo/region", partitions: staticPartitions(["eu", "us"]) }, async (ctx) => ctx.partition.key);
`;
const RUNS: [string, string] = ["/dags/{dag_id}/dagRuns", "get"];
const TIS: [string, string] = ["/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances", "get"];
const DAGS: [string, string] = ["/dags", "get"];

describePostgres("REST list filters and fields", () => {
  let h: Harness;
  let app: Hono;
  /** shop: A (the 7th, succeeds), then B (the 8th and 9th; raw fails on the 9th). */
  let a = "";
  let b = "";
  let times: Record<string, { started: string; ended: string }> = {};

  beforeAll(async () => {
    h = await Harness.create({ files: { "geo.ts": DEFS } });
    app = restApp(h);
    a = await h.launch(["shop/raw", "shop/total"], { partition: "2025-01-07" });
    expect((await h.waitForRun(a)).status).toBe("success");
    b = await h.launch(["shop/raw", "shop/total"], { from: "2025-01-08", to: "2025-01-09" });
    expect((await h.waitForRun(b)).status).toBe("failed");
    await h.waitForRun(await h.launch(["geo/region"], { partition: "eu" }));
    const rows = (await sql<{ id: string; started_at: Date; ended_at: Date }>`select id, started_at, ended_at from runs`.execute(h.db))
      .rows;
    times = Object.fromEntries(rows.map((r) => [r.id, { started: r.started_at.toISOString(), ended: r.ended_at.toISOString() }]));
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  const ids = async (query: string, dag = "shop") => {
    const body = await call(app, RUNS, `/dags/${dag}/dagRuns?${query}`);
    return { ids: (body.dag_runs as Json[]).map((r) => r.dag_run_id as string), total: body.total_entries as number };
  };
  const bad = async (path: string, op: [string, string], detail: RegExp) =>
    expect((await call(app, op, path, {}, 400)).detail).toMatch(detail);

  it("filters DAG runs by logical date (the first partition's window), state, start, end and update times", async () => {
    expect(await ids("")).toEqual({ ids: [b, a], total: 2 });
    expect(await ids("execution_date_gte=2025-01-08T00:00:00Z")).toEqual({ ids: [b], total: 1 });
    expect(await ids("execution_date_lte=2025-01-07T23:00:00Z")).toEqual({ ids: [a], total: 1 });
    expect(await ids("execution_date_gte=2025-01-07T00:00:01Z&execution_date_lte=2025-01-08T00:00:00Z")).toEqual({ ids: [b], total: 1 });
    expect(await ids("execution_date_gte=2025-01-10T00:00:00Z&execution_date_lte=2025-02-10T00:00:00Z")).toEqual({ ids: [], total: 0 });
    // Airflow's DagState names; failed also covers canceled runs; repeated = OR.
    expect(await ids("state=failed")).toEqual({ ids: [b], total: 1 });
    expect(await ids("state=success&state=failed&limit=1")).toEqual({ ids: [b], total: 2 });
    expect(await ids("state=queued")).toEqual({ ids: [], total: 0 });
    expect(await ids(`start_date_lte=${times[a]!.started}`)).toEqual({ ids: [a], total: 1 });
    expect(await ids(`start_date_gte=${times[b]!.started}`)).toEqual({ ids: [b], total: 1 });
    expect(await ids(`end_date_gte=${times[a]!.ended}&end_date_lte=${times[a]!.ended}`)).toEqual({ ids: [a], total: 1 });
    expect(await ids("updated_at_lte=2000-01-01T00:00:00Z")).toEqual({ ids: [], total: 0 });
    expect((await ids("updated_at_gte=2000-01-01T00:00:00%2B02:00")).total).toBe(2);
    // Without time partitions the logical date is the run's creation time.
    expect((await ids("execution_date_lte=2000-01-01T00:00:00Z", "geo")).total).toBe(0);
    expect((await ids(`execution_date_lte=${new Date(Date.now() + 3_600_000).toISOString()}`, "geo")).total).toBe(1);
  });

  it("returns only the requested fields of DAGs and DAG runs", async () => {
    const runs = await call(app, RUNS, "/dags/shop/dagRuns?fields=dag_run_id&fields=state");
    expect(runs).toEqual({
      dag_runs: [
        { dag_run_id: b, state: "failed" },
        { dag_run_id: a, state: "success" },
      ],
      total_entries: 2,
    });
    expect((await call(app, DAGS, "/dags?fields=dag_id,is_paused")).dags).toEqual([
      { dag_id: "geo", is_paused: false },
      { dag_id: "shop", is_paused: false },
    ]);
    expect(await call(app, ["/dags/{dag_id}", "get"], "/dags/geo?fields=dag_id")).toEqual({ dag_id: "geo" });
    // Every listed field: the whole document.
    const full = await call(app, DAGS, "/dags?limit=1");
    const all = Object.keys(full.dags[0]).join(",");
    expect(await call(app, DAGS, `/dags?limit=1&fields=${all}`)).toEqual(full);
    const fullRuns = await call(app, RUNS, "/dags/shop/dagRuns");
    expect(await call(app, RUNS, `/dags/shop/dagRuns?fields=${Object.keys(fullRuns.dag_runs[0]).join(",")}`)).toEqual(fullRuns);
  });

  it("filters one run's task instances by date, duration, state, pool, queue and executor, keeping map indices", async () => {
    const tis = async (query: string) => {
      const body = await call(app, TIS, `/dags/shop/dagRuns/${b}/taskInstances?${query}`);
      if (!query.includes("limit=")) expect(body.total_entries).toBe(body.task_instances.length);
      return (body.task_instances as Json[]).map((t) => `${t.task_id}[${t.map_index}] ${t.state}`);
    };
    expect(await tis("")).toEqual(["shop/raw[0] success", "shop/raw[1] failed", "shop/total[0] success", "shop/total[1] upstream_failed"]);
    const [first] = (await call(app, TIS, `/dags/shop/dagRuns/${b}/taskInstances`)).task_instances as Json[];
    expect(first).toMatchObject({ pool: "warehouse", queue: "heavy", executor: "local", pool_slots: 1 });
    expect(await tis("state=failed&state=upstream_failed")).toEqual(["shop/raw[1] failed", "shop/total[1] upstream_failed"]);
    expect(await tis("state=none&state=restarting")).toEqual([]);
    expect(await tis("execution_date_gte=2025-01-09T00:00:00Z")).toEqual(["shop/raw[1] failed", "shop/total[1] upstream_failed"]);
    expect(await tis("pool=warehouse")).toEqual(["shop/raw[0] success", "shop/raw[1] failed"]);
    // A step without its own queue is in Airflow's "default" one.
    expect(await tis("queue=default")).toEqual(["shop/total[0] success", "shop/total[1] upstream_failed"]);
    expect(await tis("queue=heavy&queue=default&executor=local&limit=1&offset=1")).toEqual(["shop/raw[1] failed"]);
    expect((await call(app, TIS, `/dags/shop/dagRuns/${b}/taskInstances?queue=heavy&limit=1`)).total_entries).toBe(2);
    expect(await tis("executor=bullmq")).toEqual([]);
    // The step that never ran has no start and no duration: date and duration filters leave it out.
    expect(await tis("duration_gte=0")).toEqual(["shop/raw[0] success", "shop/raw[1] failed", "shop/total[0] success"]);
    expect(await tis("duration_lte=3600&start_date_gte=2000-01-01T00:00:00Z")).toHaveLength(3);
    expect(await tis("end_date_lte=2000-01-01T00:00:00Z")).toEqual([]);
    expect(await tis("updated_at_gte=2000-01-01T00:00:00Z")).toHaveLength(4);
  });

  it("refuses bad filter values with 400 naming the parameter, writing nothing", async () => {
    const before = await rowCounts(h.db);
    const tiPath = `/dags/shop/dagRuns/${b}/taskInstances`;
    await bad("/dags/shop/dagRuns?execution_date_gte=yesterday", RUNS, /query\.execution_date_gte: must be an ISO 8601 date-time/);
    await bad(
      "/dags/shop/dagRuns?start_date_gte=2025-01-02T00:00:00Z&start_date_lte=2025-01-01T00:00:00Z",
      RUNS,
      /query\.start_date_gte: .* is after start_date_lte/,
    );
    await bad("/dags/shop/dagRuns?state=canceled", RUNS, /query\.state: "canceled" is not a state; use queued, running, success, failed/);
    await bad("/dags/shop/dagRuns?state=", RUNS, /query\.state: an empty value/);
    await bad(
      "/dags/shop/dagRuns?fields=dag_run_id&fields=x'%3B drop table runs",
      RUNS,
      /query\.fields: unknown field\(s\) "x'; drop table runs"; the fields are dag_id/,
    );
    await bad("/dags?fields=", DAGS, /query\.fields: unknown field\(s\) ""/);
    await bad(`${tiPath}?duration_lte=abc`, TIS, /query\.duration_lte: "abc" must be a number of seconds/);
    await bad(`${tiPath}?state=pending`, TIS, /query\.state: "pending" is not a state; use none, scheduled/);
    await bad(`${tiPath}?updated_at_lte=2025-01-01`, TIS, /query\.updated_at_lte: must be an ISO 8601/);
    await bad(`${tiPath}?pool=`, TIS, /query\.pool: an empty value/);
    await bad("/dags/shop/dagRuns?order_by=state", RUNS, /query\.order_by: "state" is not supported/);
    expect(await rowCounts(h.db)).toEqual(before);
  });
});

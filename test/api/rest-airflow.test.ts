import { sql } from "kysely";
import type { Hono } from "hono";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { PgPauseStore } from "../../src/storage/index.js";
import { call as callApi, post, restApp, validatorOf, type Json } from "./rest-client.js";

// The Airflow-compatible REST API against real runs (Postgres, the in-process executor, real log files),
// every response checked against Airflow's own OpenAPI document (test/api/rest-airflow-v1.json).

const DEFS = `
import { asset, daily, staticPartitions } from "tributary";
const days = daily({ start: "2025-01-06" });
export const raw = asset({ key: "shop/raw", partitions: days, pool: "warehouse", owner: "team:data" }, async (ctx) => {
  ctx.log.info("loading " + ctx.partition.key);
  return { n: 1 };
});
export const total = asset({ key: "shop/total", partitions: days, deps: { raw } }, async (ctx, { raw }) => raw.n + 1);
export const summary = asset({ key: "shop/summary" }, async () => "ok");
export const region = asset({ key: "geo/region", partitions: staticPartitions(["eu", "us"]) }, async (ctx) => ctx.partition.key);
`;
const INJECTION = "x'; drop table runs; --";

const RUN = "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}";

describePostgres("REST /api/v1 (Airflow stable API subset)", () => {
  let h: Harness;
  let app: Hono;
  let shopDaily = "";
  let shopOnce = "";

  beforeAll(async () => {
    h = await Harness.create({ files: { "shop.ts": DEFS } });
    app = restApp(h);
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  const call = (op: [string, string], path: string, init: RequestInit = {}, status = 200): Promise<Json> =>
    callApi(app, op, path, init, status);
  const counts = async () =>
    (
      await sql<{
        runs: number;
        steps: number;
      }>`select (select count(*)::int from runs) as runs, (select count(*)::int from steps) as steps`.execute(h.db)
    ).rows[0];
  const enc = encodeURIComponent;

  it("lists the asset jobs as DAGs: one per group and partitions definition", async () => {
    const all = await call(["/dags", "get"], "/dags");
    const ids = all.dags.map((d: Json) => d.dag_id) as string[];
    expect(all.total_entries).toBe(3);
    expect(ids[0]).toBe("geo");
    // The shop group mixes daily and unpartitioned assets: two jobs, told apart by the partitions hash.
    expect(ids.slice(1)).toEqual([
      expect.stringMatching(/^shop\.daily-[0-9a-f]{8}$/),
      expect.stringMatching(/^shop\.unpartitioned-[0-9a-f]{8}$/),
    ]);
    [shopDaily, shopOnce] = ids.slice(1) as [string, string];
    expect(all.dags[1].description).toContain("shop/raw");
    const dag = await call(["/dags/{dag_id}", "get"], `/dags/${shopDaily}`);
    expect(dag).toMatchObject({
      dag_id: shopDaily,
      is_paused: false,
      owners: ["team:data"],
      tags: [{ name: "shop" }],
      timetable_description: expect.stringContaining("daily"),
    });
    expect(dag.description).toContain("shop/raw, shop/total");

    const page = await call(["/dags", "get"], "/dags?limit=1&offset=1&order_by=-dag_id");
    expect(page).toMatchObject({ total_entries: 3, dags: [{ dag_id: ids[1] }] });
    expect((await call(["/dags", "get"], "/dags?tags=geo")).dags.map((d: Json) => d.dag_id)).toEqual(["geo"]);
    expect((await call(["/dags", "get"], "/dags?dag_id_pattern=SHOP")).total_entries).toBe(2);
    // Airflow's maximum page size cuts a huge limit instead of failing.
    expect((await call(["/dags", "get"], "/dags?limit=100000000")).dags).toHaveLength(3);
  });

  it("triggers a DAG run for the partition of a logical date and reports its steps, outputs, logs and pools", async () => {
    const run = await call(
      ["/dags/{dag_id}/dagRuns", "post"],
      `/dags/${shopDaily}/dagRuns`,
      post({ logical_date: "2025-01-07T12:00:00Z" }),
    );
    expect(run).toMatchObject({
      dag_id: shopDaily,
      logical_date: "2025-01-07T00:00:00.000Z",
      data_interval_start: "2025-01-07T00:00:00.000Z",
      data_interval_end: "2025-01-08T00:00:00.000Z",
      run_type: "manual",
      external_trigger: true,
    });
    const runId = run.dag_run_id as string;
    expect((await h.waitForRun(runId)).status).toBe("success");

    const runs = await call(["/dags/{dag_id}/dagRuns", "get"], `/dags/${shopDaily}/dagRuns`);
    expect(runs).toMatchObject({
      total_entries: 1,
      dag_runs: [{ dag_run_id: runId, state: "success", logical_date: "2025-01-07T00:00:00.000Z" }],
    });

    const tis = await call(
      ["/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances", "get"],
      `/dags/${shopDaily}/dagRuns/${runId}/taskInstances`,
    );
    expect(tis.total_entries).toBe(2);
    expect(tis.task_instances.map((t: Json) => [t.task_id, t.state, t.map_index, t.try_number, t.rendered_map_index])).toEqual([
      ["shop/raw", "success", -1, 1, "2025-01-07"],
      ["shop/total", "success", -1, 1, "2025-01-07"],
    ]);
    expect(tis.task_instances[0]).toMatchObject({ pool: "warehouse", execution_date: "2025-01-07T00:00:00.000Z" });

    const xcom = await call(
      [`${RUN}/xcomEntries`, "get"],
      `/dags/${shopDaily}/dagRuns/${runId}/taskInstances/${enc("shop/raw")}/xcomEntries`,
    );
    expect(xcom).toMatchObject({ total_entries: 1, xcom_entries: [{ key: "return_value", task_id: "shop/raw", map_index: -1 }] });
    expect(
      (
        await call(
          [`${RUN}/xcomEntries`, "get"],
          `/dags/${shopDaily}/dagRuns/${runId}/taskInstances/${enc("shop/raw")}/xcomEntries?xcom_key=other`,
        )
      ).total_entries,
    ).toBe(0);

    const logPath = `/dags/${shopDaily}/dagRuns/${runId}/taskInstances/${enc("shop/raw")}/logs/1`;
    const log = await call([`${RUN}/logs/{task_try_number}`, "get"], logPath);
    expect(log.content).toContain("loading 2025-01-07");
    const rest = await call([`${RUN}/logs/{task_try_number}`, "get"], `${logPath}?token=${log.continuation_token}`);
    expect(rest).toEqual({ content: "", continuation_token: log.continuation_token });
    const text = await app.request(`/api/v1${logPath}`, { headers: { accept: "text/plain" } });
    expect(text.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await text.text()).toContain("loading 2025-01-07");

    const pools = await call(["/pools", "get"], "/pools");
    expect(pools.pools.map((p: Json) => p.name)).toEqual(expect.arrayContaining(["default_pool", "warehouse"]));
    expect(pools.pools.find((p: Json) => p.name === "warehouse")).toMatchObject({ occupied_slots: 0, open_slots: expect.any(Number) });
    expect((await call(["/pools", "get"], "/pools?limit=1&offset=1")).pools).toHaveLength(1);

    // Clear and rerun the raw step and what reads it: one rerun run, listed as task instance references.
    const cleared = await call(
      ["/dags/{dag_id}/clearTaskInstances", "post"],
      `/dags/${shopDaily}/clearTaskInstances`,
      post({ dry_run: false, task_ids: ["shop/raw"], dag_run_id: runId, only_failed: false, include_downstream: true }),
    );
    expect(cleared.task_instances.map((t: Json) => [t.dag_id, t.task_id, t.execution_date])).toEqual([
      [shopDaily, "shop/raw", "2025-01-07T00:00:00.000Z"],
      [shopDaily, "shop/total", "2025-01-07T00:00:00.000Z"],
    ]);
    const rerun = await h.waitForRun(cleared.task_instances[0].dag_run_id);
    expect(rerun).toMatchObject({ status: "success", origin: "rerun" });
    expect((await call(["/dags/{dag_id}/dagRuns", "get"], `/dags/${shopDaily}/dagRuns?limit=1`)).dag_runs[0].dag_run_id).toBe(rerun.id);
  });

  it("runs a static partition named in conf and an unpartitioned job without a date", async () => {
    const geo = await call(["/dags/{dag_id}/dagRuns", "post"], "/dags/geo/dagRuns", post({ conf: { partition_key: "eu" } }));
    expect(geo).toMatchObject({ dag_id: "geo", data_interval_start: null, data_interval_end: null });
    expect((await h.waitForRun(geo.dag_run_id)).steps.map((s) => s.partitionKey)).toEqual(["eu"]);
    const once = await call(["/dags/{dag_id}/dagRuns", "post"], `/dags/${shopOnce}/dagRuns`, post({}));
    expect((await h.waitForRun(once.dag_run_id)).steps.map((s) => s.assetKey)).toEqual(["shop/summary"]);
  });

  it("answers unknown ids with 404 problem documents that name them, safely echoed", async () => {
    const before = await counts();
    const dagRuns: [string, string] = ["/dags/{dag_id}/dagRuns", "get"];
    const missing = await call(["/dags/{dag_id}", "get"], `/dags/${enc(INJECTION)}`, {}, 404);
    expect(missing).toMatchObject({ status: 404, title: "DAG not found", type: expect.stringContaining("NotFound") });
    expect(missing.detail).toContain(JSON.stringify(INJECTION));
    await call(dagRuns, `/dags/nope/dagRuns`, {}, 404);
    const tiPath: [string, string] = ["/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances", "get"];
    expect((await call(tiPath, `/dags/geo/dagRuns/${enc(INJECTION)}/taskInstances`, {}, 404)).detail).toContain(JSON.stringify(INJECTION));
    await call(tiPath, "/dags/geo/dagRuns/00000000-0000-4000-8000-000000000000/taskInstances", {}, 404);
    // A run of another DAG is no run of this one.
    const [{ dag_run_id: shopRun }] = (await call(dagRuns, `/dags/${shopDaily}/dagRuns`)).dag_runs;
    await call(tiPath, `/dags/geo/dagRuns/${shopRun}/taskInstances`, {}, 404);
    const logs: [string, string] = [`${RUN}/logs/{task_try_number}`, "get"];
    const noTask = await call(logs, `/dags/${shopDaily}/dagRuns/${shopRun}/taskInstances/${enc(INJECTION)}/logs/1`, {}, 404);
    expect(noTask.detail).toMatch(/is not a task of DAG.*"shop\/raw", "shop\/total"/);
    expect((await call(logs, `/dags/${shopDaily}/dagRuns/${shopRun}/taskInstances/${enc("shop/raw")}/logs/9`, {}, 404)).detail).toMatch(
      /no try 9/,
    );
    await call(logs, `/dags/${shopDaily}/dagRuns/${shopRun}/taskInstances/${enc("shop/raw")}/logs/1?map_index=3`, {}, 404);
    await call([`${RUN}/xcomEntries`, "get"], `/dags/${shopDaily}/dagRuns/${shopRun}/taskInstances/nope/xcomEntries`, {}, 404);
    const route = await app.request("/api/v1/connections");
    expect(route.status).toBe(404);
    expect(await route.json()).toMatchObject({ status: 404, detail: expect.stringContaining("/api/v1/connections") });
    expect(await counts()).toEqual(before);
  });

  it("refuses bad bodies, content types and parameters with 400 naming the field, writing nothing", async () => {
    const before = await counts();
    const trigger: [string, string] = ["/dags/{dag_id}/dagRuns", "post"];
    const path = `/dags/${shopDaily}/dagRuns`;
    const bad = async (init: RequestInit, detail: RegExp, p = path, op = trigger) =>
      expect((await call(op, p, init, 400)).detail).toMatch(detail);
    await bad(post({ logical_date: "2025-01-07T00:00:00Z" }, "text/plain"), /Content-Type "text\/plain" is not supported/);
    await bad({ method: "POST", body: new Blob(["{}"]) }, /Content-Type "\(none\)"/);
    await bad(post("{not json"), /body: not valid JSON/);
    await bad(post("[1]"), /body: must be a JSON object/);
    await bad(post({ logical_date: "yesterday" }), /body\.logical_date: must be an ISO 8601 date-time/);
    await bad(post({ logical_date: "2020-01-01T00:00:00Z" }), /body\.logical_date: 2020-01-01T00:00:00.000Z lies in no existing partition/);
    await bad(post({ state: "success" }), /Unrecognized key.*state/);
    await bad(post({ dag_run_id: "mine" }), /body\.dag_run_id: is assigned by Tributary/);
    await bad(post({ conf: { partition_key: INJECTION } }), /x'; drop table runs; --/);
    await bad(
      post({ conf: { partition_key: "2025-01-07" }, logical_date: "2025-01-07T00:00:00Z" }),
      /either conf.partition_key or logical_date/,
    );
    await bad(post({ note: "x".repeat(70 * 1024) }), /body: more than the 65536 bytes/);
    await bad(post({}), /DAG "geo" is partitioned.*name the partition/, "/dags/geo/dagRuns");

    const clear: [string, string] = ["/dags/{dag_id}/clearTaskInstances", "post"];
    const clearPath = `/dags/${shopDaily}/clearTaskInstances`;
    await bad(post({ task_ids: ["shop/raw"], dry_run: "no" }), /body\.dry_run: /, clearPath, clear);
    await bad(
      post({ dry_run: false, include_upstream: true }),
      /body\.include_upstream: include_upstream .* is not supported/,
      clearPath,
      clear,
    );
    await bad(post({ dry_run: false, task_ids: [] }), /body\.task_ids/, clearPath, clear);
    await bad(
      post({ dry_run: false, start_date: "2019-01-01T00:00:00Z" }),
      /body\.start_date: .* lies in no existing partition/,
      clearPath,
      clear,
    );
    await bad(post({ dry_run: false, only_failed: false, task_ids: ["shop/raw"] }), /PARTITION_SELECTION_REQUIRED/, clearPath, clear);
    expect((await call(clear, clearPath, post({ dry_run: false, task_ids: [INJECTION] }), 404)).detail).toContain(
      JSON.stringify(INJECTION),
    );

    const list: [string, string] = ["/dags/{dag_id}/dagRuns", "get"];
    await bad({}, /query\.limit: must be a whole number/, `${path}?limit=abc`, list);
    await bad({}, /query\.limit: must be at least 1/, `${path}?limit=0`, list);
    await bad({}, /query\.offset: must be a whole number/, `${path}?offset=-1`, list);
    await bad({}, /query\.order_by: "state" is not supported/, `${path}?order_by=state`, list);
    await bad({}, /query\.state: "x'; drop table runs; --" is not a state/, `${path}?state=${enc(INJECTION)}`, list);
    const [{ dag_run_id: runId }] = (await call(list, path)).dag_runs;
    const logs: [string, string] = [`${RUN}/logs/{task_try_number}`, "get"];
    const logPath = `/dags/${shopDaily}/dagRuns/${runId}/taskInstances/${enc("shop/raw")}/logs`;
    await bad({}, /path\.task_try_number: must be at least 1/, `${logPath}/0`, logs);
    await bad({}, /query\.token: must be a whole number/, `${logPath}/1?token=${enc(INJECTION)}`, logs);
    await bad({}, /query\.full_content: "yes" must be true or false/, `${logPath}/1?full_content=yes`, logs);
    expect(await counts()).toEqual(before);
  });
  it("shows a run over several partitions as a mapped task: map_index per partition, the key as rendered_map_index", async () => {
    const runId = await h.launch(["shop/raw"], { from: "2025-01-08", to: "2025-01-09" });
    await h.waitForRun(runId);
    const run = (await call(["/dags/{dag_id}/dagRuns", "get"], `/dags/${shopDaily}/dagRuns?limit=1`)).dag_runs[0];
    expect(run).toMatchObject({
      dag_run_id: runId,
      logical_date: "2025-01-08T00:00:00.000Z",
      data_interval_end: "2025-01-10T00:00:00.000Z",
    });
    const tis = await call(
      ["/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances", "get"],
      `/dags/${shopDaily}/dagRuns/${runId}/taskInstances`,
    );
    expect(tis.task_instances.map((t: Json) => [t.map_index, t.rendered_map_index])).toEqual([
      [0, "2025-01-08"],
      [1, "2025-01-09"],
    ]);
    const logs: [string, string] = [`${RUN}/logs/{task_try_number}`, "get"];
    const logPath = `/dags/${shopDaily}/dagRuns/${runId}/taskInstances/${enc("shop/raw")}/logs/1`;
    expect((await call(logs, `${logPath}?map_index=1`)).content).toContain("loading 2025-01-09");
    expect((await call(logs, logPath, {}, 404)).detail).toMatch(/no map_index -1 .*map indices: 0, 1/);
    const xcom = await call(
      [`${RUN}/xcomEntries`, "get"],
      `/dags/${shopDaily}/dagRuns/${runId}/taskInstances/${enc("shop/raw")}/xcomEntries?map_index=0`,
    );
    expect(xcom.xcom_entries).toEqual([expect.objectContaining({ map_index: 0, execution_date: "2025-01-08T00:00:00.000Z" })]);
  });

  it("clears only failed task instances by default: nothing failed, nothing cleared, nothing written", async () => {
    const before = await counts();
    const clear: [string, string] = ["/dags/{dag_id}/clearTaskInstances", "post"];
    expect(await call(clear, `/dags/${shopDaily}/clearTaskInstances`, post({ dry_run: false }))).toEqual({ task_instances: [] });
    // One named task with nothing to clear: still no error, as in Airflow.
    expect(await call(clear, `/dags/${shopDaily}/clearTaskInstances`, post({ dry_run: false, task_ids: ["shop/raw"] }))).toEqual({
      task_instances: [],
    });
    expect(await counts()).toEqual(before);
  });

  it("reports paused DAGs (all their assets paused) and filters by it", async () => {
    await new PgPauseStore(h.db).pause({ group: "geo" }, new Date());
    const paused = await call(["/dags", "get"], "/dags?paused=true");
    expect(paused.dags.map((d: Json) => [d.dag_id, d.is_paused])).toEqual([["geo", true]]);
    expect((await call(["/dags", "get"], "/dags?paused=false")).total_entries).toBe(2);
  });

  it("checks responses for real: the spec validator rejects documents outside Airflow's schema", () => {
    expect(
      validatorOf("/dags/{dag_id}/dagRuns", "get").validateResponse(200, { dag_runs: [{ state: "canceled" }], total_entries: 1 }),
    ).toBeDefined();
    const tis = validatorOf("/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances", "get");
    expect(tis.validateResponse(200, { task_instances: [{ execution_date: "yesterday" }] })).toBeDefined();
    expect(tis.validateResponse(200, { task_instances: [{ state: "pending" }] })).toBeDefined();
    expect(validatorOf("/pools", "get").validateResponse(200, { pools: [{ slots: "8" }] })).toBeDefined();
  });
});

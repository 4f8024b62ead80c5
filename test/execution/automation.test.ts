import { sql } from "kysely";
import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { AutomationTask } from "../../src/reconciler/index.js";
import { PgAutomationStore } from "../../src/storage/index.js";
import { createScratchDatabase, describePostgres } from "../support/pg.js";
import { automationSupport } from "./automation-support.js";
import { Harness } from "./harness.js";

// src (external, daily) → clean (eager) → report (eager, reads the last 2 days of clean)
const defs = (slowMs = 0) => `
import { asset, sourceAsset, daily, dep, eager, onCron, timeWindow } from "tributary";
const days = daily({ start: "2025-03-01" });
export const src = asset({ key: "au/src", partitions: days }, async (ctx) => ctx.partition.key);
export const clean = asset({ key: "au/clean", partitions: days, automation: eager(), deps: { src } }, async (ctx, { src }) => {
  await new Promise((r) => setTimeout(r, ${slowMs}));
  return "clean " + src;
});
export const report = asset({ key: "au/report", partitions: days, automation: eager(), deps: { clean: dep(clean, timeWindow({ startOffset: -1 })) } },
  async (ctx, { clean }) => clean.length);
export const hourlyCron = asset({ key: "au/nightly", automation: onCron("0 3 * * *") }, async () => 1);
`;

describePostgres("automation: the reconciler's automation task", () => {
  let h: Harness | undefined;
  const { task, report, close } = automationSupport(() => h!);
  afterEach(async () => {
    await close();
    await h?.stop();
    h = undefined;
  });

  const stepsOf = async (assetKey: string) =>
    (
      await sql<{ partition_key: string; n: string }>`
        select partition_key, count(*) as n from steps where asset_key = ${assetKey} group by partition_key order by partition_key`.execute(
        h!.db,
      )
    ).rows.map((r) => `${r.partition_key}×${r.n}`);

  it("consumes each event once through the stored cursor: two reconcilers, a restart, no lost or doubled request", async () => {
    h = await Harness.create({ files: { "auto.ts": defs() }, start: false });
    const now = new Date("2025-03-20T12:00:00Z");
    const a = await task("rec-a");
    const b = await task("rec-b");
    // Both start: one holds the lease, the other skips automation.
    const [sa, sb] = await Promise.all([a.tick(now), b.tick(now)]);
    expect([sa, sb].filter(Boolean)).toHaveLength(1);
    const holder = sa ? a : b;
    const other = sa ? b : a;

    // The requests appear within a tick or two of the reports (the first tick after the lease changes hands only
    // reloads its caches): ticks repeat until they do.
    let clock = now.getTime();
    const tickUntil = async (x: AutomationTask, expected: string[]) => {
      for (let i = 0; i < 100 && JSON.stringify(await stepsOf("au/clean")) !== JSON.stringify(expected); i++) {
        await x.tick(new Date((clock += 10)));
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await stepsOf("au/clean")).toEqual(expected);
    };
    for (const day of ["2025-03-10", "2025-03-11", "2025-03-12"]) await report("au/src", day);
    await tickUntil(holder, ["2025-03-10×1", "2025-03-11×1", "2025-03-12×1"]);
    expect(await other.tick(new Date((clock += 10)))).toBeUndefined();

    // The holder dies (no release): after the lease runs out the other takes over from the stored cursor.
    await report("au/src", "2025-03-13");
    clock += 60_000;
    expect(await other.tick(new Date(clock))).toMatchObject({ full: true });
    await tickUntil(other, ["2025-03-10×1", "2025-03-11×1", "2025-03-12×1", "2025-03-13×1"]);
    // That one is restarted (a new process, a new id, fresh memory): once its old lease runs out,
    // the new process continues from the stored cursor; nothing old is replayed.
    const restarted = await task("rec-c");
    clock += 60_000;
    expect(await restarted.tick(new Date(clock))).toMatchObject({ events: 0, runsCreated: 0 });
    expect(await stepsOf("au/clean")).toEqual(["2025-03-10×1", "2025-03-11×1", "2025-03-12×1", "2025-03-13×1"]);
    const later = new Date(clock);

    // Concurrent ticks with events arriving in between: still exactly one request per event.
    const days = Array.from({ length: 12 }, (_, i) => `2025-03-${String(i + 1).padStart(2, "0")}`).filter((d) => d < "2025-03-10");
    const reporting = (async () => {
      for (const d of days) await report("au/src", d);
    })();
    let t = later.getTime() + 2_000;
    const fourth = await task("rec-d");
    const tickers = [restarted, fourth].map(async (x) => {
      for (let i = 0; i < 15; i++) await x.tick(new Date((t += 10)));
    });
    await Promise.all([reporting, ...tickers]);
    clock = t;
    await tickUntil(
      restarted,
      [...days, "2025-03-10", "2025-03-11", "2025-03-12", "2025-03-13"].map((d) => `${d}×1`),
    );
    await fourth.tick(new Date((clock += 10)));
    await restarted.tick(new Date((clock += 10)));
    expect(await stepsOf("au/clean")).toEqual([...days, "2025-03-10", "2025-03-11", "2025-03-12", "2025-03-13"].map((d) => `${d}×1`));
    const origins = await sql<{ origin: string; n: string }>`select origin, count(*) as n from runs group by origin`.execute(h.db);
    // One per event, and the nightly cron's first run.
    expect(origins.rows.map((r) => [r.origin, Number(r.n)])).toEqual([["automation", days.length + 4 + 1]]);
  });

  it("records why, only when the decision changes, and declines with the upstream that is missing", async () => {
    h = await Harness.create({ files: { "auto.ts": defs() }, start: false });
    const a = await task("rec-a");
    const now = new Date("2025-03-20T12:00:00Z");
    await a.tick(now);
    await report("au/src", "2025-03-15");
    const store = new PgAutomationStore(h.db);
    const requested = async () =>
      (await store.listEvaluations({ assetKey: "au/clean", limit: 10 })).filter((r) => r.decision === "requested");
    // The task ticks until it has seen the event, then once more (report is judged after clean).
    let clock = now.getTime();
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && (await requested()).length === 0;) {
      await a.tick(new Date((clock += 1_000)));
      if ((await requested()).length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    await a.tick(new Date((clock += 1_000)));
    const clean = await requested();
    expect(clean[0]).toMatchObject({
      decision: "requested",
      partitions: JSON.stringify([["2025-03-15", "2025-03-15"]]),
      condition: "eager()",
    });
    expect(clean[0]!.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(clean[0]!.reasons)).toContain("upstream_updated");
    const reportRecords = await store.listEvaluations({ assetKey: "au/report", limit: 10 });
    // report@2025-03-19 is missing after the horizon, but clean is not there: declined, naming clean.
    expect(reportRecords[0]!.decision).toBe("declined");
    expect(JSON.stringify(reportRecords[0]!.reasons)).toContain('waiting for upstream \\"au/clean\\"');
    const before = (await store.listEvaluations({ limit: 1000 })).length;
    await a.tick(new Date((clock += 1_000)));
    expect((await store.listEvaluations({ limit: 1000 })).length).toBe(before);
  });

  it("end to end: an upstream update while the downstream runs is not lost; eager chains follow; cron fires on the clock", async () => {
    h = await Harness.create({
      files: { "auto.ts": defs(600) },
      tasks: (s) => [
        new AutomationTask({
          store: new PgAutomationStore(s.handle.db),
          runs: s.runs,
          graphs: s.graphs,
          definitions: s.definitions,
          owner: `node-${s.index}`,
          minIntervalMs: 0,
        }),
      ],
      nodes: 2,
    });
    // Pin the clock to 2025-03-12 04:00 UTC (after the 03:00 cron tick).
    h.clockShiftMs = Date.parse("2025-03-12T04:00:00Z") - Date.now();
    await h.until(async () => (await stepsOf("au/nightly")).length === 1 || undefined, 15_000, "the nightly cron run");

    await h.waitForRun(await h.launch(["au/src"], { partition: "2025-03-10" }));
    await h.until(async () => (await stepsOf("au/clean")).includes("2025-03-10×1") || undefined, 15_000, "clean to be requested");
    // clean@2025-03-10 is running (600 ms): src is updated meanwhile.
    await h.until(async () => {
      const r = await sql<{ state: string }>`select state from steps where asset_key = 'au/clean' and partition_key = '2025-03-10'`.execute(
        h!.db,
      );
      return r.rows[0]?.state === "running" || undefined;
    });
    await report("au/src", "2025-03-10");
    // The running try read the old src: clean runs once more, after it.
    await h.until(async () => (await stepsOf("au/clean")).includes("2025-03-10×2") || undefined, 20_000, "clean to run again");
    await h.until(
      async () => {
        const r = await sql<{
          d: string;
        }>`select asset_key || '@' || partition_key || ':' || state as d from steps where state not in ('success')`.execute(h!.db);
        return r.rows.length === 0 || undefined;
      },
      20_000,
      "everything to settle",
    );
    // report@2025-03-11 reads clean 10 and 11: 11 is missing, so report stays declined; report@2025-03-10 reads 09 (missing) too.
    expect(await stepsOf("au/report")).toEqual([]);
    expect(await stepsOf("au/clean")).toEqual(["2025-03-10×2"]);
    // Settled: no run keeps being created.
    const runs = Number((await sql<{ n: string }>`select count(*) as n from runs`.execute(h.db)).rows[0]!.n);
    await new Promise((r) => setTimeout(r, 800));
    expect(Number((await sql<{ n: string }>`select count(*) as n from runs`.execute(h.db)).rows[0]!.n)).toBe(runs);
    expect(h.errors()).toEqual([]);
  });

  it("a transaction left open in another database of the cluster does not hold automation back", async () => {
    h = await Harness.create({
      files: { "auto.ts": defs() },
      tasks: (s) => [
        new AutomationTask({
          store: new PgAutomationStore(s.handle.db),
          runs: s.runs,
          graphs: s.graphs,
          definitions: s.definitions,
          owner: `node-${s.index}`,
          minIntervalMs: 0,
        }),
      ],
      nodes: 2,
    });
    // An analyst's idle psql on another database: begun, an xid taken, left open.
    const other = await createScratchDatabase();
    const idle = new pg.Client({ connectionString: other.url });
    await idle.connect();
    try {
      await idle.query("begin");
      const xid = (await idle.query<{ xid: string }>("select pg_current_xact_id()::text as xid")).rows[0]!.xid;
      const held = await sql<{ held: boolean }>`select pg_snapshot_xmin(pg_current_snapshot()) <= ${xid}::xid8 as held`.execute(h.db);
      expect(held.rows[0]!.held).toBe(true);

      const reported = Date.now();
      await report("au/src", "2025-03-10");
      await h.until(async () => (await stepsOf("au/clean")).includes("2025-03-10×1") || undefined, 5_000, "clean to be requested");
      expect(Date.now() - reported).toBeLessThan(5_000);
      await h.until(
        async () => {
          const r = await sql<{
            state: string;
          }>`select state from steps where asset_key = 'au/clean' and partition_key = '2025-03-10'`.execute(h!.db);
          return r.rows[0]?.state === "success" || undefined;
        },
        20_000,
        "clean to materialise",
      );
      // The open transaction ends: nothing is requested twice.
      await idle.query("commit");
      await report("au/src", "2025-03-11");
      await h.until(async () => (await stepsOf("au/clean")).includes("2025-03-11×1") || undefined, 5_000, "the next request");
      expect(await stepsOf("au/clean")).toEqual(["2025-03-10×1", "2025-03-11×1"]);
    } finally {
      await idle.end().catch(() => undefined);
      await other.drop();
    }
  });

  it("new dynamic partition keys are visible to automation at once: a new customer's partitions materialise", async () => {
    h = await Harness.create({
      files: {
        "customers.ts": `
import { asset, dynamicPartitions, onMissing } from "tributary";
export const profile = asset({ key: "dy/profile", partitions: dynamicPartitions("customers"), automation: onMissing() }, async (ctx) => ctx.partition.key);
`,
      },
      start: false,
    });
    const a = await task("rec-a");
    let clock = Date.parse("2025-03-20T12:00:00Z");
    await a.tick(new Date(clock));
    expect(await stepsOf("dy/profile")).toEqual([]);
    await h.definitions.addDynamicPartitions("customers", ["customer-1", "customer-2"]);
    await a.tick(new Date((clock += 1_000)));
    expect(await stepsOf("dy/profile")).toEqual(["customer-1×1", "customer-2×1"]);
    await h.definitions.addDynamicPartitions("customers", ["customer-3"]);
    await a.tick(new Date((clock += 1_000)));
    expect(await stepsOf("dy/profile")).toEqual(["customer-1×1", "customer-2×1", "customer-3×1"]);
  });
});

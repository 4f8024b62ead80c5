import { mkdir, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchBackfill, requestErasure, restoreHistory, retryErasure, erasureReport, type ErasureServices } from "../../src/api/index.js";
import { TributaryError } from "../../src/errors/index.js";
import { BackfillTask, ErasureTask, HistoryArchiveTask } from "../../src/reconciler/index.js";
import type { EraseContext, EraseHook, EraseTarget } from "../../src/sdk/index.js";
import {
  decodeArchive,
  PgBackfillStore,
  PgErasureStore,
  PgHistoryArchiveStore,
  PgLineageStore,
  PgOutputDeletionStore,
} from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// Erasure requests on Postgres: a request erases the source's partitions and everything derived from them (outputs,
// their objects, the tries' logs), calls the assets' erase hooks once, marks the partitions erased and re-materialises
// them through a backfill; the proof report says what went when and what replaced it. Refusals record nothing; a run
// writing an impacted partition makes the request wait; a hook that throws fails the request until it is retried;
// two reconcilers never work on one request at once.

const defs = (flag: string) => `
import { existsSync } from "node:fs";
import { allPartitions, asset, dep, staticPartitions } from "tributary";
const customersSpace = staticPartitions(["c1", "c2", "c3", "c4"]);
export const customers = asset({ key: "er/customers", partitions: customersSpace, metadata: { pii: ["email"] },
  erase: async () => undefined },
  async (ctx) => ({ customer: ctx.partition.key, email: ctx.partition.key + "@example.com" }));
export const orders = asset({ key: "er/orders", partitions: customersSpace, deps: { customers }, erase: async () => undefined },
  async (ctx, { customers }) => ({ customer: customers.customer, orders: 3 }));
export const summary = asset({ key: "er/summary", deps: { customers: dep(customers, allPartitions()) } },
  async (_ctx, { customers }) => ({ customers: customers.length }));
export const slow = asset({ key: "er/slow", partitions: customersSpace, deps: { customers } }, async () => {
  while (!existsSync(${JSON.stringify(flag)})) await new Promise((resolve) => setTimeout(resolve, 20));
  return 1;
});
`;

describePostgres("erasure requests", () => {
  let h: Harness;
  let flag: string;
  let services: ErasureServices;
  const calls: { assetKey: string; partitions: readonly string[]; requestId: string }[] = [];
  let failNext: string | undefined;
  const hook: EraseHook = (ctx: EraseContext, target: EraseTarget) => {
    calls.push({ assetKey: ctx.assetKey, partitions: target.partitions, requestId: ctx.requestId });
    ctx.log(`removing ${target.partitions.join(",")} of ${ctx.assetKey}`);
    if (failNext === ctx.assetKey) {
      failNext = undefined;
      throw new Error("the warehouse refused the delete");
    }
  };
  const task = (owner: string) =>
    new ErasureTask({
      owner,
      archives: new PgHistoryArchiveStore(h.db),
      store: new PgErasureStore(h.db),
      deletions: new PgOutputDeletionStore(h.db),
      outputStore: h.outputStore,
      logsDir: h.logsDir,
      graphs: h.graphs,
      lineage: new PgLineageStore(h.db),
      definitions: h.definitions,
      backfills: {
        launch: async (r) =>
          (
            await launchBackfill(
              { graphs: h.graphs, runs: h.runs, definitions: h.definitions, backfills: new PgBackfillStore(h.db) },
              { assetKeys: r.assetKeys, assetPartitions: r.assetPartitions, maxPartitionsPerRun: 100, maxConcurrentRuns: 2 },
              new Date(),
            )
          ).id,
        status: async (id) => (await new PgBackfillStore(h.db).get(id))?.status,
      },
      importHook: async (asset) => (asset.erase ? hook : undefined),
    });
  const requests = async () => (await sql<{ n: number }>`select count(*)::int as n from erasure_requests`.execute(h.db)).rows[0]!.n;
  const outputsOf = async (assetKey: string, partitionKey: string) =>
    (
      await sql<{
        n: number;
      }>`select count(*)::int as n from outputs where asset_key = ${assetKey} and partition_key = ${partitionKey}`.execute(h.db)
    ).rows[0]!.n;
  const statusOf = async (assetKey: string, partitionKey: string) =>
    (
      await sql<{
        status: string;
      }>`select status from partition_status where asset_key = ${assetKey} and partition_key = ${partitionKey}`.execute(h.db)
    ).rows[0]?.status;
  /** Drives the request with a task until it is in one of `states`. */
  const driveUntil = async (t: ErasureTask, id: string, states: readonly string[], timeoutMs = 60_000) =>
    h.until(
      async () => {
        await t.work();
        const r = await services.erasures.get(id);
        return r && states.includes(r.state) ? r : undefined;
      },
      timeoutMs,
      `erasure ${id} to reach ${states.join("/")}`,
    );
  const expectRefused = async (attempt: () => Promise<unknown>, code: string, ...fragments: string[]) => {
    const before = await requests();
    const error = await attempt().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, `expected ${code}`).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).code, (error as Error).message).toBe(code);
    for (const f of fragments) expect((error as Error).message).toContain(f);
    expect(await requests()).toBe(before);
  };

  beforeAll(async () => {
    h = await Harness.create({
      files: {},
      start: false,
      tasks: (s) => [new BackfillTask({ backfills: new PgBackfillStore(s.handle.db), graphs: s.graphs, definitions: s.definitions })],
    });
    flag = path.join(await h.tempDir("tributary-erasure-flag-"), "release");
    await h.redefine({ "er.ts": defs(flag) });
    await h.startNodes();
    services = { graphs: h.graphs, definitions: h.definitions, lineage: new PgLineageStore(h.db), erasures: new PgErasureStore(h.db) };
    const run = await h.waitForRun(await h.launch(["er/customers", "er/orders", "er/summary"], { from: "c1", to: "c4" }), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
  }, 180_000);

  afterAll(() => h?.stop());

  it("refuses an unknown asset, an unknown partition and a reason too long, recording nothing", async () => {
    await expectRefused(
      () => requestErasure(services, { assetKey: "er/nothing", partitionKeys: ["c1"] }, new Date()),
      "GRAPH_UNKNOWN_ASSET",
    );
    await expectRefused(
      () => requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c9"] }, new Date()),
      "ERASURE_PARTITION_INVALID",
      '"c9"',
    );
    await expectRefused(
      () => requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c1"], reason: "x".repeat(1_001) }, new Date()),
      "ERASURE_REASON_TOO_LONG",
    );
    await expectRefused(() => erasureReport(services, "not-an-id"), "ERASURE_NOT_FOUND");
  });

  it("a dry run names the impact and the hooks, and records nothing", async () => {
    const before = await requests();
    const plan = await requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c1"], dryRun: true }, new Date());
    expect(plan.request).toBeNull();
    expect(plan.partitionCount).toBe(3);
    expect(plan.assets.map((a) => [a.assetKey, a.partitionCount, a.eraseHook])).toEqual([
      ["er/customers", 1, true],
      ["er/orders", 1, true],
      ["er/summary", 1, false],
    ]);
    expect(await requests()).toBe(before);
  });

  it("erases what was derived from a partition, calls the hooks once, re-materialises it, and proves it", async () => {
    // A log file of the impacted try, where the local executor writes it: it goes with the erasure.
    const impactedStep = (
      await sql<{
        run_id: string;
        id: string;
      }>`select run_id, id from steps where asset_key = 'er/orders' and partition_key = 'c1'`.execute(h.db)
    ).rows[0]!;
    const logFile = path.join(h.logsDir, impactedStep.run_id, `${impactedStep.id}-1.log`);
    await mkdir(path.dirname(logFile), { recursive: true });
    await writeFile(logFile, "order of c1@example.com\n");

    calls.length = 0;
    const plan = await requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c1"], reason: "customer asked" }, new Date());
    const id = plan.request!.id;
    expect(plan.request).toMatchObject({ state: "planned", itemCount: 3, erasedCount: 0, reason: "customer asked" });

    const t = task("a");
    const going = await driveUntil(t, id, ["rematerialising", "done", "failed"]);
    expect(going.state, going.message ?? "").toBe("rematerialising");
    expect(going.backfillId).not.toBeNull();
    // The data is gone; the other customers' is not.
    for (const [a, p] of [
      ["er/customers", "c1"],
      ["er/orders", "c1"],
      ["er/summary", ""],
    ] as const) {
      expect(await outputsOf(a, p), `${a} ${p}`).toBe(0);
    }
    expect(await outputsOf("er/customers", "c2")).toBe(1);
    expect(existsSync(logFile)).toBe(false);
    expect(calls.map((c) => [c.assetKey, c.partitions])).toEqual([
      ["er/customers", ["c1"]],
      ["er/orders", ["c1"]],
    ]);

    const done = await driveUntil(t, id, ["done", "failed"]);
    expect(done.state, done.message ?? "").toBe("done");
    expect(await statusOf("er/customers", "c1")).toBe("materialized");
    expect(await outputsOf("er/orders", "c1")).toBe(1);

    const report = await erasureReport(services, id);
    expect(report.items).toHaveLength(3);
    for (const item of report.items) {
      expect(item.erasedAt, item.assetKey).not.toBeNull();
      expect(item.replacedByRunId, item.assetKey).not.toBeNull();
      expect(item.replacedByRunId).not.toBe(item.runId);
    }
    const kinds = report.deletions.map((d) => `${d.kind} ${d.assetKey} ${d.partitionKey}`);
    expect(kinds.filter((k) => k.startsWith("output")).sort()).toEqual([
      "output er/customers c1",
      "output er/orders c1",
      "output er/summary ",
    ]);
    const log = report.deletions.find((d) => d.kind === "log" && d.stepId === Number(impactedStep.id));
    expect(log).toMatchObject({ sizeBytes: 24, runId: impactedStep.run_id, tryNumber: 1 });
    expect(report.hookCalls.map((c) => [c.assetKey, c.state, c.attempt, c.log])).toEqual([
      ["er/customers", "success", 1, ["removing c1 of er/customers"]],
      ["er/orders", "success", 1, ["removing c1 of er/orders"]],
    ]);
    // Done: working again changes nothing and calls no hook.
    await t.work();
    expect(calls).toHaveLength(2);
  }, 120_000);

  it("a hook that throws fails the request, visibly; a retry calls it again and goes on, deleting nothing twice", async () => {
    calls.length = 0;
    failNext = "er/orders";
    const id = (await requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c2"] }, new Date())).request!.id;
    const t = task("a");
    const failed = await driveUntil(t, id, ["failed", "rematerialising", "done"]);
    expect(failed.state).toBe("failed");
    expect(failed.message).toContain('the erase hook of "er/orders" failed: the warehouse refused the delete');
    expect(failed.backfillId).toBeNull();
    const deletedBefore = (await erasureReport(services, id)).deletions.length;
    // Failed stays failed: nothing happens until it is retried.
    await t.work();
    expect((await services.erasures.get(id))!.state).toBe("failed");
    await expect(retryErasure(services, "00000000-0000-4000-8000-000000000000", new Date())).rejects.toMatchObject({
      code: "ERASURE_NOT_FOUND",
    });

    await retryErasure(services, id, new Date());
    const done = await driveUntil(t, id, ["done", "failed"]);
    expect(done.state, done.message ?? "").toBe("done");
    await expect(retryErasure(services, id, new Date())).rejects.toMatchObject({ code: "ERASURE_NOT_FAILED" });
    const report = await erasureReport(services, id);
    // The customers hook returned the first time: it is not called again; the orders hook is, once more.
    expect(report.hookCalls.map((c) => [c.assetKey, c.attempt, c.state])).toEqual([
      ["er/customers", 1, "success"],
      ["er/orders", 1, "failed"],
      ["er/orders", 2, "success"],
    ]);
    expect(report.hookCalls[1]!.error).toBe("the warehouse refused the delete");
    expect(report.deletions.filter((d) => d.kind === "output")).toHaveLength(
      (await erasureReport(services, id)).deletions.filter((d) => d.kind === "output").length,
    );
    expect(report.deletions.length).toBeGreaterThanOrEqual(deletedBefore);
    expect(
      report.deletions
        .filter((d) => d.kind === "output")
        .map((d) => d.assetKey)
        .sort(),
    ).toEqual(["er/customers", "er/orders", "er/summary"]);
  }, 120_000);

  it("is refused while a run writes an impacted partition, and waits for a run that starts after it was recorded", async () => {
    const run = await h.launch(["er/slow"], { partition: "c3" });
    await h.until(
      async () =>
        (await sql<{ n: number }>`select count(*)::int as n from steps where asset_key = 'er/slow' and state = 'running'`.execute(h.db))
          .rows[0]!.n > 0,
      30_000,
      "the slow step to run",
    );
    await expectRefused(
      () => requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c3"] }, new Date()),
      "ERASURE_PARTITIONS_IN_USE",
      `run ${run}`,
      'er/slow partition "c3"',
    );
    await writeFile(flag, "");
    expect((await h.waitForRun(run, 60_000)).status).toBe("success");
    await sql`select 1`.execute(h.db);

    // Recorded while nothing wrote c4; then a run starts writing it before a reconciler takes the request.
    const { rm } = await import("node:fs/promises");
    await rm(flag);
    const id = (await requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c4"] }, new Date())).request!.id;
    const racing = await h.launch(["er/slow"], { partition: "c4" });
    await h.until(
      async () =>
        (
          await sql<{
            n: number;
          }>`select count(*)::int as n from steps where asset_key = 'er/slow' and partition_key = 'c4' and state = 'running'`.execute(h.db)
        ).rows[0]!.n > 0,
      30_000,
      "the racing step to run",
    );
    const t = task("a");
    await t.work();
    const waiting = (await services.erasures.get(id))!;
    expect(waiting.state).toBe("erasing");
    expect(waiting.message).toContain(`waiting for runs that write assets derived from the source: run ${racing}`);
    expect(await outputsOf("er/customers", "c4")).toBe(1);
    await writeFile(flag, "");
    expect((await h.waitForRun(racing, 60_000)).status).toBe("success");
    // It waits without a reconciler looking before its next attempt; move it due now.
    await sql`update erasure_requests set next_attempt_at = now() where id = ${id}`.execute(h.db);
    const done = await driveUntil(t, id, ["done", "failed"]);
    expect(done.state, done.message ?? "").toBe("done");
    // The slow step's partition was erased too (it read the customer), and re-materialised.
    expect((await erasureReport(services, id)).items.map((i) => i.assetKey)).toContain("er/slow");
  }, 180_000);

  it("two reconcilers never work on one request at once: each hook is called once", async () => {
    calls.length = 0;
    const ids = await Promise.all(
      ["c1", "c2"].map(
        async (c) => (await requestErasure(services, { assetKey: "er/orders", partitionKeys: [c] }, new Date())).request!.id,
      ),
    );
    const a = task("a");
    const b = task("b");
    await h.until(
      async () => {
        await Promise.all([a.work(), b.work()]);
        const states = await Promise.all(ids.map(async (id) => (await services.erasures.get(id))!.state));
        return states.every((s) => s === "done" || s === "failed") ? states : undefined;
      },
      90_000,
      "both requests to end",
    );
    for (const id of ids) expect((await services.erasures.get(id))!.state).toBe("done");
    expect(calls.map((c) => `${c.requestId} ${c.partitions.join()}`).sort()).toEqual([`${ids[0]} c1`, `${ids[1]} c2`].sort());
  }, 120_000);
  it("erases a partition removed from the definition that still holds data, and does not re-materialise it", async () => {
    await h.redefine({ "er.ts": defs(flag).replace('["c1", "c2", "c3", "c4"]', '["c1", "c2", "c3"]') });
    await expectRefused(
      () => requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c9"] }, new Date()),
      "ERASURE_PARTITION_INVALID",
      '"c9"',
    );
    const id = (await requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c4"] }, new Date())).request!.id;
    const done = await driveUntil(task("a"), id, ["done", "failed"]);
    expect(done.state, done.message ?? "").toBe("done");
    expect(await outputsOf("er/customers", "c4")).toBe(0);
    expect(await statusOf("er/customers", "c4")).toBe("erased");
    const report = await erasureReport(services, id);
    const customers = report.items.find((i) => i.assetKey === "er/customers")!;
    expect(customers).toMatchObject({ skippedReason: "the partition no longer exists", replacedByRunId: null });
    expect(customers.erasedAt).not.toBeNull();
  }, 120_000);

  it("removes an erased partition's try logs from the history archives that hold them, and a restore does not bring them back", async () => {
    // An earlier run of c2 and c3, with a log per try, archived past a 30-day retention.
    const old = (await h.waitForRun(await h.launch(["er/customers"], { from: "c2", to: "c3" }), 60_000)).id;
    const { rows: steps } = await sql<{ id: string; partition_key: string }>`
      select id::text, partition_key from steps where run_id = ${old} order by partition_key`.execute(h.db);
    for (const s of steps) {
      await mkdir(path.join(h.logsDir, old), { recursive: true });
      await writeFile(path.join(h.logsDir, old, `${s.id}-1.log`), `loaded ${s.partition_key}@example.com\n`);
    }
    await sql`update runs set created_at = '2025-04-01T10:00:00Z', ended_at = '2025-04-01T10:01:00Z' where id = ${old}`.execute(h.db);
    const archives = new PgHistoryArchiveStore(h.db);
    const archived = await new HistoryArchiveTask({
      store: archives,
      outputStore: h.outputStore,
      logsDir: h.logsDir,
      retentionMs: 30 * 86_400_000,
      graphs: h.graphs,
    }).archive();
    expect(archived).toMatchObject({ runs: 1, logs: 2 });
    const [object] = await archives.archivesOf("2025-04-01");
    const logsIn = async () =>
      (await decodeArchive(await h.outputStore!.getBytes(object!.storageRef), object!.storageRef)).logs.map((l) => l.text.trim());
    expect(await logsIn()).toEqual(["loaded c2@example.com", "loaded c3@example.com"]);

    const id = (await requestErasure(services, { assetKey: "er/customers", partitionKeys: ["c3"] }, new Date())).request!.id;
    const done = await driveUntil(task("a"), id, ["done", "failed"]);
    expect(done.state, done.message ?? "").toBe("done");
    // The archive holds c2's log still, not c3's; the proof names the archived try.
    expect(await logsIn()).toEqual(["loaded c2@example.com"]);
    const c3 = steps.find((s) => s.partition_key === "c3")!;
    const report = await erasureReport(services, id);
    expect(report.deletions.find((d) => d.kind === "log" && d.runId === old)).toMatchObject({
      ref: `${old}/${c3.id}-1`,
      sizeBytes: 22,
      partitionKey: "c3",
    });
    // Restored: the run is back, with c2's log and without c3's.
    await restoreHistory({ archives, outputStore: h.outputStore, logsDir: h.logsDir }, { day: "2025-04-01" }, new Date());
    const c2 = steps.find((s) => s.partition_key === "c2")!;
    expect(existsSync(path.join(h.logsDir, old, `${c2.id}-1.log`))).toBe(true);
    expect(existsSync(path.join(h.logsDir, old, `${c3.id}-1.log`))).toBe(false);
  }, 120_000);
});

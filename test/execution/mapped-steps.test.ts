import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import type { RunDetail, StepRecord } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// One day lists files; the parser fans out over them (item 500 fails its first try); the total reads them all.
const FAN = `
import { asset, daily } from "tributary";
const days = daily({ start: "2020-01-01" });
export const listing = asset({ key: "m/listing", partitions: days }, async () => ({
  files: Array.from({ length: globalThis.__tributaryFiles ?? 1000 }, (_, i) => "file-" + i + ".csv"),
}));
export const parsed = asset(
  { key: "m/parsed", partitions: days, deps: { listing }, map: ({ listing }) => listing.files, mapLabel: (f) => f,
    retries: { max: 2, delay: 0 } },
  async (ctx, { listing }) => {
    if (ctx.map.index === 500 && ctx.tryNumber === 1) throw new Error("flaky item");
    return { file: ctx.map.item, index: ctx.map.index, of: listing.files.length };
  },
);
export const total = asset({ key: "m/total", partitions: days, deps: { parsed } }, async (_ctx, { parsed }) => ({
  count: parsed.length,
  inOrder: parsed.every((p, i) => p.index === i && p.file === "file-" + i + ".csv"),
  last: parsed.at(-1) ?? null,
}));
`;

// The function fans out itself (ctx.expand); an empty list gives downstream [].
const EXPAND = `
import { asset } from "tributary";
export const found = asset({ key: "e/found" }, async (ctx) =>
  ctx.map ? ctx.map.item * 10 : ctx.expand(globalThis.__tributaryItems ?? [], { label: (n) => "n=" + n }));
export const sum = asset({ key: "e/sum", deps: { found } }, async (_ctx, { found }) => ({ values: found, sum: found.reduce((a, b) => a + b, 0) }));
`;

// Fan-outs that go wrong.
const WRONG = `
import { asset } from "tributary";
export const notArray = asset({ key: "w/not_array", map: () => ({ files: [] }), retries: 2 }, async () => 1);
export const tooMany = asset({ key: "w/too_many", map: () => [1, 2, 3, 4], maxMapItems: 3 }, async () => 1);
export const notJson = asset({ key: "w/not_json", map: () => ["a", new Date(0), "c"] }, async () => 1);
export const nested = asset({ key: "w/nested" }, async (ctx) => ctx.map ? ctx.expand([1, 2]) : ctx.expand([1]));
export const throws = asset({ key: "w/throws", map: () => { throw new Error("listing failed"); }, retries: { max: 1, delay: 0 } }, async () => 1);
export const after = asset({ key: "w/after", deps: { notArray } }, async () => 1);
`;

// Mapped steps share their asset's pool: two slots for ten items.
const POOLED = `
import { asset } from "tributary";
export const slow = asset({ key: "p/slow", pool: "p_pool", map: () => Array.from({ length: 10 }, (_, i) => i) },
  async (ctx) => { await new Promise((r) => setTimeout(r, 60)); return ctx.map.index; });
`;

// Worker processes: items cross the process boundary both ways; a check judges the gathered value.
const PROCESSES = `
import { asset, check } from "tributary";
export const words = asset({ key: "x/words", map: () => ["alpha", "beta", "gamma", "delta"], mapLabel: (w) => w.toUpperCase(),
  retries: { max: 1, delay: 0 } },
  async (ctx) => {
    if (ctx.map.item === "gamma" && ctx.tryNumber === 1) process.exit(3);
    return { word: ctx.map.item, pid: process.pid, length: ctx.map.item.length };
  });
export const fourWords = check(words, { name: "four_words", blocking: true }, (_ctx, value) => ({
  passed: Array.isArray(value) && value.length === 4, metadata: { n: Array.isArray(value) ? value.length : -1 },
}));
export const joined = asset({ key: "x/joined", deps: { words } }, async (_ctx, { words }) => words.map((w) => w.word).join(" "));
`;

// One item waits for the test to let it go.
const HELD = `
import { asset } from "tributary";
export const held = asset({ key: "h/held", map: () => [0, 1, 2] }, async (ctx) => {
  if (ctx.map.index === 1) await globalThis.__tributaryHold;
  return ctx.map.index;
});
`;

// Two fan-outs in a row: the second maps over the first's gathered outputs.
const TWO_LEVEL = `
import { asset } from "tributary";
export const first = asset({ key: "t/first", map: () => [1, 2] }, async (ctx) => ctx.map.item);
export const second = asset({ key: "t/second", deps: { first }, map: ({ first }) => first.concat([9]).slice(0, globalThis.__tributarySecond ?? 3) },
  async (ctx) => ctx.map.item * 100);
export const last = asset({ key: "t/last", deps: { second } }, async (_ctx, { second }) => second);
`;

const mapped = (run: RunDetail, asset: string) =>
  run.steps.filter((s) => s.assetKey === asset && s.mapIndex >= 0).sort((a, b) => a.mapIndex - b.mapIndex);
const own = (run: RunDetail, asset: string): StepRecord =>
  run.steps.find((s) => s.assetKey === asset && s.mapIndex === -1 && s.checkName === null)!;

describePostgres("execution: mapped steps (runtime fan-out)", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    delete (globalThis as { __tributaryFiles?: number }).__tributaryFiles;
    delete (globalThis as { __tributaryItems?: number[] }).__tributaryItems;
  });

  it("fans out 1 000 items under two reconcilers, retries the failing one, and gathers 1 000 outputs in order", async () => {
    h = await Harness.create({ files: { "fan.ts": FAN }, nodes: 2, node: { capacity: 16 } });
    const runId = await h.launch(["m/listing", "m/parsed", "m/total"], { partition: "2020-01-03" });
    const run = await h.waitForRun(runId, 120_000);
    expect(run.status, await h.describe([runId])).toBe("success");
    expect(run.stepsTotal).toBe(1003);
    expect(run.stepsDone).toBe(1003);
    expect(run.planVersion).toBe(2);

    const parent = own(run, "m/parsed");
    expect(parent.state).toBe("success");
    expect(parent.mapCount).toBe(1000);
    const items = mapped(run, "m/parsed");
    expect(items.map((s) => s.mapIndex)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(items.every((s) => s.state === "success" && s.partitionKey === "2020-01-03")).toBe(true);
    expect(items[7]!.mapLabel).toBe("file-7.csv");
    // Item 500 failed once and was retried; the others ran once.
    expect(items[500]!.tryNumber).toBe(2);
    expect(items[500]!.tries.map((t) => t.state)).toEqual(["failed", "success"]);
    expect(items.filter((s) => s.tryNumber !== 1).map((s) => s.mapIndex)).toEqual([500]);
    // Mapped steps are upstreams of the step that gathers them; the reader reads only that step.
    expect(parent.upstream).toEqual(expect.arrayContaining([own(run, "m/listing").id, items[0]!.id, items[999]!.id]));
    expect(own(run, "m/total").upstream).toEqual([parent.id]);

    const out = await sql<{ v: { count: number; inOrder: boolean; last: unknown } }>`
      select o.inline_value as v from outputs o join steps s on s.id = o.step_id
      where s.run_id = ${runId} and s.asset_key = 'm/total'`.execute(h.db);
    expect(out.rows[0]!.v).toEqual({ count: 1000, inOrder: true, last: { file: "file-999.csv", index: 999, of: 1000 } });

    // One materialisation of the partition (the gather), with its lineage; none per item.
    const events = await sql<{ n: number; inputs: number }>`
      select count(*)::int as n, (select count(*)::int from event_inputs i join events e2 on e2.id = i.event_id
                                  where e2.asset_key = 'm/parsed' and e2.kind = 'materialization') as inputs
      from events where asset_key = 'm/parsed' and kind = 'materialization'`.execute(h.db);
    expect(events.rows[0]).toEqual({ n: 1, inputs: 1 });
    const status = await sql<{ status: string; last_step_id: number }>`
      select status, last_step_id from partition_status where asset_key = 'm/parsed' and partition_key = '2020-01-03'`.execute(h.db);
    expect(status.rows[0]).toEqual({ status: "materialized", last_step_id: parent.id });
    // Item 500 was retried, so nothing failed for good: no failure event.
    const failures = await sql<{ n: number }>`select count(*)::int as n from events where kind = 'failure' and run_id = ${runId}`.execute(
      h.db,
    );
    expect(failures.rows[0]!.n).toBe(0);
    expect(h.errors()).toEqual([]);
  });

  it("ctx.expand fans out from the function; an empty list runs no item and downstream gets []", async () => {
    h = await Harness.create({ files: { "expand.ts": EXPAND } });
    (globalThis as { __tributaryItems?: number[] }).__tributaryItems = [3, 1, 2];
    const first = await h.waitForRun(await h.launch(["e/found", "e/sum"]), 30_000);
    expect(first.status, await h.describe([first.id])).toBe("success");
    expect(mapped(first, "e/found").map((s) => [s.mapIndex, s.mapLabel])).toEqual([
      [0, "n=3"],
      [1, "n=1"],
      [2, "n=2"],
    ]);
    const sumOf = async (runId: string) =>
      (
        await sql<{ v: unknown }>`select o.inline_value as v from outputs o join steps s on s.id = o.step_id
                                 where s.run_id = ${runId} and s.asset_key = 'e/sum'`.execute(h!.db)
      ).rows[0]!.v;
    expect(await sumOf(first.id)).toEqual({ values: [30, 10, 20], sum: 60 });

    (globalThis as { __tributaryItems?: number[] }).__tributaryItems = [];
    const empty = await h.waitForRun(await h.launch(["e/found", "e/sum"]), 30_000);
    expect(empty.status).toBe("success");
    expect(mapped(empty, "e/found")).toEqual([]);
    expect(own(empty, "e/found").state).toBe("success");
    expect(own(empty, "e/sum").state).toBe("success");
    expect(await sumOf(empty.id)).toEqual({ values: [], sum: 0 });
    expect(empty.stepsTotal).toBe(2);
  });

  it("a bad fan-out fails its step for good with an error naming what is wrong; nothing else is affected", async () => {
    h = await Harness.create({ files: { "wrong.ts": WRONG } });
    const keys = ["w/not_array", "w/too_many", "w/not_json", "w/nested", "w/throws", "w/after"];
    const run = await h.waitForRun(await h.launch(keys), 60_000);
    expect(run.status).toBe("failed");
    const errorOf = (key: string) => own(run, key).error as { code: string; message: string };
    expect(own(run, "w/not_array")).toMatchObject({ state: "failed", tryNumber: 1 }); // not retried: the same code answers the same
    expect(errorOf("w/not_array").code).toBe("MAP_RESULT_INVALID");
    expect(errorOf("w/not_array").message).toContain("map must answer an array of items, but answered an object");
    expect(errorOf("w/not_array").message).toContain("w/not_array");
    expect(own(run, "w/after")).toMatchObject({ state: "upstream_failed" });
    expect(errorOf("w/too_many")).toMatchObject({ code: "MAP_TOO_MANY_ITEMS" });
    expect(errorOf("w/too_many").message).toContain("answered 4 items, over the limit of 3 per fan-out");
    expect(errorOf("w/not_json")).toMatchObject({ code: "MAP_ITEM_NOT_SERIALIZABLE" });
    expect(errorOf("w/not_json").message).toContain("items[1]");
    // The nested fan-out: the step expanded into one item, whose own ctx.expand is refused.
    const nestedItem = mapped(run, "w/nested")[0]!;
    expect((nestedItem.error as { code: string }).code).toBe("MAP_NESTED");
    expect(own(run, "w/nested")).toMatchObject({ state: "upstream_failed" });
    expect(own(run, "w/nested").skipReason).toContain("mapped step 0 failed");
    // A map function that throws is an ordinary failure: retried.
    expect(own(run, "w/throws")).toMatchObject({ state: "failed", tryNumber: 2 });
    expect(errorOf("w/throws").message).toContain("listing failed");
    // No mapped step was created for a refused fan-out.
    for (const key of ["w/not_array", "w/too_many", "w/not_json", "w/throws"]) expect(mapped(run, key)).toEqual([]);
    expect(run.stepsTotal).toBe(7);
  });

  it("runs mapped steps in worker processes: a killed item is retried, a check judges the gathered value", async () => {
    h = await Harness.create({ files: { "words.ts": PROCESSES }, executor: "local", node: { processes: 2, capacity: 2 } });
    const run = await h.waitForRun(await h.launch(["x/words", "x/joined"]), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
    const items = mapped(run, "x/words");
    expect(items.map((s) => [s.mapLabel, s.state, s.tryNumber])).toEqual([
      ["ALPHA", "success", 1],
      ["BETA", "success", 1],
      ["GAMMA", "success", 2],
      ["DELTA", "success", 1],
    ]);
    const check = run.steps.find((s) => s.checkName === "four_words")!;
    expect(check.state).toBe("success");
    expect(check.upstream).toEqual([own(run, "x/words").id]);
    const joined = await sql<{ v: unknown }>`select o.inline_value as v from outputs o join steps s on s.id = o.step_id
                                              where s.run_id = ${run.id} and s.asset_key = 'x/joined'`.execute(h.db);
    expect(joined.rows[0]!.v).toBe("alpha beta gamma delta");
    const result = await sql<{
      passed: boolean;
      metadata: unknown;
    }>`select passed, metadata from check_results where run_id = ${run.id}`.execute(h.db);
    expect(result.rows).toEqual([{ passed: true, metadata: { n: 4 } }]);
  });

  it("refuses to clear a mapped step that is still running; a finished sibling may be cleared meanwhile", async () => {
    h = await Harness.create({ files: { "held.ts": HELD } });
    let release!: () => void;
    (globalThis as { __tributaryHold?: Promise<void> }).__tributaryHold = new Promise<void>((r) => (release = r));
    const runId = await h.launch(["h/held"]);
    await h.until(
      async () => {
        const run = await h!.runs.getRun(runId);
        return (
          run &&
          mapped(run, "h/held").length === 3 &&
          mapped(run, "h/held")[1]!.state === "running" &&
          mapped(run, "h/held")[0]!.state === "success"
        );
      },
      15_000,
      "item 1 running and item 0 done",
    );
    const ref = { runId, assetKey: "h/held", partitionKey: "" };
    await expect(h.runs.clearMappedStep({ ...ref, mapIndex: 1 }, new Date())).rejects.toMatchObject({
      code: "STEP_ACTIVE",
      message: expect.stringContaining("mapped step 1 is running"),
    });
    const cleared = await h.runs.clearMappedStep({ ...ref, mapIndex: 0 }, new Date());
    expect(cleared.cleared.map((c) => c.mapIndex)).toEqual([0, -1]);
    release();
    const run = await h.waitForRun(runId, 30_000);
    expect(run.status).toBe("success");
    expect(mapped(run, "h/held").map((s) => s.tryNumber)).toEqual([2, 1, 1]);
    expect(run.stepsDone).toBe(run.stepsTotal);
    delete (globalThis as { __tributaryHold?: Promise<void> }).__tributaryHold;
  });

  it("clearing a mapped step makes a later fan-out of the run expand again, to its new item count", async () => {
    h = await Harness.create({ files: { "two.ts": TWO_LEVEL } });
    const runId = await h.launch(["t/first", "t/second", "t/last"]);
    const run = await h.waitForRun(runId, 30_000);
    expect(run.status).toBe("success");
    expect(mapped(run, "t/second").map((s) => s.state)).toEqual(["success", "success", "success"]);
    (globalThis as { __tributarySecond?: number }).__tributarySecond = 2;
    const cleared = await h.runs.clearMappedStep({ runId, assetKey: "t/first", partitionKey: "", mapIndex: 1 }, new Date());
    expect(cleared.cleared.map((c) => [c.assetKey, c.mapIndex])).toEqual([
      ["t/first", 1],
      ["t/first", -1],
      ["t/second", -1],
      ["t/last", -1],
    ]);
    const again = await h.waitForRun(runId, 30_000);
    expect(again.status, await h.describe([runId])).toBe("success");
    expect(mapped(again, "t/second").map((s) => [s.state, s.tryNumber])).toEqual([
      ["success", 2],
      ["success", 2],
      ["removed", 1],
    ]);
    expect(own(again, "t/second").mapCount).toBe(2);
    expect(again.stepsDone).toBe(again.stepsTotal);
    expect(again.stepsTotal).toBe(8);
    expect(again.stepsFailed).toBe(0);
    const last = await sql<{ v: unknown }>`select o.inline_value as v from outputs o join steps s on s.id = o.step_id
                                           where s.run_id = ${runId} and s.asset_key = 't/last' order by o.id desc limit 1`.execute(h.db);
    expect(last.rows[0]!.v).toEqual([100, 200]);
    delete (globalThis as { __tributarySecond?: number }).__tributarySecond;
  });

  it("mapped steps take their asset's pool slots like any step", async () => {
    h = await Harness.create({ files: { "pooled.ts": POOLED } });
    await h.setPool("p_pool", 2);
    const run = await h.waitForRun(await h.launch(["p/slow"]), 30_000);
    expect(run.status).toBe("success");
    const spans = mapped(run, "p/slow").map((s) => [s.startedAt!.getTime(), s.endedAt!.getTime()] as const);
    expect(spans).toHaveLength(10);
    const most = Math.max(...spans.map(([start]) => spans.filter(([s, e]) => s <= start && start < e).length));
    expect(most).toBeLessThanOrEqual(2);
  });

  it("clears one mapped step inside its run; a later run with another item count has its own steps; the old run is then superseded", async () => {
    h = await Harness.create({ files: { "fan.ts": FAN } });
    (globalThis as { __tributaryFiles?: number }).__tributaryFiles = 5;
    const firstId = await h.launch(["m/listing", "m/parsed", "m/total"], { partition: "2020-01-04" });
    const first = await h.waitForRun(firstId, 30_000);
    expect(first.status).toBe("success");
    const gatheredBefore = await sql<{
      n: number;
    }>`select count(*)::int as n from events where asset_key = 'm/parsed' and kind = 'materialization'`.execute(h.db);

    // Bad targets are refused and nothing changes.
    const ref = { runId: firstId, assetKey: "m/parsed", partitionKey: "2020-01-04" };
    await expect(h.runs.clearMappedStep({ ...ref, mapIndex: 5 }, new Date())).rejects.toMatchObject({
      code: "STEP_NOT_FOUND",
      message: expect.stringContaining("map indices 0 to 4"),
    });
    await expect(h.runs.clearMappedStep({ ...ref, assetKey: "m/total", mapIndex: 0 }, new Date())).rejects.toMatchObject({
      code: "STEP_NOT_FOUND",
      message: expect.stringContaining("has not fanned out"),
    });
    await expect(h.runs.clearMappedStep({ ...ref, mapIndex: -1 }, new Date())).rejects.toMatchObject({ code: "MAP_INDEX_INVALID" });

    const cleared = await h.runs.clearMappedStep({ ...ref, mapIndex: 2 }, new Date());
    expect(cleared.cleared.map((c) => [c.assetKey, c.mapIndex])).toEqual([
      ["m/parsed", 2],
      ["m/parsed", -1],
      ["m/total", -1],
    ]);
    expect(cleared.run.status).toBe("running");
    expect(cleared.run.planVersion).toBe(3);
    const again = await h.waitForRun(firstId, 30_000);
    expect(again.status, await h.describe([firstId])).toBe("success");
    expect(again.stepsDone).toBe(again.stepsTotal);
    expect(mapped(again, "m/parsed")[2]!.tryNumber).toBe(2);
    expect(mapped(again, "m/parsed")[1]!.tryNumber).toBe(1);
    expect(own(again, "m/total").tryNumber).toBe(2);
    const gatheredAfter = await sql<{
      n: number;
    }>`select count(*)::int as n from events where asset_key = 'm/parsed' and kind = 'materialization'`.execute(h.db);
    expect(gatheredAfter.rows[0]!.n).toBe(gatheredBefore.rows[0]!.n + 1);

    // A re-run of the partition expands to a different number of items: its own steps; the old run is intact.
    (globalThis as { __tributaryFiles?: number }).__tributaryFiles = 3;
    const second = await h.waitForRun(await h.launch(["m/listing", "m/parsed", "m/total"], { partition: "2020-01-04" }), 30_000);
    expect(second.status).toBe("success");
    expect(mapped(second, "m/parsed")).toHaveLength(3);
    const old = (await h.runs.getRun(firstId))!;
    expect(mapped(old, "m/parsed")).toHaveLength(5);
    expect(mapped(old, "m/parsed").every((s) => s.state === "success")).toBe(true);
    const totals = await sql<{ run_id: string; count: number }>`
      select s.run_id, (o.inline_value->>'count')::int as count from outputs o join steps s on s.id = o.step_id
      where s.asset_key = 'm/total' order by o.id`.execute(h.db);
    expect(totals.rows.map((r) => [r.run_id, r.count])).toEqual([
      [firstId, 5],
      [firstId, 5],
      [second.id, 3],
    ]);

    // The old run no longer owns the partition: clearing its mapped step would overwrite newer data.
    await expect(h.runs.clearMappedStep({ ...ref, mapIndex: 1 }, new Date())).rejects.toMatchObject({
      code: "CLEAR_SUPERSEDED",
      message: expect.stringContaining(`run ${second.id}`),
    });
    const untouched = (await h.runs.getRun(firstId))!;
    expect(untouched.status).toBe("success");
    expect(untouched.planVersion).toBe(3);
  });
});

import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { PgTriggerStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness, sleep } from "./harness.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

// Deferred steps and reschedule-mode sensors through the real reconciler,
// executor and Postgres. The triggerer's part (claiming and checking) is
// played by the test through the trigger store, so these tests pin down
// what the run store does with a wait; test/triggerer covers the checking.

const defs = (landing: string) => `
import { asset, daily, fileExists } from "tributary";
const days = daily({ start: "2025-03-01" });
const landing = ${JSON.stringify(landing)};
export const waiter = asset({ key: "d/waiter", partitions: days }, async (ctx) => {
  const found = await ctx.defer(fileExists(landing + "/{partition}.csv"), { timeout: "1h", interval: "2s" });
  return { found, key: ctx.partition.key, tryNumber: ctx.tryNumber };
});
export const pooled = asset({ key: "d/pooled", partitions: days, pool: "waits" }, async (ctx) =>
  ctx.defer(fileExists(landing + "/pooled-{partition}.csv")));
export const after = asset({ key: "d/after", partitions: days, deps: { waiter } }, async (_ctx, { waiter }) => waiter.key + "!");
export const sensor = asset({ key: "d/sensor", partitions: days }, async (ctx) =>
  ctx.waitFor(fileExists(landing + "/sensor-{partition}.csv"), { mode: "reschedule", interval: "300ms", timeout: "1h" }));
`;

async function stepStates(h: Harness, runId: string): Promise<Record<string, string>> {
  const { rows } = await sql<{ asset_key: string; partition_key: string; state: string }>`
    select asset_key, partition_key, state from steps where run_id = ${runId} order by id`.execute(h.db);
  return Object.fromEntries(rows.map((r) => [`${r.asset_key}@${r.partition_key}`, r.state]));
}

/** Plays the triggerer: every waiting trigger of these steps fires with a payload. */
async function fireAll(h: Harness, payload: (t: { partitionKey: string | null }) => unknown): Promise<number[]> {
  const store = new PgTriggerStore(h.db, RUN_DECISIONS);
  const claimed = await store.claimDue("test-triggerer", new Date(), { limit: 100, leaseMs: 30_000 });
  const result = await store.recordChecks(
    "test-triggerer",
    claimed.map((t) => ({ triggerId: t.id, outcome: "fired" as const, payload: payload(t) as never })),
    new Date(),
  );
  return [...result.scheduledSteps];
}

describePostgres("execution: deferred steps and reschedule-mode sensors", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("frees the slot while deferred, keeps the wait in a trigger, and resumes with the payload when it fires", async () => {
    h = await Harness.create({ files: { "d.ts": "export {};" }, node: { capacity: 1 } });
    const landing = path.join(h.scratch, "landing");
    await mkdir(landing, { recursive: true });
    await h.redefine({ "d.ts": defs(landing) });
    const runId = await h.launch(["d/waiter", "d/after"], { from: "2025-03-01", to: "2025-03-03" });
    // One executor slot, three waits: each one gives its slot back when it defers.
    await h.until(
      async () => Object.values(await stepStates(h!, runId)).filter((s) => s === "deferred").length === 3,
      20_000,
      "three deferred steps",
    );

    const { rows: triggers } = await sql<Record<string, unknown>>`
      select t.kind, t.args, t.asset_key, t.partition_key, t.partition_window, t.poll_interval_ms, t.soft_fail, t.try_number,
             t.status, (t.timeout_at - t.created_at) > interval '59 minutes' as has_timeout, (s.trigger_id = t.id) as linked
      from triggers t join steps s on s.id = t.step_id where s.run_id = ${runId} order by t.partition_key`.execute(h.db);
    expect(triggers).toHaveLength(3);
    expect(triggers[0]).toEqual({
      kind: "fileExists",
      args: { path: `${landing}/{partition}.csv` },
      asset_key: "d/waiter",
      partition_key: "2025-03-01",
      partition_window: { start: "2025-03-01T00:00:00.000Z", end: "2025-03-02T00:00:00.000Z" },
      poll_interval_ms: 2000,
      soft_fail: false,
      try_number: 1,
      status: "waiting",
      has_timeout: true,
      linked: true,
    });
    const { rows: held } = await sql<{ occupied: number; active: number }>`
      select (select occupied_slots from pools where name = 'default_pool') as occupied,
             (select steps_active from runs where id = ${runId}) as active`.execute(h.db);
    expect(held[0]).toEqual({ occupied: 0, active: 0 });

    const scheduled = await fireAll(h, (t) => ({ path: `${t.partitionKey}.csv`, size: 10 }));
    expect(scheduled).toHaveLength(3);
    const run = await h.waitForRun(runId, 20_000);
    expect(run.status).toBe("success");
    const { rows: outputs } = await sql<{ asset_key: string; inline_value: unknown }>`
      select asset_key, inline_value from outputs where run_id = ${runId} order by asset_key, partition_key`.execute(h.db);
    expect(outputs.map((o) => o.inline_value)).toEqual([
      "2025-03-01!",
      "2025-03-02!",
      "2025-03-03!",
      { found: { path: "2025-03-01.csv", size: 10 }, key: "2025-03-01", tryNumber: 2 },
      { found: { path: "2025-03-02.csv", size: 10 }, key: "2025-03-02", tryNumber: 2 },
      { found: { path: "2025-03-03.csv", size: 10 }, key: "2025-03-03", tryNumber: 2 },
    ]);
    // The deferring try stays in the history; the resumed one does not count against retries (max 0 here).
    const waiter = run.steps.find((s) => s.assetKey === "d/waiter" && s.partitionKey === "2025-03-01")!;
    expect(waiter.tries.map((t) => t.state)).toEqual(["deferred", "success"]);
  });

  it("holds the slot of a pool that counts deferred steps, and a canceled run stops its waits and gives the slots back", async () => {
    h = await Harness.create({ files: { "d.ts": "export {};" }, node: { capacity: 4 } });
    const landing = path.join(h.scratch, "landing");
    await h.redefine({ "d.ts": defs(landing) });
    await sql`insert into pools (name, slots, include_deferred) values ('waits', 1, true)`.execute(h.db);
    const runId = await h.launch(["d/pooled"], { from: "2025-03-01", to: "2025-03-03" });
    await h.until(async () => Object.values(await stepStates(h!, runId)).includes("deferred"), 20_000, "a deferred step");
    await sleep(500);
    // The deferred step keeps the pool's only slot: the others wait for it.
    expect(Object.values(await stepStates(h, runId)).sort()).toEqual(["deferred", "scheduled", "scheduled"]);
    const occupied = async () =>
      (await sql<{ n: number }>`select occupied_slots as n from pools where name = 'waits'`.execute(h!.db)).rows[0]!.n;
    expect(await occupied()).toBe(1);

    await h.runs.requestCancel(runId, new Date());
    const run = await h.waitForRun(runId, 20_000);
    expect(run.status).toBe("canceled");
    expect(await occupied()).toBe(0);
    await h.until(
      async () => {
        const { rows } = await sql<{ status: string }>`
        select t.status from triggers t join steps s on s.id = t.step_id where s.run_id = ${runId}`.execute(h!.db);
        return rows.length === 1 && rows[0]!.status === "canceled";
      },
      10_000,
      "the wait to be canceled",
    );
  });

  it("times a deferred wait out through the normal failure path: downstream does not run on missing data", async () => {
    h = await Harness.create({ files: { "d.ts": "export {};" } });
    const landing = path.join(h.scratch, "landing");
    await h.redefine({ "d.ts": defs(landing) });
    const runId = await h.launch(["d/waiter", "d/after"], { partition: "2025-03-05" });
    await h.until(async () => (await stepStates(h!, runId))["d/waiter@2025-03-05"] === "deferred", 20_000, "the wait");
    const expired = await new PgTriggerStore(h.db, RUN_DECISIONS).expire(new Date(Date.now() + 2 * 3_600_000));
    expect(expired.failedSteps).toHaveLength(1);
    const run = await h.waitForRun(runId, 10_000);
    expect(run.status).toBe("failed");
    const waiter = run.steps.find((s) => s.assetKey === "d/waiter")!;
    expect(waiter.error).toMatchObject({ code: "TRIGGER_TIMED_OUT" });
    expect(run.steps.find((s) => s.assetKey === "d/after")!.state).toBe("upstream_failed");
  });

  it("reschedule mode: the step ends its try between checks without a slot, and succeeds once the file is there", async () => {
    h = await Harness.create({ files: { "d.ts": "export {};" }, housekeepingIntervalMs: 100 });
    const landing = path.join(h.scratch, "landing");
    await mkdir(landing, { recursive: true });
    await h.redefine({ "d.ts": defs(landing) });
    const runId = await h.launch(["d/sensor"], { partition: "2025-03-07" });
    const tries = async () =>
      (
        await sql<{ state: string }>`select t.state from step_tries t where t.run_id = ${runId} order by t.try_number`.execute(h!.db)
      ).rows.map((r) => r.state);
    await h.until(async () => (await tries()).filter((s) => s === "up_for_reschedule").length >= 2, 20_000, "two checks");
    const { rows: waiting } = await sql<{ wait_started_at: Date | null; tries_before: number; try_number: number }>`
      select wait_started_at, tries_before, try_number from steps where run_id = ${runId}`.execute(h.db);
    expect(waiting[0]!.wait_started_at).not.toBeNull();
    await writeFile(path.join(landing, "sensor-2025-03-07.csv"), "x\n");
    const run = await h.waitForRun(runId, 20_000);
    expect(run.status).toBe("success");
    const all = await tries();
    expect(all.at(-1)).toBe("success");
    expect(all.slice(0, -1).every((s) => s === "up_for_reschedule")).toBe(true);
    const { rows: after } = await sql<{ wait_started_at: Date | null }>`select wait_started_at from steps where run_id = ${runId}`.execute(
      h.db,
    );
    expect(after[0]!.wait_started_at).toBeNull();
  });
});

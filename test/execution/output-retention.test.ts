import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";
import { OutputRetentionTask } from "../../src/reconciler/index.js";
import { deleteQueuedObjects, PgOutputDeletionStore, PgOutputRetentionStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// Output retention on Postgres: outputs past the retention go, oldest first and a batch at a time, their objects
// through the deletion queue; what a step may still read stays, however old: the outputs of the run behind each
// partition's latest materialisation, and those of runs that have not ended.

const defs = (flag: string) => `
import { existsSync } from "node:fs";
import { asset, daily } from "tributary";
const days = daily({ start: "2025-03-01", end: "2025-03-05" });
export const big = asset({ key: "ret/big", partitions: days }, async (ctx) => ({ day: ctx.partition.key, blob: "x".repeat(60 * 1024) }));
export const small = asset({ key: "ret/small", partitions: days, deps: { big }, retention: { outputs: "20d" } }, async (_ctx, { big }) => big.day);
export const gate = asset({ key: "ret/gate", partitions: days, deps: { small } }, async () => {
  while (!existsSync(${JSON.stringify(flag)})) await new Promise((resolve) => setTimeout(resolve, 20));
  return 1;
});
`;

const DAY = 86_400_000;

describePostgres("output retention", () => {
  let h: Harness;
  let flag: string;
  let store: PgOutputRetentionStore;
  const outputsOf = async (runId: string) =>
    (await sql<{ storage_ref: string | null }>`select storage_ref from outputs where run_id = ${runId} order by id`.execute(h.db)).rows.map(
      (r) => r.storage_ref,
    );
  const age = (days: number) => sql`update outputs set created_at = now() - make_interval(days => ${days})`.execute(h.db);
  const success = async (keys: string[], selection: { from: string; to: string } | { partition: string }) => {
    const run = await h.waitForRun(await h.launch(keys, selection), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
    return run.id;
  };

  beforeAll(async () => {
    h = await Harness.create({ files: {}, start: false });
    flag = path.join(await h.tempDir("tributary-retention-flag-"), "release");
    await h.redefine({ "ret.ts": defs(flag) });
    await h.startNodes();
    store = new PgOutputRetentionStore(h.db);
  }, 180_000);

  afterAll(() => h?.stop());

  it("deletes superseded outputs past the retention, a batch at a time, and keeps what steps may read", async () => {
    const first = await success(["ret/big", "ret/small"], { from: "2025-03-01", to: "2025-03-02" });
    const second = await success(["ret/big", "ret/small"], { from: "2025-03-01", to: "2025-03-02" });
    // A run still going: its big and small outputs are written, its gate waits.
    const going = await h.launch(["ret/big", "ret/small", "ret/gate"], { partition: "2025-03-03" });
    await h.until(
      async () =>
        (await sql<{ state: string }>`select state from steps where run_id = ${going} and asset_key = 'ret/gate'`.execute(h.db)).rows[0]
          ?.state === "running",
      30_000,
      "the gate step to run",
    );
    const superseded = await outputsOf(first);
    expect(superseded).toHaveLength(4);
    const objects = superseded.filter((r): r is string => r !== null);
    expect(objects).toHaveLength(2);
    for (const ref of objects) expect(existsSync(ref.slice("file://".length))).toBe(true);
    const kept = { second: await outputsOf(second), going: await outputsOf(going) };
    expect(kept.going).toHaveLength(2);

    // Within the retention: nothing goes.
    await age(10);
    expect(await store.prune({ before: new Date(Date.now() - 30 * DAY), limit: 100 }, new Date())).toEqual({ outputs: 0, objects: 0 });

    // Past it: the first run's outputs, three then one.
    await age(40);
    const before = new Date(Date.now() - 30 * DAY);
    const batches = [];
    for (let i = 0; i < 3; i++) batches.push((await store.prune({ before, limit: 3 }, new Date())).outputs);
    expect(batches).toEqual([3, 1, 0]);
    expect(await outputsOf(first)).toEqual([]);
    expect(await outputsOf(second)).toEqual(kept.second);
    expect(await outputsOf(going)).toEqual(kept.going);

    // The objects go through the deletion queue.
    const queued = await deleteQueuedObjects(new PgOutputDeletionStore(h.db), h.outputStore, new Date());
    expect(queued).toEqual({ deleted: 2, failed: [] });
    for (const ref of objects) expect(existsSync(ref.slice("file://".length))).toBe(false);
    for (const ref of kept.second) if (ref) expect(existsSync(ref.slice("file://".length))).toBe(true);

    // What is kept is still read: small reads big's latest output, an object of the second run.
    await success(["ret/small"], { partition: "2025-03-01" });
    await writeFile(flag, "");
    expect((await h.waitForRun(going, 60_000)).status).toBe("success");
  });

  it("two reconcilers' tasks prune at once and delete each output once", async () => {
    // Big again: the outputs of big's previous runs are superseded now.
    await success(["ret/big"], { from: "2025-03-01", to: "2025-03-03" });
    await age(40);
    // Superseded now: big's three of earlier runs, and small's of 2025-03-01 from before its run of its own.
    const superseded = (
      await sql<{ n: number }>`
        select count(*)::int as n from outputs o
        where not exists (select 1 from partition_status ps where ps.asset_key = o.asset_key
                            and ps.partition_key = o.partition_key and ps.last_run_id = o.run_id)`.execute(h.db)
    ).rows[0]!.n;
    expect(superseded).toBe(4);
    const logged: string[] = [];
    const task = () =>
      new OutputRetentionTask({
        store: new PgOutputRetentionStore(h.db),
        retentionMs: 30 * DAY,
        batch: 1,
        maxBatches: 5,
        log: (_level, message) => logged.push(message),
      });
    const now = new Date();
    await Promise.all([task().run(now), task().run(now)]);
    const deleted = logged.map((m) => Number(/deleted (\d+) output/.exec(m)![1]));
    expect(deleted.reduce((a, b) => a + b, 0)).toBe(4);
    expect(logged.every((m) => m.includes("object(s) queued"))).toBe(true);
    expect(
      (await sql<{ n: number }>`select count(*)::int as n from output_object_deletions where reason = 'retention'`.execute(h.db)).rows[0]!
        .n,
    ).toBe(3);
    expect(
      (await sql<{ n: number }>`select count(*)::int as n from outputs where created_at < now() - interval '30 days'`.execute(h.db))
        .rows[0]!.n,
    ).toBe(7); // the latest of each partition, however old: big's 3, small's 3 and gate's 1
  });
});

describePostgres("an asset's own output retention", () => {
  let h: Harness;
  const superseded = async (assetKey: string) =>
    (
      await sql<{ n: number }>`
        select count(*)::int as n from outputs o
        where o.asset_key = ${assetKey} and not exists (select 1 from partition_status ps where ps.asset_key = o.asset_key
                            and ps.partition_key = o.partition_key and ps.last_run_id = o.run_id)`.execute(h.db)
    ).rows[0]!.n;

  beforeAll(async () => {
    h = await Harness.create({ files: { "ret.ts": defs("/nonexistent") } });
  }, 180_000);

  afterAll(() => h?.stop());

  it("deletes the outputs of an asset with `retention.outputs` past it, with no default, and keeps the others'", async () => {
    for (let i = 0; i < 2; i++) {
      const run = await h.waitForRun(await h.launch(["ret/big", "ret/small"], { from: "2025-03-01", to: "2025-03-02" }), 60_000);
      expect(run.status, await h.describe([run.id])).toBe("success");
    }
    expect(await superseded("ret/small")).toBe(2);
    expect(await superseded("ret/big")).toBe(2);
    const task = new OutputRetentionTask({ store: new PgOutputRetentionStore(h.db), retentionMs: undefined, graphs: h.graphs });
    // 10 days old: within small's 20 days.
    await sql`update outputs set created_at = now() - interval '10 days'`.execute(h.db);
    await task.run(new Date());
    expect(await superseded("ret/small")).toBe(2);
    // 25 days old: past small's own retention; big has none, and there is no default.
    await sql`update outputs set created_at = now() - interval '25 days'`.execute(h.db);
    await new OutputRetentionTask({ store: new PgOutputRetentionStore(h.db), retentionMs: undefined, graphs: h.graphs }).run(new Date());
    expect(await superseded("ret/small")).toBe(0);
    expect(await superseded("ret/big")).toBe(2);
    // With a default of 30 days, big's go past it; small's own 20 days still applies to small.
    await sql`update outputs set created_at = now() - interval '31 days' where asset_key = 'ret/big'`.execute(h.db);
    await new OutputRetentionTask({ store: new PgOutputRetentionStore(h.db), retentionMs: 30 * DAY, graphs: h.graphs }).run(new Date());
    expect(await superseded("ret/big")).toBe(0);
    // The latest materialisation's outputs stay, however old.
    expect((await sql<{ n: number }>`select count(*)::int as n from outputs`.execute(h.db)).rows[0]!.n).toBe(4);
  }, 120_000);
});

describe("TRIBUTARY_OUTPUT_RETENTION", () => {
  const retention = (value: string | undefined) => resolveSettings({}, { TRIBUTARY_OUTPUT_RETENTION: value }).outputRetentionMs;

  it("is unset by default (outputs are kept), and reads durations as people write them", () => {
    expect(retention(undefined)).toBeUndefined();
    expect(retention("")).toBeUndefined();
    expect(retention("30d")).toBe(30 * DAY);
    expect(retention("12h")).toBe(DAY / 2);
  });

  it("refuses a bad value, naming the variable", () => {
    expect(() => retention("a month")).toThrow(
      'environment variable TRIBUTARY_OUTPUT_RETENTION: "a month" is not a duration; write e.g. 30d or 12h',
    );
    expect(() => retention("10m")).toThrow('environment variable TRIBUTARY_OUTPUT_RETENTION: "10m" must be between 1h and 3650d');
    expect(() => retention("5000d")).toThrow("must be between 1h and 3650d");
  });
});

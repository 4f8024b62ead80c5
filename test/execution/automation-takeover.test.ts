import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { PgAutomationStore, type PartitionStates } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { automationSupport } from "./automation-support.js";
import { Harness } from "./harness.js";

// src (external, daily) → clean (eager); an unpartitioned eager asset; one with dynamic partitions.
const defs = (srcStart = "2025-03-01") => `
import { asset, daily, dynamicPartitions, eager, onMissing } from "tributary";
export const src = asset({ key: "tk/src", partitions: daily({ start: "${srcStart}" }) }, async (ctx) => ctx.partition.key);
export const clean = asset({ key: "tk/clean", partitions: daily({ start: "2025-03-01" }), automation: eager(), deps: { src } },
  async (_ctx, { src }) => "clean " + src);
export const total = asset({ key: "tk/total", automation: eager() }, async () => 1);
export const profile = asset({ key: "tk/profile", partitions: dynamicPartitions("customers"), automation: onMissing() }, async (ctx) => ctx.partition.key);
`;

/** The real store, recording which assets each read of partition_status asked for (undefined: every asset). */
class RecordingStore extends PgAutomationStore {
  readonly rowReads: (readonly string[] | undefined)[] = [];
  override partitionStates(assetKeys?: readonly string[]): Promise<PartitionStates> {
    this.rowReads.push(assetKeys && [...assetKeys].sort());
    return super.partitionStates(assetKeys);
  }
}

describePostgres("automation: a reconciler taking the lease over reads the partition summaries stored with the cursor", () => {
  let h: Harness | undefined;
  const support = automationSupport(() => h!);
  const { report } = support;
  afterEach(async () => {
    await support.close();
    await h?.stop();
    h = undefined;
  });

  /** An automation task on its own connection, with the store recording its reads of partition_status. */
  const task = async (owner: string, options: { maxSummaryRanges?: number } = {}) => {
    let store!: RecordingStore;
    const task = await support.task(owner, { ...options, store: (db) => (store = new RecordingStore(db)) });
    return { store, task };
  };
  const summaries = async () =>
    Object.fromEntries(
      (
        await sql<{ asset_key: string; materialized: unknown; failed: unknown }>`
          select asset_key, materialized, failed from automation_partitions order by asset_key`.execute(h!.db)
      ).rows.map((r) => [r.asset_key, { materialized: r.materialized, failed: r.failed }]),
    );
  const cleanSteps = async () =>
    (
      await sql<{ partition_key: string }>`select partition_key from steps where asset_key = 'tk/clean' order by partition_key`.execute(
        h!.db,
      )
    ).rows.map((r) => r.partition_key);

  it("loads each asset from its summary, reads partition_status only for what has none (dynamic, changed or unreadable), and decides as before", async () => {
    h = await Harness.create({ files: { "takeover.ts": defs() }, start: false });
    let clock = Date.parse("2025-03-20T12:00:00Z");
    const a = await task("rec-a");

    // The first holder has no summaries to start from: every asset comes from partition_status, in one read.
    const first = await a.task.tick(new Date(clock));
    expect(first?.loaded).toEqual({ assets: 4, fromPartitionStatus: 4 });
    expect(a.store.rowReads).toEqual([undefined]);
    for (const day of ["2025-03-10", "2025-03-11", "2025-03-12", "2025-03-14"]) await report("tk/src", day);
    await report("tk/total");
    for (let i = 0; i < 50 && (await cleanSteps()).length < 4; i++) await a.task.tick(new Date((clock += 10)));
    expect(await cleanSteps()).toEqual(["2025-03-10", "2025-03-11", "2025-03-12", "2025-03-14"]);
    // Stored with the cursor: the partitions each asset holds, as key ranges; none for the dynamic asset.
    expect(await summaries()).toEqual({
      "tk/clean": { materialized: [], failed: [] },
      "tk/src": {
        materialized: [
          ["2025-03-10", "2025-03-12"],
          ["2025-03-14", "2025-03-14"],
        ],
        failed: [],
      },
      "tk/total": { materialized: [["", ""]], failed: [] },
    });

    // A row written behind automation's back (no event) is not read by a holder that takes over: the summary is.
    await sql`insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, materialized_at, updated_at)
              select 'tk/src', '2025-03-16', 'materialized', max(id), now(), now() from events`.execute(h.db);
    const b = await task("rec-b");
    clock += 60_000;
    const takeover = await b.task.tick(new Date(clock));
    expect(takeover?.loaded).toEqual({ assets: 4, fromPartitionStatus: 1 });
    expect(b.store.rowReads).toEqual([["tk/profile"]]);
    expect(await cleanSteps()).toEqual(["2025-03-10", "2025-03-11", "2025-03-12", "2025-03-14"]);
    // It goes on from the summary and the events after the cursor: a new upstream partition is requested once.
    await report("tk/src", "2025-03-13");
    for (let i = 0; i < 50 && (await cleanSteps()).length < 5; i++) await b.task.tick(new Date((clock += 10)));
    expect(await cleanSteps()).toEqual(["2025-03-10", "2025-03-11", "2025-03-12", "2025-03-13", "2025-03-14"]);
    expect((await summaries())["tk/src"]!.materialized).toEqual([["2025-03-10", "2025-03-14"]]);

    // A summary this code cannot read, and an asset whose partitions definition changed, come from partition_status.
    await sql`update automation_partitions set materialized = '{"not": "ranges"}' where asset_key = 'tk/total'`.execute(h.db);
    await h.redefine({ "takeover.ts": defs("2025-02-01") });
    await h.graphs.current({ fresh: true });
    const c = await task("rec-c");
    clock += 60_000;
    const reloaded = await c.task.tick(new Date(clock));
    expect(reloaded?.loaded).toEqual({ assets: 4, fromPartitionStatus: 3 });
    expect(c.store.rowReads.at(-1)).toEqual(["tk/profile", "tk/src", "tk/total"]);
    // Read from partition_status, src now includes the row written behind automation's back, and both are stored again.
    expect(await summaries()).toMatchObject({
      "tk/src": {
        materialized: [
          ["2025-03-10", "2025-03-14"],
          ["2025-03-16", "2025-03-16"],
        ],
      },
      "tk/total": { materialized: [["", ""]] },
    });
    expect(await cleanSteps()).toEqual(["2025-03-10", "2025-03-11", "2025-03-12", "2025-03-13", "2025-03-14"]);

    // An asset the definitions no longer have: its summary goes with the next commit.
    await h.redefine({ "takeover.ts": defs("2025-02-01").replace(/export const total = .*\n/, "") });
    await h.graphs.current({ fresh: true });
    const pruned = await c.task.tick(new Date((clock += 10)));
    expect(pruned?.loaded).toEqual({ assets: 3, fromPartitionStatus: 1 });
    expect(Object.keys(await summaries())).toEqual(["tk/clean", "tk/src"]);
  });

  it("stores no summary of an asset whose partitions take too many ranges, and drops the one it had", async () => {
    h = await Harness.create({ files: { "takeover.ts": defs() }, start: false });
    let clock = Date.parse("2025-03-20T12:00:00Z");
    const a = await task("rec-a", { maxSummaryRanges: 1 });
    await a.task.tick(new Date(clock));
    await report("tk/src", "2025-03-10");
    for (let i = 0; i < 50 && (await cleanSteps()).length < 1; i++) await a.task.tick(new Date((clock += 10)));
    expect((await summaries())["tk/src"]).toEqual({ materialized: [["2025-03-10", "2025-03-10"]], failed: [] });
    // A second range: more than this holder stores, so the stored one (now behind the cursor) goes.
    await report("tk/src", "2025-03-12");
    for (let i = 0; i < 50 && (await cleanSteps()).length < 2; i++) await a.task.tick(new Date((clock += 10)));
    expect(await cleanSteps()).toEqual(["2025-03-10", "2025-03-12"]);
    expect(Object.keys(await summaries())).toEqual(["tk/clean", "tk/total"]);
    // The next holder reads that asset from partition_status.
    const b = await task("rec-b");
    clock += 60_000;
    expect((await b.task.tick(new Date(clock)))?.loaded).toEqual({ assets: 4, fromPartitionStatus: 2 });
    expect(b.store.rowReads).toEqual([["tk/profile", "tk/src"]]);
  });
});

import { afterEach, expect, it } from "vitest";
import { partitionStatusSummary, reportAssetEvent } from "../../src/api/index.js";
import { PgEventStore, PgPartitionStatusStore, type PartitionStatusRecord } from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";

// up (daily) → down (daily, identity) and → gappy (fails on 2025-01-05); plain is unpartitioned.
const defs = (downVersion: string) => `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-01-11" });
export const up = asset({ key: "st/up", partitions: days, codeVersion: "u1" }, async (ctx) => ({ day: ctx.partition.key }));
export const down = asset({ key: "st/down", partitions: days, deps: { up }, codeVersion: ${JSON.stringify(downVersion)} },
  async (_ctx, { up }) => ({ from: up }));
export const gappy = asset({ key: "st/gappy", partitions: days, deps: { up }, retries: 0 }, async (ctx, { up }) => {
  if (ctx.partition.key === "2025-01-05") throw new Error("no data on the 5th");
  return up;
});
export const plain = asset({ key: "st/plain", codeVersion: "p1" }, async () => 1);
`;

describePostgres("partition status: staleness, counts and ranges", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  const store = () => new PgPartitionStatusStore(h!.db);
  const version = async (assetKey: string) => ({
    assetKey,
    codeVersion: (await h!.graphs.current({ fresh: true })).graph.require(assetKey).codeVersion,
  });
  const states = async (assetKey: string, keys: string[]) => store().partitionStates(await version(assetKey), keys);
  const state = async (assetKey: string, key: string): Promise<PartitionStatusRecord> => (await states(assetKey, [key])).get(key)!;
  const run = async (keys: string[], selection: { partition: string } | { from: string; to: string } | Record<string, never>) =>
    h!.waitForRun(await h!.launch(keys, selection));
  const summary = async (assetKey: string, withRanges: boolean) => {
    const { graph } = await h!.graphs.current({ fresh: true });
    const asset = graph.require(assetKey);
    const s = store();
    return partitionStatusSummary(asset, {
      store: s,
      counts: async () => (await s.countByStatus([{ assetKey, codeVersion: asset.codeVersion }])).get(assetKey)!,
      withRanges,
      now: new Date(),
      dynamicKeys: async () => [],
    });
  };

  it("an upstream materialised again makes its readers stale, until they run again; data versions follow inputs, not runs", async () => {
    h = await Harness.create({ files: { "st.ts": defs("d1") } });
    expect((await run(["st/up", "st/down"], { from: "2025-01-01", to: "2025-01-03" })).status).toBe("success");
    const keys = ["2025-01-01", "2025-01-02", "2025-01-03"];
    const before = await states("st/down", keys);
    expect([...before.values()].map((s) => s.status)).toEqual(["materialized", "materialized", "materialized"]);
    expect(await store().staleKeys([await version("st/down")])).toEqual(new Map([["st/down", []]]));
    const upBefore = await state("st/up", "2025-01-02");

    expect((await run(["st/up"], { partition: "2025-01-02" })).status).toBe("success");
    const upAfter = await state("st/up", "2025-01-02");
    expect(upAfter.status).toBe("materialized");
    // Same code version, same output: the root's data version stays.
    expect(upAfter.dataVersion).toBe(upBefore.dataVersion);
    expect(upAfter.lastMaterializationEventId).toBeGreaterThan(upBefore.lastMaterializationEventId!);

    const stale = await state("st/down", "2025-01-02");
    expect(stale.status).toBe("stale");
    expect(stale.staleReasons).toEqual([
      {
        kind: "upstream_updated",
        upstreamAssetKey: "st/up",
        upstreamPartitionKey: "2025-01-02",
        readEventId: upBefore.lastMaterializationEventId,
        latestEventId: upAfter.lastMaterializationEventId,
      },
    ]);
    expect((await state("st/down", "2025-01-01")).status).toBe("materialized");
    expect((await store().staleKeys([await version("st/down"), await version("st/up")])).get("st/down")).toEqual(["2025-01-02"]);
    expect((await store().countByStatus([await version("st/down")])).get("st/down")).toEqual({
      materialized: 2,
      stale: 1,
      failed: 0,
      materializing: 0,
      timed_out: 0,
      erased: 0,
    });

    expect((await run(["st/down"], { partition: "2025-01-02" })).status).toBe("success");
    const fresh = await state("st/down", "2025-01-02");
    expect(fresh).toMatchObject({ status: "materialized", staleReasons: [] });
    // Same code version, inputs of the same data versions: the same data version as before.
    expect(fresh.dataVersion).toBe(before.get("2025-01-02")!.dataVersion);
    expect(fresh.dataVersion).not.toBe(before.get("2025-01-01")!.dataVersion);
  });

  it("an external event on an upstream partition makes its readers stale", async () => {
    h = await Harness.create({ files: { "st.ts": defs("d1") } });
    expect((await run(["st/up", "st/down"], { from: "2025-01-01", to: "2025-01-02" })).status).toBe("success");
    const read = await state("st/down", "2025-01-02");
    const services = { graphs: h.graphs, events: new PgEventStore(h.db), definitions: h.definitions };
    const event = await reportAssetEvent(services, { assetKey: "st/up", partition: "2025-01-02" }, new Date());

    const stale = await state("st/down", "2025-01-02");
    expect(stale.status).toBe("stale");
    expect(stale.staleReasons).toMatchObject([{ kind: "upstream_updated", upstreamAssetKey: "st/up", latestEventId: event.eventId }]);
    expect((await state("st/down", "2025-01-01")).status).toBe("materialized");

    // The reported partition has no data version: the event id stands in for it, so the rerun's version changes.
    const rerun = await run(["st/down"], { partition: "2025-01-02" });
    expect(rerun.status).toBe("success");
    const fresh = await state("st/down", "2025-01-02");
    expect(fresh.status).toBe("materialized");
    expect(fresh.dataVersion).not.toBe(read.dataVersion);
  });

  it("a changed code version makes every partition materialised with the old one stale", async () => {
    h = await Harness.create({ files: { "st.ts": defs("d1") } });
    expect((await run(["st/up", "st/down"], { from: "2025-01-01", to: "2025-01-02" })).status).toBe("success");
    await h.redefine({ "st.ts": defs("d2") });
    const down = await states("st/down", ["2025-01-01", "2025-01-02", "2025-01-03"]);
    expect(down.get("2025-01-01")).toMatchObject({
      status: "stale",
      staleReasons: [{ kind: "code_version_changed", materializedWith: "d1", current: "d2" }],
    });
    expect(down.get("2025-01-02")?.status).toBe("stale");
    expect(down.get("2025-01-03")?.status).toBe("missing");
    expect((await state("st/up", "2025-01-01")).status).toBe("materialized");
    expect((await store().staleKeys([await version("st/down")])).get("st/down")).toEqual(["2025-01-01", "2025-01-02"]);
    // Compared with the code version the caller names: the old one finds nothing stale.
    expect((await store().staleKeys([{ assetKey: "st/down", codeVersion: "d1" }])).get("st/down")).toEqual([]);
  });

  it("counts and ranges over a partition space with gaps, failures, a stale and an in-flight partition", async () => {
    h = await Harness.create({ files: { "st.ts": defs("d1") } });
    expect((await run(["st/up"], { from: "2025-01-01", to: "2025-01-08" })).status).toBe("success");
    expect((await run(["st/gappy"], { from: "2025-01-01", to: "2025-01-03" })).status).toBe("success");
    expect((await run(["st/gappy"], { partition: "2025-01-05" })).status).toBe("failed");
    expect((await run(["st/gappy"], { from: "2025-01-06", to: "2025-01-07" })).status).toBe("success");
    expect((await run(["st/up"], { partition: "2025-01-07" })).status).toBe("success");
    // A run whose step cannot read its inputs yet: its partition is materializing.
    h.nodes[0]!.backend.pauseInputs();
    const inflight = await h.launch(["st/gappy"], { partition: "2025-01-08" });
    await h.until(async () => (await state("st/gappy", "2025-01-08")).status === "materializing", 15_000, "the 8th to be materializing");

    const full = await summary("st/gappy", true);
    expect(full.ranges).toEqual([
      { status: "materialized", from: "2025-01-01", to: "2025-01-03", count: 3 },
      { status: "missing", from: "2025-01-04", to: "2025-01-04", count: 1 },
      { status: "failed", from: "2025-01-05", to: "2025-01-05", count: 1 },
      { status: "materialized", from: "2025-01-06", to: "2025-01-06", count: 1 },
      { status: "stale", from: "2025-01-07", to: "2025-01-07", count: 1 },
      { status: "materializing", from: "2025-01-08", to: "2025-01-08", count: 1 },
      { status: "missing", from: "2025-01-09", to: "2025-01-10", count: 2 },
    ]);
    const counts = { missing: 3, materializing: 1, materialized: 4, failed: 1, stale: 1, timed_out: 0, erased: 0, total: 10 };
    expect(full.counts).toEqual(counts);
    // The aggregate-only path agrees.
    const quick = await summary("st/gappy", false);
    expect(quick).toEqual({ counts });
    // The listing's view of single partitions agrees too.
    const page = await states("st/gappy", ["2025-01-04", "2025-01-05", "2025-01-07", "2025-01-08"]);
    expect([...page.values()].map((s) => s.status)).toEqual(["missing", "failed", "stale", "materializing"]);

    h.nodes[0]!.backend.resumeInputs();
    expect((await h.waitForRun(inflight)).status).toBe("success");
    expect((await summary("st/gappy", false)).counts).toMatchObject({ materializing: 0, materialized: 5 });

    // An unpartitioned asset is one partition with the key "".
    expect(await summary("st/plain", true)).toEqual({
      counts: { missing: 1, materializing: 0, materialized: 0, failed: 0, stale: 0, timed_out: 0, erased: 0, total: 1 },
      ranges: [{ status: "missing", from: "", to: "", count: 1 }],
    });
    expect((await run(["st/plain"], {})).status).toBe("success");
    expect((await summary("st/plain", true)).ranges).toEqual([{ status: "materialized", from: "", to: "", count: 1 }]);
  });
});

import { describe, expect, it } from "vitest";
import { allPartitions, asset, daily, dep, hourly, timeWindow, weekly } from "../../src/index.js";
import { partitionSpace, PartitionSubset, UNPARTITIONED } from "../../src/partitions/index.js";
import {
  BackfillChunks,
  parseLayout,
  planBackfill,
  serializeLayout,
  type BackfillPlanRequest,
  type PartitionSelection,
} from "../../src/planner/index.js";
import { AssetGraph } from "../../src/graph/index.js";
import { graphOf, materializedKeys, noop, nothing } from "./helpers.js";

const NOW = new Date("2025-04-15T00:00:00Z");
const d = daily({ start: "2025-01-01" });
const w = weekly({ start: "2025-01-06" });

//  config ──► orders ──► clean ──(last 7 days)──► revenue_7d ──(all)──► summary
//                └──(weeks)──► weekly ──(its week)──► weekly_share (daily)
const config = asset({ key: "config" }, noop);
const orders = asset({ key: "orders", partitions: d, deps: { config } }, noop);
const clean = asset({ key: "clean", partitions: d, deps: { orders } }, noop);
const revenue7d = asset({ key: "revenue_7d", partitions: d, deps: { clean: dep(clean, timeWindow({ startOffset: -6 })) } }, noop);
const summary = asset({ key: "summary", deps: { revenue: dep(revenue7d, allPartitions()) } }, noop);
const weeklyOrders = asset({ key: "weekly", partitions: w, deps: { orders: dep(orders, timeWindow()) } }, noop);
const share = asset({ key: "weekly_share", partitions: d, deps: { orders, week: dep(weeklyOrders, timeWindow()) } }, noop);
const hours = asset({ key: "hours", partitions: hourly({ start: "2025-01-01" }) }, noop);
const graph = graphOf(config, orders, clean, revenue7d, summary, weeklyOrders, share, hours);

const range = (from: string, to: string): PartitionSelection => ({ kind: "range", from, to });

function plan(overrides: Partial<BackfillPlanRequest> & Pick<BackfillPlanRequest, "assets">) {
  return planBackfill({ graph, version: 1, now: NOW, materialized: nothing, includeUpstream: false, maxPartitionsPerRun: 1, ...overrides });
}

/** `asset@key` per chunk, in chunk order. */
function chunkNames(g: AssetGraph, chunks: BackfillChunks): string[][] {
  const out: string[][] = [];
  for (let k = 0; k < chunks.count; k++) {
    const names: string[] = [];
    for (const [key, subset] of chunks.chunk(k)) {
      const spec = g.require(key).partitions;
      if (spec === null) names.push(`${key}@`);
      else for (const p of partitionSpace(spec).keys(subset)) names.push(`${key}@${p}`);
    }
    out.push(names);
  }
  return out;
}

/** Every target in exactly one chunk, and no chunk reads a target of a later chunk. */
function expectConsistent(g: AssetGraph, chunks: BackfillChunks, targets: ReadonlyMap<string, PartitionSubset>): void {
  const seen = new Map<string, PartitionSubset>();
  for (let k = 0; k < chunks.count; k++) {
    const chunk = chunks.chunk(k);
    for (const [key, reads] of chunks.readsOutside(chunk)) {
      const ofTargets = reads.intersection(targets.get(key) ?? PartitionSubset.EMPTY);
      expect(ofTargets.isSubsetOf(seen.get(key) ?? PartitionSubset.EMPTY), `chunk ${k} reads ${key} ${ofTargets} made later`).toBe(true);
    }
    for (const [key, subset] of chunk) {
      const before = seen.get(key) ?? PartitionSubset.EMPTY;
      expect(subset.intersection(before).isEmpty()).toBe(true);
      seen.set(key, before.union(subset));
    }
  }
  for (const [key, subset] of targets) expect(seen.get(key)?.equals(subset), key).toBe(true);
  expect([...seen.keys()].every((k) => targets.has(k))).toBe(true);
  void g;
}

describe("planBackfill + BackfillChunks: cutting a backfill into runs", () => {
  it("one partition per run: oldest first, every selected asset of that day in its run", () => {
    const p = plan({
      assets: ["orders", "clean"],
      partitions: range("2025-03-01", "2025-03-04"),
      materialized: materializedKeys(graph, { config: [""] }),
    });
    expect(p.missing).toEqual([]);
    expect(p.partitionCount).toBe(8);
    expect(p.chunkCount).toBe(4);
    expect(p.layout.axis).toEqual(["orders", "clean"]);
    const chunks = new BackfillChunks(graph, p.layout, undefined, NOW);
    expect(chunkNames(graph, chunks)).toEqual([
      ["orders@2025-03-01", "clean@2025-03-01"],
      ["orders@2025-03-02", "clean@2025-03-02"],
      ["orders@2025-03-03", "clean@2025-03-03"],
      ["orders@2025-03-04", "clean@2025-03-04"],
    ]);
    expectConsistent(graph, chunks, p.layout.targets);
  });

  it("maxPartitionsPerRun puts that many partitions in one run; the last run takes the rest", () => {
    const p = plan({
      assets: ["orders"],
      partitions: range("2025-03-01", "2025-03-10"),
      materialized: materializedKeys(graph, { config: [""] }),
      maxPartitionsPerRun: 4,
    });
    expect(p.chunkCount).toBe(3);
    const chunks = new BackfillChunks(graph, p.layout, undefined, NOW);
    expect(chunkNames(graph, chunks).map((c) => c.length)).toEqual([4, 4, 2]);
    expect(chunkNames(graph, chunks)[2]).toEqual(["orders@2025-03-09", "orders@2025-03-10"]);
    // One big run for a warehouse that prefers it.
    const big = plan({
      assets: ["orders"],
      partitions: range("2025-01-01", "2025-03-31"),
      materialized: materializedKeys(graph, { config: [""] }),
      maxPartitionsPerRun: 365,
    });
    expect(big.chunkCount).toBe(1);
    expect(new BackfillChunks(graph, big.layout, undefined, NOW).chunk(0).get("orders")!.count()).toBe(90);
  });

  it("a weekly rollup of a daily range: each week joins the run of its last day, after every day it reads", () => {
    const p = plan({
      assets: ["orders", "weekly"],
      partitions: range("2025-01-06", "2025-01-19"),
      materialized: materializedKeys(graph, { config: [""] }),
    });
    expect(p.missing).toEqual([]);
    expect(p.layout.axis).toEqual(["orders"]);
    const chunks = new BackfillChunks(graph, p.layout, undefined, NOW);
    const names = chunkNames(graph, chunks);
    expect(names).toHaveLength(14);
    expect(names[5]).toEqual(["orders@2025-01-11"]);
    expect(names[6]).toEqual(["orders@2025-01-12", "weekly@2025-01-06"]);
    expect(names[13]).toEqual(["orders@2025-01-19", "weekly@2025-01-13"]);
    // The Sunday run reads Monday…Saturday from the six runs before it.
    const reads = chunks.readsOutside(chunks.chunk(6));
    expect([...partitionSpace(d).keys(reads.get("orders")!)]).toEqual([
      "2025-01-06",
      "2025-01-07",
      "2025-01-08",
      "2025-01-09",
      "2025-01-10",
      "2025-01-11",
    ]);
    expectConsistent(graph, chunks, p.layout.targets);
  });

  it("a daily asset reading its week is pushed to the week's run, never before the week exists", () => {
    const p = plan({
      assets: ["orders", "weekly", "weekly_share"],
      partitions: range("2025-01-06", "2025-01-12"),
      materialized: materializedKeys(graph, { config: [""] }),
    });
    const chunks = new BackfillChunks(graph, p.layout, undefined, NOW);
    const names = chunkNames(graph, chunks);
    expect(names.slice(0, 6)).toEqual([0, 1, 2, 3, 4, 5].map((i) => [`orders@2025-01-${String(6 + i).padStart(2, "0")}`]));
    expect(names[6]).toEqual([
      "orders@2025-01-12",
      "weekly@2025-01-06",
      ...["06", "07", "08", "09", "10", "11", "12"].map((x) => `weekly_share@2025-01-${x}`),
    ]);
    expectConsistent(graph, chunks, p.layout.targets);
  });

  it("startOffset -6: each run reads the six days before it from earlier runs; an all-partitions report goes last, an unpartitioned input first", () => {
    const p = plan({
      assets: ["config", "orders", "clean", "revenue_7d", "summary"],
      partitions: range("2025-03-01", "2025-03-05"),
      materialized: materializedKeys(graph, {
        clean: ["2025-02-23", "2025-02-24", "2025-02-25", "2025-02-26", "2025-02-27", "2025-02-28"],
        revenue_7d: partitionKeys("2025-01-01", "2025-04-14"),
      }),
    });
    expect(p.missing).toEqual([]);
    const chunks = new BackfillChunks(graph, p.layout, undefined, NOW);
    const names = chunkNames(graph, chunks);
    expect(names[0]).toEqual(["config@", "orders@2025-03-01", "clean@2025-03-01", "revenue_7d@2025-03-01"]);
    expect(names[4]).toEqual(["orders@2025-03-05", "clean@2025-03-05", "revenue_7d@2025-03-05", "summary@"]);
    const reads = chunks.readsOutside(chunks.chunk(2));
    expect([...partitionSpace(d).keys(reads.get("clean")!)]).toEqual([
      "2025-02-25",
      "2025-02-26",
      "2025-02-27",
      "2025-02-28",
      "2025-03-01",
      "2025-03-02",
    ]);
    expect(reads.get("config")).toEqual(UNPARTITIONED);
    expectConsistent(graph, chunks, p.layout.targets);
  });

  it("blocked: partitions reading an upstream partition that is neither planned nor there, transitively within the run", () => {
    const p = plan({
      assets: ["orders", "clean", "revenue_7d"],
      partitions: range("2025-03-01", "2025-03-03"),
      materialized: () => PartitionSubset.range(0, 200),
    });
    const chunks = new BackfillChunks(graph, p.layout, undefined, NOW);
    const third = chunks.chunk(2);
    const space = partitionSpace(d);
    const failedDay = space.subset(["2025-03-01"]);
    // clean 2025-03-01 failed in the first run (not available); everything else is.
    const available = (key: string) =>
      key === "clean" ? PartitionSubset.range(0, 200).difference(failedDay) : PartitionSubset.range(0, 200);
    const blocked = chunks.blocked(third, (key) => available(key).difference(third.get(key) ?? PartitionSubset.EMPTY));
    expect([...blocked.keys()]).toEqual(["revenue_7d"]);
    expect([...space.keys(blocked.get("revenue_7d")!)]).toEqual(["2025-03-03"]);
    // An upstream of the run itself missing blocks the whole chain after it.
    const first = chunks.chunk(0);
    const noConfig = chunks.blocked(first, (key) => (key === "config" ? PartitionSubset.EMPTY : PartitionSubset.EMPTY));
    expect([...noConfig.keys()]).toEqual(["orders", "clean", "revenue_7d"]);
    // Partitions of the run that are already there are not blocked (they are not run).
    const covered = chunks.blocked(first, (key) =>
      key === "orders" ? first.get("orders")! : key === "clean" ? PartitionSubset.range(0, 200) : PartitionSubset.EMPTY,
    );
    expect([...covered.keys()]).toEqual([]);
  });

  it("bad input: unrelated definitions, a range partly outside the definition, an unknown asset, upstream partitions not there", () => {
    expect(() => plan({ assets: ["orders", "hours"], partitions: range("2025-03-01", "2025-03-02") })).toThrow(
      expect.objectContaining({
        code: "BACKFILL_UNRELATED_PARTITIONS",
        message: expect.stringMatching(/"hours" \(hourly.*"orders" \(daily.*Backfill them separately/),
      }),
    );
    expect(() => plan({ assets: ["orders"], partitions: range("2025-04-10", "2025-04-20") })).toThrow(
      expect.objectContaining({ code: "PARTITION_NOT_EXISTING", message: expect.stringMatching(/"2025-01-01" … "2025-04-14" \(104\)/) }),
    );
    expect(() => plan({ assets: ["orders"], partitions: range("2024-12-20", "2025-01-03") })).toThrow(
      expect.objectContaining({ name: "PartitionError", message: expect.stringMatching(/orders.*"2025-01-01" … "2025-04-14"/s) }),
    );
    expect(() => plan({ assets: ["ordres"], partitions: range("2025-03-01", "2025-03-02") })).toThrow(
      expect.objectContaining({ code: "GRAPH_UNKNOWN_ASSET", message: expect.stringMatching(/orders/) }),
    );
    expect(() => plan({ assets: ["orders"], partitions: range("2025-03-01", "2025-03-02"), maxPartitionsPerRun: 0 })).toThrow(
      expect.objectContaining({ code: "INPUT_INVALID" }),
    );
    const lacking = plan({ assets: ["clean"], partitions: range("2025-03-01", "2025-03-02") });
    expect(lacking.missing).toMatchObject([{ assetKey: "orders", neededBy: "clean", reason: "not_materialized", count: 2 }]);
    const withUpstream = plan({ assets: ["clean"], partitions: range("2025-03-01", "2025-03-02"), includeUpstream: true });
    expect(withUpstream.missing).toEqual([]);
    expect([...withUpstream.layout.targets.keys()]).toEqual(["config", "orders", "clean"]);
    const chunks = new BackfillChunks(graph, withUpstream.layout, undefined, NOW);
    expect(chunkNames(graph, chunks)).toEqual([
      ["config@", "orders@2025-03-01", "clean@2025-03-01"],
      ["orders@2025-03-02", "clean@2025-03-02"],
    ]);
  });

  it("paces the upstream partitions --include-upstream adds: the finest definition they bring is the axis", () => {
    const clicks = asset({ key: "clicks", partitions: hourly({ start: "2025-01-01" }) }, noop);
    const daily_ = asset({ key: "daily_clicks", partitions: d, deps: { clicks: dep(clicks, timeWindow()) } }, noop);
    const g = graphOf(clicks, daily_);
    const base = {
      graph: g,
      version: 1,
      now: NOW,
      materialized: nothing,
      assets: ["daily_clicks"],
      partitions: range("2025-02-01", "2025-02-28"),
    };
    const one = planBackfill({ ...base, includeUpstream: true, maxPartitionsPerRun: 1 });
    expect(one.partitionCount).toBe(28 + 672);
    expect(one.layout.axis).toEqual(["clicks"]);
    const chunks = new BackfillChunks(g, one.layout, undefined, NOW);
    expect(chunks.count).toBe(672);
    let most = 0;
    for (let k = 0; k < chunks.count; k++) {
      let steps = 0;
      for (const subset of chunks.chunk(k).values()) steps += subset.count();
      most = Math.max(most, steps);
    }
    expect(most).toBe(2); // an hour, and the day it completes
    const daily24 = new BackfillChunks(g, planBackfill({ ...base, includeUpstream: true, maxPartitionsPerRun: 24 }).layout, undefined, NOW);
    expect(daily24.count).toBe(28);
    expect(chunkNames(g, daily24)[0]).toEqual([
      ...Array.from({ length: 24 }, (_, h) => `clicks@2025-02-01-${String(h).padStart(2, "0")}:00`),
      "daily_clicks@2025-02-01",
    ]);
    // Without upstream partitions to add, the selection's own definition paces the backfill.
    const materialized = materializedKeys(g, {
      clicks: [...partitionSpace(hourly({ start: "2025-01-01" })).keys(PartitionSubset.range(0, 24 * 90))],
    });
    const own = planBackfill({ ...base, includeUpstream: true, materialized, maxPartitionsPerRun: 1 });
    expect(own.layout.axis).toEqual(["daily_clicks"]);
    expect(own.chunkCount).toBe(28);
  });

  it("re-running failures: explicit subsets keep the original axis", () => {
    const space = partitionSpace(d);
    const subsets = new Map([
      ["orders", space.subset(["2025-03-02"])],
      ["weekly", partitionSpace(w).subset(["2025-03-03"])],
    ]);
    const p = plan({ assets: [...subsets.keys()], subsets, materialized: () => PartitionSubset.range(0, 200) });
    expect(p.layout.axis).toEqual(["orders"]);
    // The week reads no day of the backfill (its days are materialised): nothing holds it back.
    expect(chunkNames(graph, new BackfillChunks(graph, p.layout, undefined, NOW))).toEqual([["orders@2025-03-02", "weekly@2025-03-03"]]);
    expect(p.partitionCount).toBe(2);
  });

  it("the stored layout round-trips, and a changed partitions definition is refused", () => {
    const p = plan({
      assets: ["orders", "weekly"],
      partitions: range("2025-01-06", "2025-01-19"),
      materialized: materializedKeys(graph, { config: [""] }),
      maxPartitionsPerRun: 3,
    });
    const stored = JSON.parse(JSON.stringify(serializeLayout(p.layout, graph, 1)));
    expect(stored.assets.map((a: { subset: string }) => a.subset)).toEqual(["5-19", "0-2"]);
    const back = parseLayout(stored, 3, graph);
    expect([...back.targets].map(([k, s]) => [k, s.serialize()])).toEqual([...p.layout.targets].map(([k, s]) => [k, s.serialize()]));
    const changed = graphOf(
      config,
      asset({ key: "orders", partitions: daily({ start: "2025-01-02" }), deps: { config } }, noop),
      weeklyOrders,
    );
    expect(() => parseLayout(stored, 3, changed)).toThrow(
      expect.objectContaining({ code: "BACKFILL_DEFINITIONS_CHANGED", message: expect.stringMatching(/"orders"/) }),
    );
    const gone = graphOf(config, orders);
    expect(() => parseLayout(stored, 3, gone)).toThrow(
      expect.objectContaining({ code: "BACKFILL_DEFINITIONS_CHANGED", message: expect.stringMatching(/"weekly"/) }),
    );
  });

  it("a year of dailies through a 25-asset graph: 365 runs, consistent, computed from ranges", () => {
    const defs = [asset({ key: "g/00", partitions: d }, noop)];
    for (let i = 1; i < 25; i++) {
      const ups = [defs[i - 1]!, ...(i >= 3 ? [defs[i - 3]!] : [])];
      defs.push(
        asset({ key: `g/${String(i).padStart(2, "0")}`, partitions: d, deps: Object.fromEntries(ups.map((u, j) => [`u${j}`, u])) }, noop),
      );
    }
    const g = graphOf(...defs);
    const p = planBackfill({
      graph: g,
      version: 1,
      now: new Date("2026-01-02T00:00:00Z"),
      assets: defs.map((x) => x.key),
      partitions: range("2025-01-01", "2025-12-31"),
      materialized: nothing,
      includeUpstream: false,
      maxPartitionsPerRun: 1,
    });
    expect(p.partitionCount).toBe(9125);
    expect(p.chunkCount).toBe(365);
    const chunks = new BackfillChunks(g, p.layout, undefined, new Date("2026-01-02T00:00:00Z"));
    expectConsistent(g, chunks, p.layout.targets);
    expect(chunks.chunk(100).get("g/24")!.serialize()).toBe("100-101");
  });
});

function partitionKeys(from: string, to: string): string[] {
  return [...partitionSpace(d).keys(partitionSpace(d).range(from, to))];
}

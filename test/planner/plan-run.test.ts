import { describe, expect, it } from "vitest";
import {
  allPartitions,
  asset,
  daily,
  dep,
  dynamicPartitions,
  GraphError,
  hourly,
  identity,
  InputError,
  lastPartition,
  multiMapping,
  multiPartitions,
  PartitionError,
  sourceAsset,
  staticPartitions,
  timeWindow,
  weekly,
} from "../../src/index.js";
import { partitionSpace, PartitionSubset } from "../../src/partitions/index.js";
import { planRun, type PlanRunRequest } from "../../src/planner/index.js";
import { missingUpstreamError } from "../../src/api/commands/launch-run.js";
import { days, expectWellFormed, graphOf, materializedKeys, noop, nothing, readsOf, stepNames } from "./helpers.js";

const NOW = new Date("2025-04-15T00:00:00Z");
const d = daily({ start: "2025-01-01" });

//  sales/orders ──► sales/orders_clean ──(last 7 days)──► sales/revenue_7d ──(all)──► report/summary
//       ├───────(weeks)──► sales/orders_weekly
//       └─(same day + day before)──► sales/orders_delta
const orders = asset({ key: "sales/orders", partitions: d }, noop);
const clean = asset({ key: "sales/orders_clean", partitions: d, deps: { orders } }, noop);
const revenue7d = asset({ key: "sales/revenue_7d", partitions: d, deps: { clean: dep(clean, timeWindow({ startOffset: -6 })) } }, noop);
const ordersWeekly = asset(
  { key: "sales/orders_weekly", partitions: weekly({ start: "2025-01-06" }), deps: { orders: dep(orders, timeWindow()) } },
  noop,
);
const delta = asset(
  {
    key: "sales/orders_delta",
    partitions: d,
    deps: { today: dep(orders), window: dep(orders, timeWindow({ startOffset: -1 })) },
  },
  noop,
);
const summary = asset({ key: "report/summary", deps: { revenue: dep(revenue7d, allPartitions()) } }, noop);
const sales = graphOf(orders, clean, revenue7d, ordersWeekly, delta, summary);

function plan(overrides: Partial<PlanRunRequest> & Pick<PlanRunRequest, "assets">) {
  const result = planRun({ graph: sales, version: 7, now: NOW, materialized: nothing, includeUpstream: false, ...overrides });
  expectWellFormed(result);
  return result;
}

const range = (from: string, to: string) => ({ kind: "range" as const, from, to });

describe("planRun: a daily chain", () => {
  it("plans a range in topological order, oldest first, with identity edges", () => {
    const p = plan({ assets: ["sales/orders_clean", "sales/orders"], partitions: range("2025-03-01", "2025-03-05") });
    expect(p.version).toBe(7);
    expect(stepNames(p)).toEqual([
      ...days("2025-03-01", "2025-03-05").map((k) => `sales/orders@${k}`),
      ...days("2025-03-01", "2025-03-05").map((k) => `sales/orders_clean@${k}`),
    ]);
    expect(p.steps[0]).toEqual({ index: 0, assetKey: "sales/orders", partitionKey: "2025-03-01", upstream: [] });
    expect(p.steps[7]).toEqual({ index: 7, assetKey: "sales/orders_clean", partitionKey: "2025-03-03", upstream: [2] });
    expect(p.missing).toEqual([]);
  });

  it("takes a list of keys, in any order, as steps oldest first", () => {
    const p = plan({ assets: ["sales/orders", "sales/orders"], partitions: { kind: "keys", keys: ["2025-03-09", "2025-03-02"] } });
    expect(stepNames(p)).toEqual(["sales/orders@2025-03-02", "sales/orders@2025-03-09"]);
  });

  it("plans every existing partition for `all`", () => {
    const p = plan({ assets: ["sales/orders"], partitions: { kind: "all" } });
    expect(p.steps).toHaveLength(104); // 2025-01-01 … 2025-04-14: windows closed by NOW
    expect(p.steps.at(-1)!.partitionKey).toBe("2025-04-14");
  });

  it("reads the same upstream step once when two dependencies overlap", () => {
    const p = plan({ assets: ["sales/orders", "sales/orders_delta"], partitions: range("2025-03-01", "2025-03-03") });
    expect(readsOf(p, "sales/orders_delta", "2025-03-02")).toEqual(["sales/orders@2025-03-01", "sales/orders@2025-03-02"]);
    expect(readsOf(p, "sales/orders_delta", "2025-03-01")).toEqual(["sales/orders@2025-03-01"]);
    expect(p.missing).toEqual([
      expect.objectContaining({
        assetKey: "sales/orders",
        neededBy: "sales/orders_delta",
        reason: "not_materialized",
        count: 1,
        sample: ["2025-02-28"],
      }),
    ]);
  });
});

describe("planRun: time-window dependencies", () => {
  it("links a 7-day trailing window to the seven daily steps in the plan", () => {
    const p = plan({ assets: ["sales/orders_clean", "sales/revenue_7d"], partitions: range("2025-03-01", "2025-03-20") });
    expect(readsOf(p, "sales/revenue_7d", "2025-03-10")).toEqual(days("2025-03-04", "2025-03-10").map((k) => `sales/orders_clean@${k}`));
    // The first days of the range read days before it, which are not materialised.
    expect(readsOf(p, "sales/revenue_7d", "2025-03-02")).toEqual(["sales/orders_clean@2025-03-01", "sales/orders_clean@2025-03-02"]);
    const fromClean = p.missing.find((m) => m.neededBy === "sales/revenue_7d")!;
    expect(fromClean).toMatchObject({
      assetKey: "sales/orders_clean",
      reason: "not_materialized",
      count: 6,
      sample: days("2025-02-23", "2025-02-28"),
    });
    expect(fromClean.detail).toContain("includeUpstream");
    const fromOrders = p.missing.find((m) => m.neededBy === "sales/orders_clean")!;
    expect(fromOrders).toMatchObject({ assetKey: "sales/orders", reason: "not_materialized", count: 20 });
    expect(fromOrders.sample).toEqual(days("2025-03-01", "2025-03-10"));
  });

  it("counts materialised upstream partitions as satisfied", () => {
    const materialized = materializedKeys(sales, {
      "sales/orders": days("2025-01-01", "2025-04-14"),
      "sales/orders_clean": days("2025-02-20", "2025-02-28"),
    });
    const p = plan({ assets: ["sales/orders_clean", "sales/revenue_7d"], partitions: range("2025-03-01", "2025-03-20"), materialized });
    expect(p.missing).toEqual([]);
  });

  it("maps a daily range to the weeks of a weekly rollup that overlap it", () => {
    const p = plan({ assets: ["sales/orders", "sales/orders_weekly"], partitions: range("2025-03-01", "2025-03-31") });
    const weeks = p.steps.filter((s) => s.assetKey === "sales/orders_weekly").map((s) => s.partitionKey);
    expect(weeks).toEqual(["2025-02-24", "2025-03-03", "2025-03-10", "2025-03-17", "2025-03-24", "2025-03-31"]);
    expect(p.steps.filter((s) => s.assetKey === "sales/orders")).toHaveLength(31);
    expect(readsOf(p, "sales/orders_weekly", "2025-03-10")).toEqual(days("2025-03-10", "2025-03-16").map((k) => `sales/orders@${k}`));
    expect(readsOf(p, "sales/orders_weekly", "2025-02-24")).toEqual(["sales/orders@2025-03-01", "sales/orders@2025-03-02"]);
    expect(p.missing).toEqual([
      expect.objectContaining({
        assetKey: "sales/orders",
        neededBy: "sales/orders_weekly",
        reason: "not_materialized",
        count: 11, // 02-24…02-28 and 04-01…04-06
        sample: [...days("2025-02-24", "2025-02-28"), ...days("2025-04-01", "2025-04-05")],
      }),
    ]);
  });

  it("leaves out weeks whose window has not closed", () => {
    const p = plan({
      assets: ["sales/orders", "sales/orders_weekly"],
      partitions: range("2025-03-01", "2025-03-31"),
      now: new Date("2025-04-03T00:00:00Z"),
    });
    expect(
      p.steps
        .filter((s) => s.assetKey === "sales/orders_weekly")
        .map((s) => s.partitionKey)
        .at(-1),
    ).toBe("2025-03-24");
  });

  it("fails clearly when the derived asset has no existing partition", () => {
    const attempt = () =>
      plan({
        assets: ["sales/orders", "sales/orders_weekly"],
        partitions: range("2025-04-08", "2025-04-09"),
        now: new Date("2025-04-13T12:00:00Z"),
      });
    expect(attempt).toThrowError(PartitionError);
    expect(attempt).toThrowError(/asset "sales\/orders_weekly" \(weekly.*nothing to plan.*"sales\/orders"/);
  });

  it("an asset whose definition does not take the keys, with nothing selected feeding it, is an error naming it", () => {
    const attempt = () => plan({ assets: ["sales/orders_weekly"], partitions: range("2025-03-01", "2025-03-31") });
    expect(attempt).toThrowError(PartitionError);
    try {
      attempt();
    } catch (err) {
      expect((err as PartitionError).code).toBe("PARTITION_KEY_INVALID");
      expect((err as PartitionError).location).toMatchObject({ assetKey: "sales/orders_weekly", partitionKey: "2025-03-01" });
      expect((err as Error).message).toMatch(/^asset "sales\/orders_weekly": "2025-03-01" is not a partition of weekly/);
      expect((err as Error).message).toContain('existing partitions at 2025-04-15T00:00:00.000Z: "2025-01-06" … "2025-04-07" (14)');
    }
  });

  it("maps through an unselected asset in between", () => {
    const p = plan({ assets: ["sales/orders", "sales/revenue_7d", "report/summary"], partitions: range("2025-03-01", "2025-03-02") });
    // revenue_7d shares the root's definition: it takes the keys as given.
    expect(stepNames(p)).toEqual([
      "sales/orders@2025-03-01",
      "sales/orders@2025-03-02",
      "sales/revenue_7d@2025-03-01",
      "sales/revenue_7d@2025-03-02",
      "report/summary@",
    ]);
    expect(readsOf(p, "report/summary")).toEqual(["sales/revenue_7d@2025-03-01", "sales/revenue_7d@2025-03-02"]);
  });
});

describe("planRun: hourly → daily across DST in Europe/Berlin", () => {
  const hours = hourly({ start: "2025-03-01", timezone: "Europe/Berlin" });
  const berlinDays = daily({ start: "2025-03-01", timezone: "Europe/Berlin" });
  const events = asset({ key: "raw/events", partitions: hours }, noop);
  const eventsDaily = asset({ key: "raw/events_daily", partitions: berlinDays, deps: { events: dep(events, timeWindow()) } }, noop);
  const graph = graphOf(events, eventsDaily);
  const base = { graph, version: 1, now: new Date("2025-11-01T00:00:00Z"), materialized: nothing };

  it("a 23-hour day reads 23 hourly steps", () => {
    const p = planRun({ ...base, assets: ["raw/events_daily"], partitions: { kind: "keys", keys: ["2025-03-30"] }, includeUpstream: true });
    expectWellFormed(p);
    const hourKeys = p.steps.filter((s) => s.assetKey === "raw/events").map((s) => s.partitionKey);
    expect(hourKeys).toHaveLength(23);
    expect(hourKeys.slice(0, 3)).toEqual(["2025-03-30-00:00", "2025-03-30-01:00", "2025-03-30-03:00"]);
    expect(hourKeys.at(-1)).toBe("2025-03-30-23:00");
    expect(p.steps.at(-1)).toMatchObject({ assetKey: "raw/events_daily", partitionKey: "2025-03-30", upstream: [...Array(23).keys()] });
    expect(p.missing).toEqual([]);
  });

  it("a 25-hour day reads 25, and an hourly range selects the day it falls in", () => {
    const p = planRun({
      ...base,
      assets: ["raw/events", "raw/events_daily"],
      partitions: { kind: "range", from: "2025-10-26-00:00", to: "2025-10-26-23:00" },
      includeUpstream: false,
    });
    expectWellFormed(p);
    const hourKeys = p.steps.filter((s) => s.assetKey === "raw/events").map((s) => s.partitionKey);
    expect(hourKeys).toHaveLength(25);
    expect(hourKeys).toContain("2025-10-26-02:00");
    expect(hourKeys).toContain("2025-10-26-02:00+01:00");
    expect(p.steps.filter((s) => s.assetKey === "raw/events_daily").map((s) => s.partitionKey)).toEqual(["2025-10-26"]);
    expect(readsOf(p, "raw/events_daily", "2025-10-26")).toHaveLength(25);
    expect(p.missing).toEqual([]);
  });
});

describe("planRun: multi-partitioned assets", () => {
  const byDateRegion = multiPartitions({ date: d, region: staticPartitions(["eu", "us"]) });
  const mpSales = asset({ key: "mp/sales", partitions: byDateRegion }, noop);
  const mpClean = asset({ key: "mp/sales_clean", partitions: byDateRegion, deps: { sales: mpSales } }, noop);
  const mpDaily = asset(
    {
      key: "mp/sales_daily",
      partitions: d,
      deps: { clean: dep("mp/sales_clean", multiMapping({ date: { upstreamDimension: "date", mapping: identity() } })) },
    },
    noop,
  );
  const graph = graphOf(mpSales, mpClean, mpDaily);

  it("selects a date range across regions and rolls regions up into a daily asset", () => {
    const p = planRun({
      graph,
      version: 2,
      assets: ["mp/sales", "mp/sales_clean", "mp/sales_daily"],
      partitions: range("2025-03-01", "2025-03-02"),
      now: NOW,
      materialized: nothing,
      includeUpstream: false,
    });
    expectWellFormed(p);
    expect(stepNames(p)).toEqual([
      "mp/sales@2025-03-01|eu",
      "mp/sales@2025-03-01|us",
      "mp/sales@2025-03-02|eu",
      "mp/sales@2025-03-02|us",
      "mp/sales_clean@2025-03-01|eu",
      "mp/sales_clean@2025-03-01|us",
      "mp/sales_clean@2025-03-02|eu",
      "mp/sales_clean@2025-03-02|us",
      "mp/sales_daily@2025-03-01",
      "mp/sales_daily@2025-03-02",
    ]);
    expect(readsOf(p, "mp/sales_clean", "2025-03-02|us")).toEqual(["mp/sales@2025-03-02|us"]);
    expect(readsOf(p, "mp/sales_daily", "2025-03-02")).toEqual(["mp/sales_clean@2025-03-02|eu", "mp/sales_clean@2025-03-02|us"]);
    expect(p.missing).toEqual([]);
  });

  it("takes full multi keys, and includes the upstream ones", () => {
    const p = planRun({
      graph,
      version: 2,
      assets: ["mp/sales_daily"],
      partitions: { kind: "keys", keys: ["2025-03-05"] },
      now: NOW,
      materialized: nothing,
      includeUpstream: true,
    });
    expect(stepNames(p)).toEqual([
      "mp/sales@2025-03-05|eu",
      "mp/sales@2025-03-05|us",
      "mp/sales_clean@2025-03-05|eu",
      "mp/sales_clean@2025-03-05|us",
      "mp/sales_daily@2025-03-05",
    ]);
  });
});

describe("planRun: unpartitioned and partitioned", () => {
  const config = asset({ key: "ref/config" }, noop);
  const enriched = asset({ key: "sales/enriched", partitions: d, deps: { config, orders } }, noop);
  const total = asset({ key: "report/total", deps: { enriched: dep(enriched, allPartitions()) } }, noop);
  const latest = asset({ key: "report/latest", deps: { enriched: dep(enriched, lastPartition()) } }, noop);
  const graph = graphOf(orders, config, enriched, total, latest);
  const base = { graph, version: 3, now: NOW };

  it("partitioned steps read the one unpartitioned step; an unpartitioned step reads all partitions", () => {
    const p = planRun({
      ...base,
      assets: ["ref/config", "sales/enriched", "report/total"],
      partitions: range("2025-03-01", "2025-03-03"),
      materialized: materializedKeys(graph, { "sales/orders": days("2025-01-01", "2025-04-14") }),
      includeUpstream: false,
    });
    expectWellFormed(p);
    expect(stepNames(p)).toEqual([
      "ref/config@",
      "sales/enriched@2025-03-01",
      "sales/enriched@2025-03-02",
      "sales/enriched@2025-03-03",
      "report/total@",
    ]);
    expect(readsOf(p, "sales/enriched", "2025-03-02")).toEqual(["ref/config@"]);
    expect(readsOf(p, "report/total")).toEqual(["sales/enriched@2025-03-01", "sales/enriched@2025-03-02", "sales/enriched@2025-03-03"]);
    expect(p.missing).toEqual([
      expect.objectContaining({ assetKey: "sales/enriched", neededBy: "report/total", reason: "not_materialized", count: 101 }),
    ]);
  });

  it("plans unpartitioned assets without a partition selection", () => {
    const p = planRun({ ...base, assets: ["ref/config"], materialized: nothing, includeUpstream: false });
    expect(stepNames(p)).toEqual(["ref/config@"]);
  });

  it("asks for a partition selection when a selected asset is partitioned", () => {
    const attempt = () => planRun({ ...base, assets: ["ref/config", "sales/enriched"], materialized: nothing, includeUpstream: false });
    expect(attempt).toThrowError(PartitionError);
    expect(attempt).toThrowError(/"sales\/enriched" is partitioned: choose the partitions/);
  });

  it("lastPartition() reads the latest partition, added with includeUpstream along with the unpartitioned upstream", () => {
    const p = planRun({ ...base, assets: ["report/latest"], materialized: nothing, includeUpstream: true });
    expectWellFormed(p);
    expect(stepNames(p)).toEqual(["ref/config@", "sales/orders@2025-04-14", "sales/enriched@2025-04-14", "report/latest@"]);
    expect(readsOf(p, "sales/enriched", "2025-04-14")).toEqual(["ref/config@", "sales/orders@2025-04-14"]);
    expect(readsOf(p, "report/latest")).toEqual(["sales/enriched@2025-04-14"]);
  });
});

describe("planRun: missing upstream partitions", () => {
  it("reports what is not materialised, or plans it transitively with includeUpstream", () => {
    const reported = plan({ assets: ["sales/revenue_7d"], partitions: { kind: "keys", keys: ["2025-03-10"] } });
    expect(stepNames(reported)).toEqual(["sales/revenue_7d@2025-03-10"]);
    expect(reported.missing).toEqual([
      expect.objectContaining({ assetKey: "sales/orders_clean", neededBy: "sales/revenue_7d", reason: "not_materialized", count: 7 }),
    ]);

    const included = plan({ assets: ["sales/revenue_7d"], partitions: { kind: "keys", keys: ["2025-03-10"] }, includeUpstream: true });
    expect(stepNames(included)).toEqual([
      ...days("2025-03-04", "2025-03-10").map((k) => `sales/orders@${k}`),
      ...days("2025-03-04", "2025-03-10").map((k) => `sales/orders_clean@${k}`),
      "sales/revenue_7d@2025-03-10",
    ]);
    expect(readsOf(included, "sales/revenue_7d", "2025-03-10")).toHaveLength(7);
    expect(readsOf(included, "sales/orders_clean", "2025-03-06")).toEqual(["sales/orders@2025-03-06"]);
    expect(included.missing).toEqual([]);
  });

  it("includes only what is not materialised", () => {
    const materialized = materializedKeys(sales, {
      "sales/orders": days("2025-01-01", "2025-04-14"),
      "sales/orders_clean": ["2025-03-05"],
    });
    const p = plan({
      assets: ["sales/revenue_7d"],
      partitions: { kind: "keys", keys: ["2025-03-10"] },
      includeUpstream: true,
      materialized,
    });
    expect(stepNames(p)).toEqual([
      "sales/orders_clean@2025-03-04",
      ...days("2025-03-06", "2025-03-10").map((k) => `sales/orders_clean@${k}`),
      "sales/revenue_7d@2025-03-10",
    ]);
    expect(readsOf(p, "sales/revenue_7d", "2025-03-10")).toHaveLength(6);
  });

  it("plans the first days of a trailing window: the part before the upstream start is not read", () => {
    const p = plan({ assets: ["sales/revenue_7d"], partitions: { kind: "keys", keys: ["2025-01-03"] }, includeUpstream: true });
    expect(p.missing).toEqual([]);
    expect(stepNames(p)).toEqual([
      ...days("2025-01-01", "2025-01-03").map((k) => `sales/orders@${k}`),
      ...days("2025-01-01", "2025-01-03").map((k) => `sales/orders_clean@${k}`),
      "sales/revenue_7d@2025-01-03",
    ]);
    expect(readsOf(p, "sales/revenue_7d", "2025-01-03")).toHaveLength(3);
    const all = plan({ assets: ["sales/revenue_7d"], partitions: { kind: "all" }, includeUpstream: true });
    expect(all.missing).toEqual([]);
    expect(readsOf(all, "sales/revenue_7d", "2025-01-01")).toEqual(["sales/orders_clean@2025-01-01"]);
  });

  it("keeps partitions outside the upstream definition in `missing` for allowPartial: false, with or without includeUpstream", () => {
    const whole = asset(
      { key: "sales/revenue_7d_whole", partitions: d, deps: { clean: dep(clean, timeWindow({ startOffset: -6, allowPartial: false })) } },
      noop,
    );
    const graph = graphOf(orders, clean, whole);
    for (const includeUpstream of [false, true]) {
      const p = planRun({
        graph,
        version: 7,
        now: NOW,
        materialized: nothing,
        includeUpstream,
        assets: ["sales/revenue_7d_whole"],
        partitions: { kind: "keys", keys: ["2025-01-03"] },
      });
      expect(p.missing).toContainEqual({
        assetKey: "sales/orders_clean",
        neededBy: "sales/revenue_7d_whole",
        reason: "not_existing",
        count: 4,
        sample: ["2024-12-28", "2024-12-29", "2024-12-30", "2024-12-31"],
        detail: expect.stringContaining(
          '4 before the first partition "2025-01-01" of daily(start 2025-01-01, UTC) (outside it: they never exist)',
        ),
      });
      if (includeUpstream) {
        expect(p.missing).toHaveLength(1);
        expect(p.steps).toHaveLength(7); // orders and clean 01-01…01-03, revenue 01-03
        // The error says why, and does not suggest what cannot help.
        const err = missingUpstreamError(p.missing, "materialise them first, or pass --include-upstream");
        expect(err.message).toContain(
          '"sales/revenue_7d_whole" reads 4 partition(s) of "sales/orders_clean" that do not exist: 4 before the first partition',
        );
        expect(err.message).not.toContain("--include-upstream");
        expect(err.message).toMatch(/no run can make partitions that do not exist/);
      }
    }
  });

  it("never plans a source asset: its unobserved partitions stay missing", () => {
    const landing = sourceAsset({ key: "raw/landing", partitions: d });
    const parsed = asset({ key: "raw/parsed", partitions: d, deps: { landing } }, noop);
    const graph = graphOf(landing, parsed);
    const base = { graph, version: 1, now: NOW, includeUpstream: true };
    const p = planRun({
      ...base,
      assets: ["raw/parsed"],
      partitions: { kind: "keys", keys: ["2025-03-01", "2025-03-02"] },
      materialized: materializedKeys(graph, { "raw/landing": ["2025-03-02"] }),
    });
    expect(stepNames(p)).toEqual(["raw/parsed@2025-03-01", "raw/parsed@2025-03-02"]);
    expect(p.missing).toEqual([
      expect.objectContaining({ assetKey: "raw/landing", reason: "not_materialized", count: 1, sample: ["2025-03-01"] }),
    ]);
    expect(p.missing[0]!.detail).toContain("source asset");
    const attempt = () => planRun({ ...base, assets: ["raw/landing"], partitions: { kind: "all" }, materialized: nothing });
    expect(attempt).toThrowError(InputError);
    expect(attempt).toThrowError(/"raw\/landing" is a source asset/);
  });
});

describe("planRun: bad requests", () => {
  function codeOf(fn: () => unknown): string | undefined {
    try {
      fn();
    } catch (err) {
      return (err as { code?: string }).code;
    }
    return undefined;
  }

  it("rejects an unknown asset key, suggesting the nearest", () => {
    const attempt = () => plan({ assets: ["sales/order"], partitions: { kind: "all" } });
    expect(attempt).toThrowError(GraphError);
    expect(attempt).toThrowError(/no asset has the key "sales\/order"; did you mean "sales\/orders"\?/);
    expect(codeOf(attempt)).toBe("GRAPH_UNKNOWN_ASSET");
  });

  it("rejects a key that is not a partition, naming the key, the asset and the valid range", () => {
    const attempt = () => plan({ assets: ["sales/orders"], partitions: { kind: "keys", keys: ["2025-03-01", "2025-02-30"] } });
    expect(attempt).toThrowError(PartitionError);
    expect(codeOf(attempt)).toBe("PARTITION_KEY_INVALID");
    expect(attempt).toThrowError(/^asset "sales\/orders": "2025-02-30" is not a partition of daily\(start 2025-01-01, UTC\)/);
    expect(attempt).toThrowError(/existing partitions at 2025-04-15T00:00:00.000Z: "2025-01-01" … "2025-04-14" \(104\)/);
  });

  it("rejects a partition that does not exist yet", () => {
    const attempt = () => plan({ assets: ["sales/orders"], partitions: range("2025-04-10", "2025-04-15") });
    expect(codeOf(attempt)).toBe("PARTITION_NOT_EXISTING");
    expect(attempt).toThrowError(
      /partition "2025-04-15" of daily.*does not exist yet at 2025-04-15T00:00:00.000Z \(its window closes at 2025-04-16T00:00:00.000Z\)/,
    );
  });

  it("rejects a reversed range", () => {
    const attempt = () => plan({ assets: ["sales/orders"], partitions: range("2025-03-31", "2025-03-01") });
    expect(attempt).toThrowError(PartitionError);
    expect(codeOf(attempt)).toBe("PARTITION_RANGE_INVALID");
    expect(attempt).toThrowError(/asset "sales\/orders": reversed partition range/);
  });

  it("rejects an empty selection and an empty key list", () => {
    expect(codeOf(() => plan({ assets: [] }))).toBe("PLAN_SELECTION_EMPTY");
    expect(codeOf(() => plan({ assets: ["sales/orders"], partitions: { kind: "keys", keys: [] } }))).toBe("PARTITION_SELECTION_EMPTY");
  });

  it("rejects keys that fit one root's definition but not another's", () => {
    const events = asset({ key: "raw/events", partitions: hourly({ start: "2025-01-01" }) }, noop);
    const graph = graphOf(orders, events);
    const attempt = () =>
      planRun({
        graph,
        version: 1,
        assets: ["sales/orders", "raw/events"],
        partitions: range("2025-03-01", "2025-03-02"),
        now: NOW,
        materialized: nothing,
        includeUpstream: false,
      });
    expect(attempt).toThrowError(/^asset "raw\/events": "2025-03-01" is not a partition of hourly/);
  });
});

describe("planRun: dynamic partitions", () => {
  const customers = dynamicPartitions("customers");
  const profile = asset({ key: "crm/profile", partitions: customers }, noop);
  const scores = asset({ key: "crm/scores", partitions: customers, deps: { profile } }, noop);
  const graph = graphOf(profile, scores);

  it("uses the keys given by dynamicKeys, fetching each set once", () => {
    let calls = 0;
    const dynamicKeys = (name: string) => {
      calls++;
      return name === "customers" ? ["c-1", "c-2", "c-3"] : [];
    };
    const p = planRun({
      graph,
      version: 1,
      assets: ["crm/scores"],
      partitions: { kind: "keys", keys: ["c-3", "c-2"] },
      now: NOW,
      dynamicKeys,
      materialized: (key) => (key === "crm/profile" ? PartitionSubset.single(1) : PartitionSubset.EMPTY),
      includeUpstream: true,
    });
    expect(stepNames(p)).toEqual(["crm/profile@c-3", "crm/scores@c-2", "crm/scores@c-3"]);
    expect(readsOf(p, "crm/scores", "c-3")).toEqual(["crm/profile@c-3"]);
    expect(readsOf(p, "crm/scores", "c-2")).toEqual([]);
    expect(calls).toBe(1);
    expect(partitionSpace(customers, { dynamicKeys }).keyAt(2)).toBe("c-3");
  });
});

import { describe, expect, it } from "vitest";
import { AssetGraph, explainAsset } from "../../src/graph/index.js";
import {
  allPartitions,
  asset,
  check,
  daily,
  dep,
  dynamicPartitions,
  eager,
  fileExists,
  GraphError,
  InputError,
  multiPartitions,
  onCron,
  PartitionError,
  sourceAsset,
  staticMapping,
  staticPartitions,
  timeWindow,
  weekly,
} from "../../src/index.js";
import { mappingInWords, partitionsInWords } from "../../src/partitions/index.js";
import { noop, snap, snapCheck } from "./helpers.js";

const days = daily({ start: "2025-01-01" });
const regions = staticPartitions(["eu-west", "eu-central", "us-east"]);
const feed = sourceAsset({ key: "raw/feed", partitions: days, observe: fileExists("/in/{partition}.csv"), pollInterval: "5m" });
const orders = asset(
  {
    key: "raw/orders",
    partitions: days,
    automation: onCron("0 1 * * *", { timezone: "UTC" }),
    retries: { max: 3, delay: "30s" },
    timeout: "10m",
    pool: "warehouse",
    priority: 5,
    executor: "bullmq",
    deps: { feed },
  },
  noop,
);
const trailing = asset(
  { key: "sales/trailing", partitions: days, automation: eager(), deps: { orders: dep(orders, timeWindow({ startOffset: -6 })) } },
  noop,
);
const weeks = asset(
  { key: "sales/weekly", partitions: weekly({ start: "2025-01-06" }), deps: { orders: dep(orders, timeWindow()) } },
  noop,
);
const byRegion = asset({ key: "sales/by_region", partitions: multiPartitions({ date: days, region: regions }), deps: { orders } }, noop);
const areas = asset(
  {
    key: "sales/areas",
    partitions: staticPartitions(["eu", "us"]),
    deps: { r: dep("sales/region_totals", staticMapping({ "eu-west": "eu", "eu-central": "eu", "us-east": "us" })) },
  },
  noop,
);
const regionTotals = asset({ key: "sales/region_totals", partitions: regions }, noop);
const profiles = asset({ key: "crm/profiles", partitions: dynamicPartitions("customers") }, noop);
const tiers = asset({ key: "crm/tiers", deps: { profiles: dep(profiles, allPartitions()) } }, noop);
const graph = new AssetGraph(
  [feed, orders, trailing, weeks, byRegion, areas, regionTotals, profiles, tiers].map((a) => snap(a, `${a.key.split("/")[0]}.ts`)),
  [
    snapCheck(
      check(orders, { name: "not_empty", blocking: true }, () => ({ passed: true })),
      "raw.ts",
    ),
    snapCheck(
      check(orders, { name: "march_only", severity: "warn", partitions: { from: "2025-03-01", to: "2025-03-31" } }, () => ({
        passed: true,
      })),
      "raw.ts",
    ),
  ],
);
const now = new Date("2025-03-11T12:00:00Z");

describe("explainAsset", () => {
  it("shows what the latest existing partition reads, through the mapping the dependency states", () => {
    const e = explainAsset(graph, "sales/trailing", { now });
    expect(e.examplePartition).toBe("2025-03-10");
    expect(e.dependencies).toEqual([
      {
        name: "orders",
        assetKey: "raw/orders",
        mapping: "timeWindow(startOffset -6)",
        defaultMapping: false,
        mappingWords: "the upstream windows overlapping its own window and the 6 days before it",
        reads: { first: "2025-03-04", last: "2025-03-10", count: 7, ranges: 1, missing: { count: 0, reasons: [] }, unknownDynamicSets: [] },
        problem: null,
      },
    ]);
    expect(e.automation?.words).toMatch(/^materialise a partition when `raw\/orders` changed since it last read it/);
  });

  it("reports the partitions a given partition would read that do not exist yet", () => {
    const e = explainAsset(graph, "sales/weekly", { now, partition: "2025-03-10" });
    const reads = e.dependencies[0]!.reads!;
    expect([reads.first, reads.last, reads.count]).toEqual(["2025-03-10", "2025-03-10", 1]);
    expect(reads.missing.count).toBe(6);
    expect(reads.missing.reasons.join()).toMatch(/6 not existing yet/);
  });

  it("resolves the default mapping, also to a multi-partitioned reader", () => {
    const e = explainAsset(graph, "sales/by_region", { now, partition: "2025-03-10|us-east" });
    expect(e.dependencies[0]).toMatchObject({
      mapping: "multiMapping(date ← date: identity())",
      defaultMapping: true,
      mappingWords: "per dimension, date: the upstream partition with the same key",
      reads: { first: "2025-03-10", last: "2025-03-10", count: 1 },
    });
    expect(explainAsset(graph, "sales/areas", { now, partition: "eu" }).dependencies[0]).toMatchObject({
      mappingWords: "the upstream keys that feed its key (eu-west → eu; eu-central → eu; us-east → us)",
      reads: { first: "eu-west", last: "eu-central", count: 2 },
    });
  });

  it("lists settings, checks and readers", () => {
    const e = explainAsset(graph, "raw/orders", { now });
    expect(e.settings).toEqual([
      { name: "retries", value: "3 retries, 30s apart" },
      { name: "timeout", value: "10m" },
      { name: "pool", value: "warehouse" },
      { name: "priority", value: "5" },
      { name: "executor", value: "bullmq" },
    ]);
    expect(e.automation).toEqual({
      condition: 'onCron("0 1 * * *", { timezone: "UTC" })',
      words: "materialise the latest daily partition every day at 01:00 UTC once `raw/feed` is there",
    });
    expect(e.checks).toEqual([
      { name: "march_only", blocking: false, severity: "warn", description: null, partitions: "partitions 2025-03-01 to 2025-03-31" },
      { name: "not_empty", blocking: true, severity: "error", description: null, partitions: "every partition" },
    ]);
    expect(e.downstream.map((d) => [d.key, d.as, d.mapping, d.defaultMapping])).toEqual([
      ["sales/by_region", "orders", "multiMapping(date ← date: identity())", true],
      ["sales/trailing", "orders", "timeWindow(startOffset -6)", false],
      ["sales/weekly", "orders", "timeWindow()", false],
    ]);
  });

  it("describes a source asset by how it is observed", () => {
    const e = explainAsset(graph, "raw/feed", { now });
    expect(e.kind).toBe("source");
    expect(e.settings).toEqual([{ name: "observe", value: 'fileExists(path: "/in/{partition}.csv"), every 5m' }]);
  });

  it("leaves the keys of dynamic sets open: they live in the database", () => {
    const profilesExplained = explainAsset(graph, "crm/profiles", { now });
    expect(profilesExplained.examplePartition).toBeNull();
    expect(profilesExplained.examplePartitionNote).toMatch(/dynamic set "customers".*--partition/);
    const e = explainAsset(graph, "crm/tiers", { now });
    expect(e.dependencies[0]!.reads).toMatchObject({ count: 0, unknownDynamicSets: ["customers"] });
    // A given key of the asset's own dynamic set stands for itself.
    expect(explainAsset(graph, "crm/profiles", { now, partition: "customer-3" }).examplePartition).toBe("customer-3");
  });

  it("rejects an unknown key with the nearest one, and partitions that do not fit", () => {
    expect(() => explainAsset(graph, "raw/order", { now })).toThrowError(GraphError);
    expect(() => explainAsset(graph, "raw/order", { now })).toThrowError(/did you mean "raw\/orders"/);
    expect(() => explainAsset(graph, "raw/orders", { now, partition: "yesterday" })).toThrowError(PartitionError);
    expect(() => explainAsset(graph, "crm/tiers", { now, partition: "x" })).toThrowError(InputError);
  });
});

describe("partitions and mappings in words", () => {
  it("reads each kind of definition", () => {
    expect(partitionsInWords(null)).toBe("not partitioned: each materialisation writes the whole asset");
    expect(partitionsInWords(daily({ start: "2025-01-01", timezone: "Europe/Berlin", endOffset: 1 }))).toBe(
      "daily partitions from 2025-01-01 in Europe/Berlin, each from the start of its day",
    );
    expect(partitionsInWords(regions)).toBe("3 static partitions: eu-west, eu-central, us-east");
    expect(partitionsInWords(dynamicPartitions("customers"))).toMatch(/^dynamic partitions of the set "customers"/);
    expect(partitionsInWords(multiPartitions({ date: days, region: regions }))).toBe(
      'one partition per combination of date (daily from 2025-01-01, UTC) × region (static: eu-west, eu-central, us-east), keys read "date|region"',
    );
  });

  it("counts time-window offsets in the reader's windows", () => {
    expect(mappingInWords(timeWindow({ startOffset: -1, endOffset: 1 }), days, days)).toBe(
      "the upstream windows overlapping its own window, its start moved by -1 and its end by +1 days",
    );
    expect(mappingInWords(timeWindow({ endOffset: 2, allowPartial: false }), weekly({ start: "2025-01-06" }), days)).toBe(
      "the upstream windows overlapping its own window and the 2 weeks after it; none where that reaches outside the upstream's partitions",
    );
  });
});

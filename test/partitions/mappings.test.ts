import { describe, expect, it } from "vitest";
import { DefinitionError } from "../../src/errors/index.js";
import {
  PartitionSubset,
  UNPARTITIONED,
  allPartitions,
  daily,
  downstreamPartitions,
  dynamicPartitions,
  hourly,
  identity,
  lastPartition,
  multiMapping,
  multiPartitions,
  partitionSpace,
  staticMapping,
  staticPartitions,
  timeWindow,
  upstreamPartitions,
  weekly,
  type PartitionMappingSpec,
  type PartitionsSpec,
} from "../../src/partitions/index.js";

const NOW = new Date("2025-03-01T00:00:00Z");

/** Keys read upstream (and missing) for downstream keys, through specs. */
function readKeys(down: PartitionsSpec, up: PartitionsSpec, mapping: PartitionMappingSpec | null, downKeys: string[], now = NOW) {
  const result = upstreamPartitions(down, up, mapping, partitionSpace(down).subset(downKeys), undefined, now);
  return { keys: [...partitionSpace(up).keys(result.subset)], missing: result.missing };
}

function affectedKeys(up: PartitionsSpec, down: PartitionsSpec, mapping: PartitionMappingSpec | null, upKeys: string[], now = NOW) {
  const subset = downstreamPartitions(up, down, mapping, partitionSpace(up).subset(upKeys), undefined, now);
  return [...partitionSpace(down).keys(subset)];
}

const days = daily({ start: "2025-01-01" });
const weeks = weekly({ start: "2025-01-06" });

describe("identity", () => {
  it("maps a key to the same key", () => {
    expect(readKeys(days, days, identity(), ["2025-01-10", "2025-02-01"]).keys).toEqual(["2025-01-10", "2025-02-01"]);
    expect(affectedKeys(days, days, identity(), ["2025-01-10"])).toEqual(["2025-01-10"]);
  });

  it("shifts indices between time definitions with different starts, reporting what precedes the upstream start", () => {
    const later = daily({ start: "2025-01-05" });
    const { keys, missing } = readKeys(days, later, identity(), ["2025-01-03", "2025-01-04", "2025-01-05", "2025-01-06"]);
    expect(keys).toEqual(["2025-01-05", "2025-01-06"]);
    expect(missing.count).toBe(2);
    expect(missing.sample).toEqual(["2025-01-03", "2025-01-04"]);
    expect(missing.reasons).toEqual([
      `2 before the first partition "2025-01-05" of daily(start 2025-01-05, UTC) (outside it: they never exist)`,
    ]);
    expect(affectedKeys(later, days, identity(), ["2025-01-05"])).toEqual(["2025-01-05"]);
  });

  it("reports upstream partitions that do not exist yet", () => {
    const open = daily({ start: "2025-01-01", endOffset: 1 });
    const { keys, missing } = readKeys(open, days, identity(), ["2025-02-28", "2025-03-01"]);
    expect(keys).toEqual(["2025-02-28"]);
    expect(missing).toEqual({
      count: 1,
      sample: ["2025-03-01"],
      reasons: ["1 not existing yet at 2025-03-01T00:00:00.000Z (their windows have not closed)"],
    });
  });

  it("maps static keys by key between different lists", () => {
    const big = staticPartitions(["eu", "us", "apac"]);
    const small = staticPartitions(["us", "eu"]);
    expect(readKeys(small, big, identity(), ["eu", "us"]).keys).toEqual(["eu", "us"]);
    const { missing } = readKeys(big, small, identity(), ["apac", "eu"]);
    expect(missing).toMatchObject({ count: 1, sample: ["apac"] });
  });
});

describe("timeWindow", () => {
  it("startOffset -6 on daily reads the last seven days", () => {
    const { keys, missing } = readKeys(days, days, timeWindow({ startOffset: -6 }), ["2025-01-10"]);
    expect(keys).toEqual(["2025-01-04", "2025-01-05", "2025-01-06", "2025-01-07", "2025-01-08", "2025-01-09", "2025-01-10"]);
    expect(missing.count).toBe(0);
  });

  it("clips a window to the upstream definition: the first days read what there is", () => {
    const { keys, missing } = readKeys(days, days, timeWindow({ startOffset: -6 }), ["2025-01-03"]);
    expect(keys).toEqual(["2025-01-01", "2025-01-02", "2025-01-03"]);
    expect(missing.count).toBe(0);
    expect(readKeys(days, days, timeWindow({ startOffset: -6 }), ["2025-01-01"])).toMatchObject({
      keys: ["2025-01-01"],
      missing: { count: 0 },
    });
    // Wholly before the start ("yesterday" of the first day): nothing to read, nothing missing.
    expect(readKeys(days, days, timeWindow({ startOffset: -1, endOffset: -1 }), ["2025-01-01"])).toMatchObject({
      keys: [],
      missing: { count: 0 },
    });
    // After the upstream's end as well.
    const january = daily({ start: "2025-01-01", end: "2025-02-01" });
    expect(readKeys(days, january, timeWindow({ startOffset: -2 }), ["2025-02-02"])).toMatchObject({
      keys: ["2025-01-31"],
      missing: { count: 0 },
    });
    // Windows that have not closed yet are still missing: they will exist.
    const open = readKeys(days, days, timeWindow({ startOffset: -1, endOffset: 1 }), ["2025-02-28"]);
    expect(open.keys).toEqual(["2025-02-27", "2025-02-28"]);
    expect(open.missing).toMatchObject({ count: 1, sample: ["2025-03-01"] });
    expect(open.missing.reasons[0]).toMatch(/^1 not existing yet at 2025-03-01T00:00:00.000Z/);
    // The days that read an upstream day are the same with or without clipping.
    expect(affectedKeys(days, days, timeWindow({ startOffset: -6 }), ["2025-01-01"])).toEqual([
      "2025-01-01",
      "2025-01-02",
      "2025-01-03",
      "2025-01-04",
      "2025-01-05",
      "2025-01-06",
      "2025-01-07",
    ]);
  });

  it("with allowPartial: false, reports days outside the upstream definition instead of clipping them", () => {
    const whole = timeWindow({ startOffset: -6, allowPartial: false });
    expect(whole).toEqual({ kind: "timeWindow", startOffset: -6, endOffset: 0, allowPartial: false });
    // The default is not stored: definitions written before the option hash the same.
    expect(timeWindow({ startOffset: -6, allowPartial: true })).toEqual({ kind: "timeWindow", startOffset: -6, endOffset: 0 });
    const { keys, missing } = readKeys(days, days, whole, ["2025-01-03"]);
    expect(keys).toEqual(["2025-01-01", "2025-01-02", "2025-01-03"]);
    expect(missing.count).toBe(4);
    expect(missing.sample).toEqual(["2024-12-28", "2024-12-29", "2024-12-30", "2024-12-31"]);
    expect(missing.reasons[0]).toMatch(/^4 before the first partition "2025-01-01" of daily\(start 2025-01-01, UTC\)/);
    expect(readKeys(days, days, whole, ["2025-01-07"]).missing.count).toBe(0);
    expect(() => timeWindow({ allowPartial: "yes" as unknown as boolean })).toThrow(/allowPartial/);
  });

  it("maps a range of downstream days to one upstream range (ranges, not keys)", () => {
    const big = daily({ start: "2000-01-01" });
    const down = partitionSpace(big).range("2000-01-07", "2099-12-31");
    const t0 = performance.now();
    const { subset } = upstreamPartitions(big, big, timeWindow({ startOffset: -6 }), down, undefined, new Date("2200-01-01"));
    expect(performance.now() - t0).toBeLessThan(50);
    expect(subset.rangeCount).toBe(1);
    expect(subset.count()).toBe(down.count() + 6);
  });

  it("affects the seven downstream days reading an upstream day", () => {
    expect(affectedKeys(days, days, timeWindow({ startOffset: -6 }), ["2025-01-10"])).toEqual([
      "2025-01-10",
      "2025-01-11",
      "2025-01-12",
      "2025-01-13",
      "2025-01-14",
      "2025-01-15",
      "2025-01-16",
    ]);
    // The previous day: startOffset = endOffset = -1.
    expect(readKeys(days, days, timeWindow({ startOffset: -1, endOffset: -1 }), ["2025-01-10"]).keys).toEqual(["2025-01-09"]);
    expect(affectedKeys(days, days, timeWindow({ startOffset: -1, endOffset: -1 }), ["2025-01-09"])).toEqual(["2025-01-10"]);
  });

  it("rolls dailies up into weeks, and back", () => {
    expect(readKeys(weeks, days, timeWindow(), ["2025-01-13"]).keys).toEqual([
      "2025-01-13",
      "2025-01-14",
      "2025-01-15",
      "2025-01-16",
      "2025-01-17",
      "2025-01-18",
      "2025-01-19",
    ]);
    expect(affectedKeys(days, weeks, timeWindow(), ["2025-01-15", "2025-01-22"])).toEqual(["2025-01-13", "2025-01-20"]);
    // A daily reading its week: the week must have closed.
    expect(readKeys(days, weeks, timeWindow(), ["2025-01-15"]).keys).toEqual(["2025-01-13"]);
    const current = readKeys(days, weeks, timeWindow(), ["2025-02-28"]);
    expect(current.keys).toEqual([]);
    expect(current.missing).toMatchObject({ count: 1, sample: ["2025-02-24"] });
    expect(affectedKeys(weeks, days, timeWindow(), ["2025-01-13"])).toHaveLength(7);
  });

  it("a daily reads 23, 24 or 25 hours across DST (New York)", () => {
    const nyDays = daily({ start: "2025-01-01", timezone: "America/New_York" });
    const nyHours = hourly({ start: "2025-01-01", timezone: "America/New_York" });
    const now = new Date("2026-01-01T00:00:00Z");
    expect(readKeys(nyDays, nyHours, timeWindow(), ["2025-03-09"], now).keys).toHaveLength(23);
    const fallBack = readKeys(nyDays, nyHours, timeWindow(), ["2025-11-02"], now).keys;
    expect(fallBack).toHaveLength(25);
    expect(fallBack.slice(0, 3)).toEqual(["2025-11-02-00:00", "2025-11-02-01:00", "2025-11-02-01:00-05:00"]);
    expect(readKeys(nyDays, nyHours, timeWindow(), ["2025-06-01"], now).keys).toHaveLength(24);
    expect(affectedKeys(nyHours, nyDays, timeWindow(), ["2025-11-02-01:00-05:00"], now)).toEqual(["2025-11-02"]);
    expect(affectedKeys(nyHours, nyDays, timeWindow(), ["2025-11-02-23:00", "2025-11-03-00:00"], now)).toEqual([
      "2025-11-02",
      "2025-11-03",
    ]);
  });

  it("reports hours of the current day that have not closed yet", () => {
    const hours = hourly({ start: "2025-01-01" });
    const { keys, missing } = readKeys(days, hours, timeWindow(), ["2025-01-10"], new Date("2025-01-10T12:30:00Z"));
    expect(keys).toHaveLength(12);
    expect(missing.count).toBe(12);
    expect(missing.sample[0]).toBe("2025-01-10-12:00");
  });

  it("refuses non-time partitions", () => {
    expect(() => readKeys(days, staticPartitions(["eu"]), timeWindow(), ["2025-01-01"])).toThrow(DefinitionError);
    expect(() => readKeys(days, staticPartitions(["eu"]), timeWindow(), ["2025-01-01"])).toThrow(/needs time partitions on both sides/);
  });
});

describe("all, last and unpartitioned assets", () => {
  const regions = staticPartitions(["eu", "us"]);

  it("all reads every existing upstream partition", () => {
    expect(readKeys(days, regions, allPartitions(), ["2025-01-01"]).keys).toEqual(["eu", "us"]);
    expect(readKeys(regions, days, allPartitions(), ["eu"]).keys).toHaveLength(59);
    expect(affectedKeys(days, regions, allPartitions(), ["2025-01-05"])).toEqual(["eu", "us"]);
  });

  it("last reads the latest existing partition", () => {
    expect(readKeys(regions, days, lastPartition(), ["eu"]).keys).toEqual(["2025-02-28"]);
    expect(affectedKeys(days, regions, lastPartition(), ["2025-02-28"])).toEqual(["eu", "us"]);
    expect(affectedKeys(days, regions, lastPartition(), ["2025-02-27"])).toEqual([]);
    const early = readKeys(regions, days, lastPartition(), ["eu"], new Date("2024-12-01T00:00:00Z"));
    expect(early.keys).toEqual([]);
    expect(early.missing).toMatchObject({ count: 1, sample: ["2025-01-01"] });
  });

  it("an unpartitioned downstream reads all partitions (or the last), an unpartitioned upstream is read by every partition", () => {
    const all = upstreamPartitions(null, days, null, UNPARTITIONED, undefined, NOW);
    expect(all.subset.serialize()).toBe("0-59");
    expect(upstreamPartitions(null, days, lastPartition(), UNPARTITIONED, undefined, NOW).subset.serialize()).toBe("58-59");
    expect(upstreamPartitions(days, null, null, PartitionSubset.range(3, 9), undefined, NOW).subset).toEqual(UNPARTITIONED);
    expect(upstreamPartitions(null, null, null, UNPARTITIONED, undefined, NOW).subset).toEqual(UNPARTITIONED);
    expect(upstreamPartitions(days, null, null, PartitionSubset.EMPTY, undefined, NOW).subset.isEmpty()).toBe(true);
    expect(downstreamPartitions(null, days, null, UNPARTITIONED, undefined, NOW).serialize()).toBe("0-59");
    expect(downstreamPartitions(days, null, null, PartitionSubset.single(3), undefined, NOW)).toEqual(UNPARTITIONED);
    expect(downstreamPartitions(days, null, lastPartition(), PartitionSubset.single(3), undefined, NOW).isEmpty()).toBe(true);
    expect(() => upstreamPartitions(null, days, timeWindow(), UNPARTITIONED, undefined, NOW)).toThrow(
      /does not apply to an unpartitioned downstream/,
    );
  });
});

describe("static mapping", () => {
  const zones = staticPartitions(["eu-west", "eu-central", "us-east"]);
  const regions = staticPartitions(["eu", "us", "global"]);
  const mapping = staticMapping({ "eu-west": "eu", "eu-central": ["eu", "global"], "us-east": ["us", "global"] });

  it("maps upstream keys to the downstream keys they feed, both ways", () => {
    expect(readKeys(regions, zones, mapping, ["eu"]).keys).toEqual(["eu-west", "eu-central"]);
    expect(readKeys(regions, zones, mapping, ["global"]).keys).toEqual(["eu-central", "us-east"]);
    expect(affectedKeys(zones, regions, mapping, ["eu-central"])).toEqual(["eu", "global"]);
  });

  it("reports mapped upstream keys a dynamic upstream does not have yet", () => {
    const customers = dynamicPartitions("customers");
    const result = upstreamPartitions(
      regions,
      customers,
      staticMapping({ "c-1": "eu", "c-9": "eu" }),
      partitionSpace(regions).subset(["eu"]),
      { dynamicKeys: () => ["c-1", "c-2"] },
      NOW,
    );
    expect(result.subset.serialize()).toBe("0-1");
    expect(result.missing.count).toBe(1);
    expect(result.missing.sample).toEqual(["c-9"]);
    expect(result.missing.reasons[0]).toMatch(/dynamic keys not added yet/);
  });
});

describe("multi partitions", () => {
  const regions = staticPartitions(["eu", "us"]);
  const events = multiPartitions({ date: days, region: regions });

  it("a daily asset reading a date|region upstream reads all regions of its date (default mapping)", () => {
    expect(readKeys(days, events, null, ["2025-01-02"]).keys).toEqual(["2025-01-02|eu", "2025-01-02|us"]);
    expect(affectedKeys(events, days, null, ["2025-01-02|us", "2025-01-03|eu"])).toEqual(["2025-01-02", "2025-01-03"]);
  });

  it("lifts timeWindow to the time dimension of a multi upstream", () => {
    const { keys } = readKeys(days, events, timeWindow({ startOffset: -1 }), ["2025-01-03"]);
    expect(keys).toEqual(["2025-01-02|eu", "2025-01-02|us", "2025-01-03|eu", "2025-01-03|us"]);
  });

  it("a date|region asset reading a daily one reads its date", () => {
    expect(readKeys(events, days, null, ["2025-01-02|us"]).keys).toEqual(["2025-01-02"]);
    expect(affectedKeys(days, events, null, ["2025-01-02"])).toEqual(["2025-01-02|eu", "2025-01-02|us"]);
  });

  it("maps three dimensions independently, reading unnamed upstream dimensions in full", () => {
    const channels = staticPartitions(["web", "app", "store"]);
    const down = multiPartitions({ region: regions, date: days, channel: channels });
    const up = multiPartitions({ date: days, region: staticPartitions(["eu", "us", "apac"]), channel: channels });
    const mapping = multiMapping({
      date: { upstreamDimension: "date", mapping: timeWindow({ startOffset: -1 }) },
      region: { upstreamDimension: "region", mapping: identity() },
    });
    const { keys, missing } = readKeys(down, up, mapping, ["us|2025-01-05|app"]);
    expect(keys).toEqual([
      "2025-01-04|us|web",
      "2025-01-04|us|app",
      "2025-01-04|us|store",
      "2025-01-05|us|web",
      "2025-01-05|us|app",
      "2025-01-05|us|store",
    ]);
    expect(missing.count).toBe(0);
    // The day before the upstream start is clipped, for every channel.
    const first = readKeys(down, up, mapping, ["eu|2025-01-01|web"]);
    expect(first.keys).toHaveLength(3);
    expect(first.missing.count).toBe(0);
    const strict = multiMapping({
      date: { upstreamDimension: "date", mapping: timeWindow({ startOffset: -1, allowPartial: false }) },
      region: { upstreamDimension: "region", mapping: identity() },
    });
    const whole = readKeys(down, up, strict, ["eu|2025-01-01|web"]);
    expect(whole.missing.count).toBe(3);
    expect(whole.missing.sample).toEqual(["2024-12-31|eu|web", "2024-12-31|eu|app", "2024-12-31|eu|store"]);
    // Downstream: a change upstream affects every downstream channel of the two days reading it.
    const affected = affectedKeys(up, down, mapping, ["2025-01-05|eu|store"]);
    expect(affected).toEqual([
      "eu|2025-01-05|web",
      "eu|2025-01-05|app",
      "eu|2025-01-05|store",
      "eu|2025-01-06|web",
      "eu|2025-01-06|app",
      "eu|2025-01-06|store",
    ]);
    expect(affectedKeys(up, down, mapping, ["2025-01-05|apac|store"])).toEqual([]);
  });

  it("maps large multi subsets by ranges", () => {
    const down = multiPartitions({ date: hourly({ start: "2020-01-01" }), region: regions });
    const up = multiPartitions({ date: hourly({ start: "2020-01-01" }), region: regions });
    const space = partitionSpace(down);
    const now = new Date("2025-01-01T00:00:00Z");
    const subset = space.all(now);
    const t0 = performance.now();
    const result = upstreamPartitions(down, up, null, subset, undefined, now);
    const back = downstreamPartitions(up, down, timeWindow({ startOffset: -24 }), result.subset, undefined, now);
    expect(performance.now() - t0).toBeLessThan(100);
    expect(result.subset.equals(subset)).toBe(true);
    expect(back.equals(subset)).toBe(true);
  });

  it("reads one region of every date through a static mapping on the region dimension", () => {
    const down = multiPartitions({ date: days, market: staticPartitions(["europe"]) });
    const mapping = multiMapping({
      date: { upstreamDimension: "date", mapping: identity() },
      market: { upstreamDimension: "region", mapping: staticMapping({ eu: "europe" }) },
    });
    expect(readKeys(down, events, mapping, ["2025-01-02|europe", "2025-01-03|europe"]).keys).toEqual(["2025-01-02|eu", "2025-01-03|eu"]);
    expect(affectedKeys(events, down, mapping, ["2025-01-02|us"])).toEqual([]);
    expect(affectedKeys(events, down, mapping, ["2025-01-02|eu"])).toEqual(["2025-01-02|europe"]);
  });

  it("refuses mappings naming dimensions that do not exist", () => {
    expect(() =>
      readKeys(events, events, multiMapping({ day: { upstreamDimension: "date", mapping: identity() } }), ["2025-01-01|eu"]),
    ).toThrow(/names downstream dimension "day", but downstream has dimensions "date", "region"/);
  });
});

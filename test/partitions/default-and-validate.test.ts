import { describe, expect, it } from "vitest";
import {
  allPartitions,
  daily,
  defaultMapping,
  dynamicPartitions,
  hourly,
  identity,
  lastPartition,
  multiMapping,
  multiPartitions,
  staticMapping,
  staticPartitions,
  timeWindow,
  timeWindows,
  validateMapping,
  weekly,
} from "../../src/partitions/index.js";

const days = daily({ start: "2025-01-01" });
const berlinDays = daily({ start: "2025-01-01", timezone: "Europe/Berlin" });
const regions = staticPartitions(["eu", "us"]);

describe("defaultMapping", () => {
  it("is identity between equal definitions", () => {
    expect(defaultMapping(days, daily({ start: "2025-01-01" }))).toEqual({ mapping: identity() });
  });

  it("is allPartitions to or from an unpartitioned asset", () => {
    expect(defaultMapping(null, days)).toEqual({ mapping: allPartitions() });
    expect(defaultMapping(days, null)).toEqual({ mapping: allPartitions() });
  });

  it("is timeWindow between time definitions of one timezone", () => {
    expect(defaultMapping(weekly({ start: "2025-01-06" }), days)).toEqual({ mapping: timeWindow() });
    expect(defaultMapping(days, daily({ start: "2024-01-01" }))).toEqual({ mapping: timeWindow() });
    expect(defaultMapping(days, timeWindows({ cron: "0 6 * * *", start: "2025-01-01" }))).toEqual({ mapping: timeWindow() });
    expect(defaultMapping(days, berlinDays)).toEqual({
      mapping: null,
      reason: "time partitions in different timezones (UTC and Europe/Berlin)",
    });
  });

  it("maps the shared dimension between multi and single definitions", () => {
    const events = multiPartitions({ date: hourly({ start: "2025-01-01" }), region: regions });
    expect(defaultMapping(days, events)).toEqual({
      mapping: multiMapping({ date: { upstreamDimension: "date", mapping: timeWindow() } }),
    });
    expect(defaultMapping(events, regions)).toEqual({
      mapping: multiMapping({ region: { upstreamDimension: "region", mapping: identity() } }),
    });
    const two = multiPartitions({ a: regions, b: regions });
    expect(defaultMapping(regions, two).reason).toMatch(/several dimensions .* \(a, b\)/);
    expect(defaultMapping(staticPartitions(["x"]), events).reason).toMatch(/no dimension of multi\(.*\) pairs with static\(x\)/);
  });

  it("maps multi to multi dimension by dimension when names match", () => {
    const a = multiPartitions({ date: days, region: regions });
    const b = multiPartitions({ region: regions, date: hourly({ start: "2025-01-01" }) });
    expect(defaultMapping(a, b)).toEqual({
      mapping: multiMapping({
        date: { upstreamDimension: "date", mapping: timeWindow() },
        region: { upstreamDimension: "region", mapping: identity() },
      }),
    });
    expect(defaultMapping(a, multiPartitions({ day: days, region: regions })).mapping).toBeNull();
  });

  it("has none between unrelated definitions, saying why", () => {
    expect(defaultMapping(days, regions)).toEqual({
      mapping: null,
      reason: "no default mapping between daily(start 2025-01-01, UTC) and static(eu, us)",
    });
    expect(defaultMapping(regions, staticPartitions(["eu"])).mapping).toBeNull();
    expect(defaultMapping(dynamicPartitions("a"), dynamicPartitions("b")).mapping).toBeNull();
  });
});

describe("validateMapping", () => {
  it("accepts fitting mappings", () => {
    expect(validateMapping(days, days, null)).toEqual([]);
    expect(validateMapping(days, days, timeWindow({ startOffset: -6 }))).toEqual([]);
    expect(validateMapping(weekly({ start: "2025-01-06" }), days, timeWindow())).toEqual([]);
    expect(validateMapping(days, regions, allPartitions())).toEqual([]);
    expect(validateMapping(null, days, lastPartition())).toEqual([]);
    expect(validateMapping(days, daily({ start: "2020-01-01", endOffset: 1 }), identity())).toEqual([]);
    expect(validateMapping(staticPartitions(["eu"]), regions, identity())).toEqual([]);
  });

  it("names assets and timezones when they differ", () => {
    expect(validateMapping(days, berlinDays, timeWindow(), { downstream: "sales/revenue", upstream: "sales/orders" })).toEqual([
      "time partitions in different timezones: sales/orders is Europe/Berlin, sales/revenue is UTC",
    ]);
  });

  it("flags identity between different definitions", () => {
    expect(validateMapping(days, weekly({ start: "2025-01-06" }), identity())).toEqual([
      "identity() between different partitions: downstream is daily(start 2025-01-01, UTC), upstream is weekly(start 2025-01-06, UTC); use timeWindow()",
    ]);
    expect(validateMapping(regions, staticPartitions(["eu"]), identity())).toEqual([
      'identity(): keys of downstream that upstream does not have: "us"',
    ]);
    expect(validateMapping(days, regions, identity())[0]).toMatch(/identity\(\) between different partitions/);
  });

  it("flags timeWindow on non-time partitions", () => {
    expect(validateMapping(days, regions, timeWindow())).toEqual([
      "timeWindow() needs time partitions on both sides (downstream is daily(start 2025-01-01, UTC), upstream is static(eu, us))",
    ]);
  });

  it("flags static mappings naming keys the definitions do not have", () => {
    const problems = validateMapping(
      regions,
      staticPartitions(["eu-west", "us-east"]),
      staticMapping({ "eu-west": "eu", "ap-south": "apac" }),
      {
        downstream: "sales/by_region",
        upstream: "sales/by_zone",
      },
    );
    expect(problems).toEqual([
      'staticMapping() names upstream keys that are not partitions of sales/by_zone (static(eu-west, us-east)): "ap-south"',
      'staticMapping() names downstream keys that are not partitions of sales/by_region (static(eu, us)): "apac"',
    ]);
    expect(validateMapping(regions, dynamicPartitions("zones"), staticMapping({ anything: "eu" }))).toEqual([]);
  });

  it("flags mappings that cannot apply to an unpartitioned side", () => {
    expect(validateMapping(null, days, timeWindow())[0]).toMatch(/downstream is unpartitioned: it reads all partitions/);
    expect(validateMapping(days, null, identity())[0]).toMatch(
      /upstream is unpartitioned: every partition of downstream reads its single partition/,
    );
  });

  it("reports when there is no default mapping", () => {
    expect(validateMapping(days, regions, null)).toEqual([
      "no default partition mapping from upstream to downstream: no default mapping between daily(start 2025-01-01, UTC) and static(eu, us)",
    ]);
  });

  it("checks multi mappings dimension by dimension", () => {
    const a = multiPartitions({ date: days, region: regions });
    const b = multiPartitions({ date: berlinDays, region: regions });
    expect(validateMapping(a, b, multiMapping({ date: { upstreamDimension: "date", mapping: timeWindow() } }))).toEqual([
      'time partitions in different timezones: upstream dimension "date" is Europe/Berlin, downstream dimension "date" is UTC',
    ]);
    expect(validateMapping(a, a, multiMapping({ date: { upstreamDimension: "region", mapping: timeWindow() } }))[0]).toMatch(
      /entry "date": timeWindow\(\) needs time partitions on both sides/,
    );
    expect(validateMapping(a, a, multiMapping({ date: { upstreamDimension: "nope", mapping: identity() } }))[0]).toMatch(
      /names upstream dimension "nope", but upstream has dimensions "date", "region"/,
    );
    expect(
      validateMapping(
        a,
        a,
        multiMapping({
          date: { upstreamDimension: "date", mapping: identity() },
          region: { upstreamDimension: "date", mapping: allPartitions() },
        }),
      ),
    ).toEqual(['multiMapping() entries "date" and "region" all read upstream dimension "date"']);
    expect(
      validateMapping(
        days,
        a,
        multiMapping({ x: { upstreamDimension: "date", mapping: identity() }, y: { upstreamDimension: "region", mapping: identity() } }),
      )[0],
    ).toMatch(/downstream has a single dimension .* needs exactly one entry, got 2/);
  });
});

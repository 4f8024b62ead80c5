import { describe, expect, it } from "vitest";
import { DefinitionError } from "../../src/errors/index.js";
import {
  allPartitions,
  daily,
  dynamicPartitions,
  hourly,
  identity,
  lastPartition,
  monthly,
  multiMapping,
  multiPartitions,
  staticMapping,
  staticPartitions,
  timeWindow,
  timeWindows,
  weekly,
  type TimePartitionsOptions,
} from "../../src/partitions/index.js";

function definitionError(fn: () => unknown): DefinitionError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

const asOptions = (value: unknown) => value as TimePartitionsOptions;

describe("time constructors", () => {
  it("return frozen plain JSON specs with defaults filled in", () => {
    const spec = daily({ start: "2025-01-01" });
    expect(spec).toEqual({
      kind: "time",
      cadence: "daily",
      cron: "0 0 * * *",
      start: "2025-01-01",
      timezone: "UTC",
      endOffset: 0,
      format: "yyyy-MM-dd",
    });
    expect(Object.isFrozen(spec)).toBe(true);
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
    expect(hourly({ start: "2025-01-01T06:00", end: "2025-02-01", timezone: "Europe/Berlin", endOffset: 1 })).toMatchObject({
      cadence: "hourly",
      cron: "0 * * * *",
      format: "yyyy-MM-dd-HH:mm",
      end: "2025-02-01",
      endOffset: 1,
    });
    expect(weekly({ start: "2025-01-06" }).cron).toBe("0 0 * * 1");
    expect(monthly({ start: "2025-01-01" }).cron).toBe("0 0 1 * *");
    expect(timeWindows({ cron: "0 6 * * *", start: "2025-01-01" })).toMatchObject({ cadence: "cron", format: "yyyy-MM-dd-HH:mm" });
  });

  it("name the field of an unknown time zone", () => {
    const err = definitionError(() => daily({ start: "2025-01-01", timezone: "Mars/Olympus" }));
    expect(err.message).toBe('daily(): field "timezone": unknown time zone "Mars/Olympus" (expected an IANA name such as "Europe/Berlin")');
    expect(err.location).toEqual({ field: "timezone" });
    expect(err.code).toBe("DEFINITION_INVALID");
  });

  const bad: [string, () => unknown, RegExp][] = [
    ["missing start", () => daily(asOptions({})), /^daily\(\): field "start": /],
    ["start not a date", () => hourly({ start: "yesterday" }), /^hourly\(\): field "start": invalid date "yesterday"/],
    ["impossible date", () => daily({ start: "2025-02-30" }), /field "start": invalid date "2025-02-30"/],
    ["bad time", () => daily({ start: "2025-01-01T24:00" }), /field "start": invalid date/],
    [
      "end before start",
      () => daily({ start: "2025-02-01", end: "2025-01-01" }),
      /^daily\(\): field "end": end "2025-01-01" must be after start "2025-02-01"$/,
    ],
    ["end equal to start", () => weekly({ start: "2025-01-06", end: "2025-01-06" }), /field "end": end "2025-01-06" must be after start/],
    ["end equal to start (time)", () => hourly({ start: "2025-01-01T06:00", end: "2025-01-01T06:00" }), /field "end"/],
    ["no window fits", () => weekly({ start: "2025-01-07", end: "2025-01-10" }), /field "end": no window starts between/],
    ["fractional endOffset", () => daily({ start: "2025-01-01", endOffset: 0.5 }), /field "endOffset": expected an integer/],
    ["endOffset not a number", () => daily(asOptions({ start: "2025-01-01", endOffset: "1" })), /field "endOffset"/],
    ["unknown option", () => monthly(asOptions({ start: "2025-01-01", tz: "UTC" })), /^monthly\(\): field "tz": unknown option$/],
    ["not an object", () => daily(asOptions(undefined)), /^daily\(\): /],
    ["missing cron", () => timeWindows({ start: "2025-01-01" } as never), /^timeWindows\(\): field "cron"/],
    ["cron garbage", () => timeWindows({ cron: "every day", start: "2025-01-01" }), /field "cron": invalid cron "every day"/],
    ["cron out of range", () => timeWindows({ cron: "61 * * * *", start: "2025-01-01" }), /field "cron": invalid cron "61 \* \* \* \*"/],
    ["cron with 4 fields", () => timeWindows({ cron: "* * * *", start: "2025-01-01" }), /expected 5 fields .* got 4/],
    ["cron with seconds", () => timeWindows({ cron: "0 0 6 * * *", start: "2025-01-01" }), /expected 5 fields .* got 6/],
    ["impossible cron day", () => timeWindows({ cron: "0 0 30 2 *", start: "2025-01-01" }), /field "cron": invalid cron/],
    ["format with |", () => timeWindows({ cron: "0 6 * * *", start: "2025-01-01", format: "yyyy|MM" }), /field "format"/],
  ];
  for (const [name, fn, message] of bad) {
    it(`reject ${name}`, () => {
      expect(definitionError(fn).message).toMatch(message);
    });
  }
});

describe("static, dynamic and multi constructors", () => {
  it("build frozen specs", () => {
    const regions = staticPartitions(["eu", "us"]);
    expect(regions).toEqual({ kind: "static", keys: ["eu", "us"] });
    expect(Object.isFrozen(regions.keys)).toBe(true);
    expect(dynamicPartitions("customers")).toEqual({ kind: "dynamic", name: "customers" });
    const multi = multiPartitions({ region: regions, date: daily({ start: "2025-01-01" }), channel: staticPartitions(["web", "app"]) });
    expect(multi.dimensions.map((d) => d.name)).toEqual(["region", "date", "channel"]);
    expect(Object.isFrozen(multi.dimensions[1]!.partitions)).toBe(true);
  });

  const bad: [string, () => unknown, RegExp][] = [
    ["empty static list", () => staticPartitions([]), /^staticPartitions\(\): field "keys": expected at least one key$/],
    ["duplicate static key", () => staticPartitions(["eu", "us", "eu"]), /^staticPartitions\(\): field "keys\[2\]": duplicate key "eu"$/],
    ["| in a key", () => staticPartitions(["eu|west"]), /field "keys\[0\]": partition key "eu\|west" must not contain "\|"/],
    ["empty key", () => staticPartitions(["eu", ""]), /field "keys\[1\]": empty partition key/],
    ["non-string key", () => staticPartitions([1 as unknown as string]), /field "keys\[0\]"/],
    ["empty dynamic name", () => dynamicPartitions(" "), /^dynamicPartitions\(\): field "name": empty name$/],
    [
      "one dimension",
      () => multiPartitions({ region: staticPartitions(["eu"]) }),
      /^multiPartitions\(\): expected at least 2 dimensions, got 1$/,
    ],
    [
      "two time dimensions",
      () => multiPartitions({ a: daily({ start: "2025-01-01" }), b: hourly({ start: "2025-01-01" }) }),
      /at most one time dimension is supported, got a, b/,
    ],
    [
      "nested multi",
      () =>
        multiPartitions({
          a: staticPartitions(["x"]),
          b: multiPartitions({ c: staticPartitions(["y"]), d: staticPartitions(["z"]) }) as never,
        }),
      /field "b/,
    ],
    [
      "| in a dimension name",
      () => multiPartitions({ "a|b": staticPartitions(["x"]), c: staticPartitions(["y"]) }),
      /field "a\|b": dimension name "a\|b" must not contain/,
    ],
    [
      "a hand-made invalid dimension",
      () => multiPartitions({ a: { kind: "static", keys: [] }, b: staticPartitions(["y"]) }),
      /field "a.keys": expected at least one key/,
    ],
    [
      "a hand-made time dimension with a bad zone",
      () => multiPartitions({ a: { ...daily({ start: "2025-01-01" }), timezone: "Nowhere/Land" }, b: staticPartitions(["y"]) }),
      /field "a.timezone": unknown time zone "Nowhere\/Land"/,
    ],
  ];
  for (const [name, fn, message] of bad) {
    it(`reject ${name}`, () => {
      expect(definitionError(fn).message).toMatch(message);
    });
  }
});

describe("mapping constructors", () => {
  it("build frozen specs", () => {
    expect(identity()).toEqual({ kind: "identity" });
    expect(timeWindow()).toEqual({ kind: "timeWindow", startOffset: 0, endOffset: 0 });
    expect(timeWindow({ startOffset: -6 })).toEqual({ kind: "timeWindow", startOffset: -6, endOffset: 0 });
    expect(allPartitions()).toEqual({ kind: "all" });
    expect(lastPartition()).toEqual({ kind: "last" });
    expect(staticMapping({ "eu-west": "eu", "us-east": ["us", "global"] })).toEqual({
      kind: "static",
      map: { "eu-west": ["eu"], "us-east": ["us", "global"] },
    });
    const m = multiMapping({ date: { upstreamDimension: "day", mapping: timeWindow({ startOffset: -1 }) } });
    expect(m.dimensions.date!.mapping).toEqual({ kind: "timeWindow", startOffset: -1, endOffset: 0 });
    expect(Object.isFrozen(m.dimensions.date)).toBe(true);
  });

  const bad: [string, () => unknown, RegExp][] = [
    ["fractional offset", () => timeWindow({ startOffset: -1.5 }), /^timeWindow\(\): field "startOffset": expected an integer/],
    ["start after end", () => timeWindow({ startOffset: 1, endOffset: 0 }), /field "startOffset": startOffset 1 is after endOffset 0/],
    ["unknown option", () => timeWindow({ start: -1 } as never), /field "start": unknown option/],
    ["empty downstream list", () => staticMapping({ a: [] }), /^staticMapping\(\): field "map.a": expected at least one downstream key/],
    ["| in a mapped key", () => staticMapping({ a: "b|c" }), /field "map.a\[0\]"/],
    ["no dimensions", () => multiMapping({}), /^multiMapping\(\): field "dimensions": expected at least one dimension/],
    [
      "nested multi",
      () => multiMapping({ a: { upstreamDimension: "a", mapping: multiMapping({ b: { upstreamDimension: "b", mapping: identity() } }) } }),
      /field "dimensions.a.mapping/,
    ],
    ["missing upstream dimension", () => multiMapping({ a: { mapping: identity() } as never }), /field "dimensions.a.upstreamDimension"/],
  ];
  for (const [name, fn, message] of bad) {
    it(`reject ${name}`, () => {
      expect(definitionError(fn).message).toMatch(message);
    });
  }
});

import { describe, expect, it } from "vitest";
import { DefinitionError, PartitionError } from "../../src/errors/index.js";
import {
  daily,
  describeMapping,
  describePartitions,
  dynamicPartitions,
  hourly,
  multiMapping,
  multiPartitions,
  parsePartitionMappingSpec,
  parsePartitionsSpec,
  partitionKeyProblem,
  partitionKeyWindowIso,
  partitionSpace,
  specHash,
  specsEqual,
  staticPartitions,
  timeWindow,
  timeWindows,
  weekly,
} from "../../src/partitions/index.js";

describe("describePartitions", () => {
  it("reads like the constructor call", () => {
    expect(describePartitions(daily({ start: "2025-01-01" }))).toBe("daily(start 2025-01-01, UTC)");
    expect(describePartitions(hourly({ start: "2025-01-01T06:00", end: "2026-01-01", timezone: "Europe/Berlin", endOffset: 1 }))).toBe(
      "hourly(start 2025-01-01T06:00, end 2026-01-01, Europe/Berlin, endOffset 1)",
    );
    expect(describePartitions(timeWindows({ cron: "0 6 * * *", start: "2025-01-01", format: "yyyyMMdd" }))).toBe(
      'timeWindows("0 6 * * *", start 2025-01-01, UTC, format yyyyMMdd)',
    );
    expect(describePartitions(staticPartitions(["a", "b", "c", "d", "e", "f", "g"]))).toBe("static(a, b, c, d, e, … 7 keys)");
    expect(describePartitions(dynamicPartitions("customers"))).toBe('dynamic("customers")');
    expect(describePartitions(multiPartitions({ date: weekly({ start: "2025-01-06" }), region: staticPartitions(["eu"]) }))).toBe(
      "multi(date: weekly(start 2025-01-06, UTC) × region: static(eu))",
    );
    expect(describePartitions(null)).toBe("unpartitioned");
    expect(describeMapping(multiMapping({ date: { upstreamDimension: "day", mapping: timeWindow({ startOffset: -6 }) } }))).toBe(
      "multiMapping(date ← day: timeWindow(startOffset -6))",
    );
  });
});

describe("specsEqual and specHash", () => {
  it("compare by content, not identity or key order", () => {
    const a = daily({ start: "2025-01-01", timezone: "UTC" });
    const b = daily({ start: "2025-01-01" });
    const shuffled = JSON.parse(
      JSON.stringify({
        format: b.format,
        timezone: b.timezone,
        start: b.start,
        kind: "time",
        cadence: "daily",
        cron: b.cron,
        endOffset: 0,
      }),
    );
    expect(specsEqual(a, b)).toBe(true);
    expect(specsEqual(a, shuffled)).toBe(true);
    expect(specHash(a)).toBe(specHash(shuffled));
    expect(specHash(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(specsEqual(a, daily({ start: "2025-01-02" }))).toBe(false);
    expect(specHash(a)).not.toBe(specHash(daily({ start: "2025-01-02" })));
    expect(specsEqual(staticPartitions(["a", "b"]), staticPartitions(["b", "a"]))).toBe(false);
    expect(specsEqual(null, null)).toBe(true);
    expect(specsEqual(a, null)).toBe(false);
    expect(specHash(null)).not.toBe(specHash(a));
    // Stable across versions: stored hashes must keep matching.
    expect(specHash(staticPartitions(["eu", "us"]))).toBe(specHash({ kind: "static", keys: ["eu", "us"] }));
  });
});

describe("partitionKeyWindowIso", () => {
  it("gives the window in the definition's timezone", () => {
    expect(partitionKeyWindowIso(daily({ start: "2025-01-01", timezone: "Europe/Berlin" }), "2025-03-30")).toEqual({
      start: "2025-03-30T00:00:00+01:00",
      end: "2025-03-31T00:00:00+02:00",
    });
    expect(partitionKeyWindowIso(daily({ start: "2025-01-01" }), "2025-03-15")).toEqual({
      start: "2025-03-15T00:00:00Z",
      end: "2025-03-16T00:00:00Z",
    });
    const multi = multiPartitions({
      customer: dynamicPartitions("customers"),
      hour: hourly({ start: "2025-01-01", timezone: "America/New_York" }),
    });
    expect(partitionKeyWindowIso(multi, "c-1|2025-11-02-01:00-05:00")).toEqual({
      start: "2025-11-02T01:00:00-05:00",
      end: "2025-11-02T02:00:00-05:00",
    });
    expect(partitionKeyWindowIso(staticPartitions(["eu"]), "eu")).toBeUndefined();
    expect(() => partitionKeyWindowIso(daily({ start: "2025-01-01" }), "nope")).toThrow(PartitionError);
    expect(() => partitionKeyWindowIso(multi, "2025-11-02-01:00")).toThrow(/expected 2 keys separated by "\|" \(customer\|hour\)/);
  });
});

describe("parsePartitionsSpec and parsePartitionMappingSpec", () => {
  it("accept specs read back from JSON and freeze them", () => {
    const spec = multiPartitions({ date: daily({ start: "2025-01-01" }), region: staticPartitions(["eu"]) });
    const parsed = parsePartitionsSpec(JSON.parse(JSON.stringify(spec)));
    expect(parsed).toEqual(spec);
    expect(Object.isFrozen(parsed)).toBe(true);
    const mapping = multiMapping({ date: { upstreamDimension: "date", mapping: timeWindow({ startOffset: -1 }) } });
    expect(parsePartitionMappingSpec(JSON.parse(JSON.stringify(mapping)))).toEqual(mapping);
  });

  it("reject invalid specs naming the field", () => {
    const bad = (value: unknown) => () => parsePartitionsSpec(value);
    expect(bad({ ...daily({ start: "2025-01-01" }), timezone: "Mars/Olympus" })).toThrow(
      'partitions spec: field "timezone": unknown time zone "Mars/Olympus"',
    );
    expect(bad({ ...daily({ start: "2025-01-01" }), cron: "0 1 * * *" })).toThrow(
      /field "cron": a daily definition has cron "0 0 \* \* \*"/,
    );
    expect(bad({ kind: "static", keys: ["a", "a"] })).toThrow(/field "keys\[1\]": duplicate key "a"/);
    expect(bad({ kind: "unknown" })).toThrow(DefinitionError);
    expect(() => parsePartitionMappingSpec({ kind: "timeWindow", startOffset: 1, endOffset: 0 })).toThrow(
      /startOffset 1 is after endOffset 0/,
    );
    expect(() => partitionSpace({ kind: "static", keys: [] })).toThrow(DefinitionError);
  });

  it("check dynamic keys before they are added", () => {
    expect(partitionKeyProblem("customer-1")).toBeUndefined();
    expect(partitionKeyProblem("a|b")).toMatch(/must not contain "\|"/);
    expect(partitionKeyProblem("")).toBe("empty partition key");
  });
});

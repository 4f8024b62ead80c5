import { describe, expect, it } from "vitest";
import { PartitionError } from "../../src/errors/index.js";
import { PartitionSubset, daily, hourly, monthly, partitionSpace, weekly } from "../../src/partitions/index.js";

const HOUR = 3_600_000;
const at = (iso: string) => new Date(iso);
const hoursOf = (w: { start: Date; end: Date } | undefined) => (w!.end.getTime() - w!.start.getTime()) / HOUR;

function partitionError(fn: () => unknown): PartitionError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PartitionError);
    return err as PartitionError;
  }
  throw new Error("expected a PartitionError");
}

describe("daily", () => {
  const days = partitionSpace(daily({ start: "2025-01-01" }));

  it("round-trips keys and indices", () => {
    for (let i = 0; i < 2000; i += 7) expect(days.indexOf(days.keyAt(i))).toBe(i);
    expect(days.keyAt(0)).toBe("2025-01-01");
    expect(days.keyAt(59)).toBe("2025-03-01");
    expect(days.indexOf("2028-02-29")).toBe(1154);
  });

  it("rejects bad keys naming the key, the definition and what was expected", () => {
    const err = partitionError(() => days.indexOf("2025-13-01"));
    expect(err.message).toBe(
      '"2025-13-01" is not a partition of daily(start 2025-01-01, UTC): 2025-13-01 is not a day: there is no month 13',
    );
    expect(err.code).toBe("PARTITION_KEY_INVALID");
    expect(err.location).toEqual({ partitionKey: "2025-13-01" });
    expect(partitionError(() => days.indexOf("2024-12-31")).message).toMatch(/before the first partition "2025-01-01"/);
    expect(partitionError(() => days.indexOf("2025-1-01")).message).toMatch(/expected yyyy-MM-dd/);
    expect(days.has("2025-02-29")).toBe(false);
    expect(days.has("2099-12-31")).toBe(true);
  });

  it("reads only ASCII digits in the fixed positions of the built-in formats", () => {
    const hours = partitionSpace(hourly({ start: "2025-01-01" }));
    for (const key of ["2025-0\u0661-01", "+025-01-01", "2025+01-01", "2025-01-1 ", " 2025-01-01", "2025-01-01 ", "2025-01-0x"]) {
      expect(days.has(key), key).toBe(false);
    }
    expect(partitionError(() => days.indexOf("2025-01-0x")).message).toMatch(/expected yyyy-MM-dd$/);
    for (const key of ["2025-01-01-07:3x", "2025-01-01T07:00", "2025-01-01-07-00", "2025-01-01-7:00", "2025-01-01-07:000"]) {
      expect(hours.has(key), key).toBe(false);
    }
    expect(partitionError(() => hours.indexOf("2025-01-01-07:30")).message).toMatch(
      /no window starts at it; the nearest partitions are "2025-01-01-07:00" and "2025-01-01-08:00"$/,
    );
    expect(hours.indexOf("2025-01-01-07:00")).toBe(7);
  });

  it("says why a well-formed key is not a day on the calendar", () => {
    expect(partitionError(() => days.indexOf("2025-02-30")).message).toMatch(/: 2025-02-30 is not a day: February 2025 has 28 days$/);
    expect(partitionError(() => days.indexOf("2024-02-30")).message).toMatch(/: 2024-02-30 is not a day: February 2024 has 29 days$/);
    expect(partitionError(() => days.indexOf("2025-04-31")).message).toMatch(/: 2025-04-31 is not a day: April 2025 has 30 days$/);
    expect(partitionError(() => days.indexOf("2025-04-00")).message).toMatch(/: 2025-04-00 is not a day: days start at 01$/);
    const hours = partitionSpace(hourly({ start: "2025-01-01" }));
    expect(partitionError(() => hours.indexOf("2025-02-29-10:00")).message).toMatch(/2025-02-29 is not a day: February 2025 has 28 days$/);
    expect(partitionError(() => hours.indexOf("2025-02-10-24:00")).message).toMatch(/24:00 is not a time of day \(00:00 … 23:59\)$/);
  });

  it("counts a partition once its window has closed", () => {
    expect(days.count(at("2024-06-01T00:00:00Z"))).toBe(0);
    expect(days.count(at("2025-01-01T00:00:00Z"))).toBe(0);
    expect(days.count(at("2025-01-01T23:59:59.999Z"))).toBe(0);
    expect(days.count(at("2025-01-02T00:00:00Z"))).toBe(1);
    expect(days.count(at("2026-01-01T00:00:00Z"))).toBe(365);
    expect(days.all(at("2025-01-11T12:00:00Z")).serialize()).toBe("0-10");
    expect(days.size).toBe(Infinity);
    expect(() => days.count(new Date("not a date"))).toThrow(PartitionError);
  });

  it("counts the open window too with endOffset 1, and n windows ahead with n", () => {
    const open = partitionSpace(daily({ start: "2025-01-01", endOffset: 1 }));
    expect(open.count(at("2024-12-31T23:59:59Z"))).toBe(0);
    expect(open.count(at("2025-01-01T00:00:00Z"))).toBe(1);
    expect(open.count(at("2025-01-01T13:00:00Z"))).toBe(1);
    expect(open.count(at("2025-01-02T00:00:00Z"))).toBe(2);
    const ahead = partitionSpace(daily({ start: "2025-01-01", endOffset: 3 }));
    expect(ahead.count(at("2025-01-01T13:00:00Z"))).toBe(3);
    const lagging = partitionSpace(daily({ start: "2025-01-01", endOffset: -1 }));
    expect(lagging.count(at("2025-01-02T00:00:00Z"))).toBe(0);
    expect(lagging.count(at("2025-01-03T00:00:00Z"))).toBe(1);
  });

  it("respects end (exclusive)", () => {
    const january = partitionSpace(daily({ start: "2025-01-01", end: "2025-02-01", endOffset: 5 }));
    expect(january.size).toBe(31);
    expect(january.count(at("2025-01-10T00:00:00Z"))).toBe(14);
    expect(january.count(at("2030-01-01T00:00:00Z"))).toBe(31);
    expect(january.keyAt(30)).toBe("2025-01-31");
    expect(partitionError(() => january.indexOf("2025-02-01")).message).toMatch(/after the last partition "2025-01-31" \(end 2025-02-01\)/);
    expect(partitionError(() => january.keyAt(31)).code).toBe("PARTITION_INDEX_INVALID");
  });

  it("follows the wall clock of its zone: windows are 23 or 25 hours on DST change days", () => {
    const berlin = partitionSpace(daily({ start: "2025-01-01", timezone: "Europe/Berlin" }));
    expect(berlin.window("2025-01-01")).toEqual({ start: at("2024-12-31T23:00:00Z"), end: at("2025-01-01T23:00:00Z") });
    expect(hoursOf(berlin.window("2025-03-30"))).toBe(23);
    expect(hoursOf(berlin.window("2025-10-26"))).toBe(25);
    expect(hoursOf(berlin.window("2025-07-01"))).toBe(24);
    expect(berlin.count(at("2025-01-01T22:59:59Z"))).toBe(0);
    expect(berlin.count(at("2025-01-01T23:00:00Z"))).toBe(1);
    const ny = partitionSpace(daily({ start: "2025-01-01", timezone: "America/New_York" }));
    expect(hoursOf(ny.window("2025-03-09"))).toBe(23);
    expect(hoursOf(ny.window("2025-11-02"))).toBe(25);
    expect(ny.window("2025-11-02")!.start).toEqual(at("2025-11-02T04:00:00Z"));
  });

  it("starts a day after a skipped midnight, and ends it after a repeated hour (America/Santiago)", () => {
    const santiago = partitionSpace(daily({ start: "2025-01-01", timezone: "America/Santiago" }));
    // 2025-09-07: clocks jump from 00:00 to 01:00, so the day starts at 01:00 -03:00.
    expect(santiago.window("2025-09-07")).toEqual({ start: at("2025-09-07T04:00:00Z"), end: at("2025-09-08T03:00:00Z") });
    expect(santiago.count(at("2025-09-07T03:59:59Z"))).toBe(santiago.indexOf("2025-09-06"));
    expect(santiago.count(at("2025-09-07T04:00:00Z"))).toBe(santiago.indexOf("2025-09-07"));
    // 2025-04-05: 24:00 becomes 23:00, so that day is 25 hours.
    expect(hoursOf(santiago.window("2025-04-05"))).toBe(25);
    for (let i = 0; i < 730; i++) expect(santiago.indexOf(santiago.keyAt(i))).toBe(i);
  });

  it("starts with the next day when start is later than midnight", () => {
    const s = partitionSpace(daily({ start: "2025-01-01T06:00" }));
    expect(s.keyAt(0)).toBe("2025-01-02");
  });

  it("gives ranges (inclusive), subsets and keys", () => {
    const r = days.range("2025-01-10", "2025-01-12");
    expect(r.serialize()).toBe("9-12");
    expect([...days.keys(r)]).toEqual(["2025-01-10", "2025-01-11", "2025-01-12"]);
    expect(days.range("2025-01-10", "2025-01-10").count()).toBe(1);
    const err = partitionError(() => days.range("2025-01-12", "2025-01-10"));
    expect(err.code).toBe("PARTITION_RANGE_INVALID");
    expect(err.message).toMatch(/"2025-01-12" comes after "2025-01-10"/);
    expect(days.subset(["2025-01-03", "2025-01-01", "2025-01-02", "2025-01-09"]).serialize()).toBe("0-3,8-9");
    expect(days.dimensions("2025-01-01")).toBeUndefined();
    expect(() => [...days.keys(PartitionSubset.range(-1, 2))]).toThrow(PartitionError);
  });
});

describe("weekly and monthly", () => {
  it("weeks start on Monday 00:00", () => {
    const weeks = partitionSpace(weekly({ start: "2025-01-01", timezone: "Europe/Berlin" }));
    expect(weeks.keyAt(0)).toBe("2025-01-06");
    expect(weeks.keyAt(1)).toBe("2025-01-13");
    expect(weeks.window("2025-01-06")!.start).toEqual(at("2025-01-05T23:00:00Z"));
    expect(hoursOf(weeks.window("2025-03-24"))).toBe(167);
    expect(hoursOf(weeks.window("2025-10-20"))).toBe(169);
    expect(partitionError(() => weeks.indexOf("2025-01-08")).message).toBe(
      '"2025-01-08" is not a partition of weekly(start 2025-01-01, Europe/Berlin): no window starts at it; the nearest partitions are "2025-01-06" and "2025-01-13"',
    );
    for (let i = 0; i < 600; i += 13) expect(weeks.indexOf(weeks.keyAt(i))).toBe(i);
    expect(weeks.count(at("2025-01-13T00:00:00Z"))).toBe(1);
  });

  it("a Monday start is the first week", () => {
    expect(partitionSpace(weekly({ start: "2025-01-06" })).keyAt(0)).toBe("2025-01-06");
  });

  it("months start on the 1st", () => {
    const months = partitionSpace(monthly({ start: "2024-11-15", timezone: "America/New_York" }));
    expect(months.keyAt(0)).toBe("2024-12-01");
    expect(months.keyAt(2)).toBe("2025-02-01");
    expect(hoursOf(months.window("2025-02-01"))).toBe(28 * 24);
    expect(hoursOf(months.window("2025-03-01"))).toBe(31 * 24 - 1);
    expect(months.indexOf("2030-06-01")).toBe(66);
    expect(partitionError(() => months.indexOf("2025-02-02")).message).toMatch(/nearest partitions are "2025-02-01" and "2025-03-01"/);
    expect(months.count(at("2025-03-01T05:00:00Z"))).toBe(3);
    expect(months.count(at("2025-03-01T04:59:59Z"))).toBe(2);
  });
});

describe("hourly across DST", () => {
  const ny = partitionSpace(hourly({ start: "2025-01-01", timezone: "America/New_York" }));
  const berlin = partitionSpace(hourly({ start: "2025-01-01", timezone: "Europe/Berlin" }));

  it("skips the spring-forward hour (New York, 2025-03-09)", () => {
    const i = ny.indexOf("2025-03-09-01:00");
    expect(ny.keyAt(i + 1)).toBe("2025-03-09-03:00");
    expect(hoursOf(ny.windowAt(i))).toBe(1);
    expect(partitionError(() => ny.indexOf("2025-03-09-02:00")).message).toMatch(/does not exist in America\/New_York/);
  });

  it("gives the repeated fall-back hour two keys, the second with its offset (New York, 2025-11-02)", () => {
    const i = ny.indexOf("2025-11-02-01:00");
    expect([0, 1, 2].map((d) => ny.keyAt(i + d))).toEqual(["2025-11-02-01:00", "2025-11-02-01:00-05:00", "2025-11-02-02:00"]);
    expect(ny.window("2025-11-02-01:00")).toEqual({ start: at("2025-11-02T05:00:00Z"), end: at("2025-11-02T06:00:00Z") });
    expect(ny.window("2025-11-02-01:00-05:00")).toEqual({ start: at("2025-11-02T06:00:00Z"), end: at("2025-11-02T07:00:00Z") });
    expect(ny.indexOf("2025-11-02-01:00-05:00")).toBe(i + 1);
    expect(partitionError(() => ny.indexOf("2025-11-02-01:00-04:00")).message).toMatch(/did you mean "2025-11-02-01:00"\?/);
  });

  it("does the same in Europe/Berlin (2025-03-30 and 2025-10-26)", () => {
    const spring = berlin.indexOf("2025-03-30-01:00");
    expect(berlin.keyAt(spring + 1)).toBe("2025-03-30-03:00");
    const fall = berlin.indexOf("2025-10-26-02:00");
    expect([0, 1, 2].map((d) => berlin.keyAt(fall + d))).toEqual(["2025-10-26-02:00", "2025-10-26-02:00+01:00", "2025-10-26-03:00"]);
    expect(berlin.window("2025-10-26-02:00+01:00")!.start).toEqual(at("2025-10-26T01:00:00Z"));
  });

  it("round-trips key → window → key for every hour of a year, each window one real hour", () => {
    for (const space of [ny, berlin]) {
      const keys = new Set<string>();
      for (let i = 0; i < 24 * 366; i++) {
        const key = space.keyAt(i);
        keys.add(key);
        const w = space.windowAt(i)!;
        expect(w.end.getTime() - w.start.getTime()).toBe(HOUR);
        expect(space.indexOf(key)).toBe(i);
      }
      expect(keys.size).toBe(24 * 366);
    }
  });

  it("a day of hours is 23, 24 or 25 partitions", () => {
    const hoursIn = (from: string, to: string) => ny.indexOf(to) - ny.indexOf(from);
    expect(hoursIn("2025-03-09-00:00", "2025-03-10-00:00")).toBe(23);
    expect(hoursIn("2025-11-02-00:00", "2025-11-03-00:00")).toBe(25);
    expect(hoursIn("2025-06-01-00:00", "2025-06-02-00:00")).toBe(24);
  });

  it("starts at the next hour when start is not on the hour, and counts with end", () => {
    const s = partitionSpace(hourly({ start: "2025-01-01T06:30", end: "2025-01-02", timezone: "Asia/Kolkata" }));
    expect(s.keyAt(0)).toBe("2025-01-01-07:00");
    expect(s.window("2025-01-01-07:00")!.start).toEqual(at("2025-01-01T01:30:00Z"));
    expect(s.size).toBe(17);
    expect(s.count(at("2025-01-01T03:30:00Z"))).toBe(2);
  });
});

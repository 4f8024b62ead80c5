import { CronExpressionParser } from "cron-parser";
import { DateTime } from "luxon";
import { describe, expect, it } from "vitest";
import { partitionSpace, timeWindows } from "../../src/partitions/index.js";

/** Ticks as cron-parser lists them, from `from` (exclusive) while before `until`. */
function cronParserTicks(cron: string, tz: string, from: Date, until: Date): number[] {
  const it = CronExpressionParser.parse(cron, { tz, currentDate: from });
  const out: number[] = [];
  for (;;) {
    const t = it.next().toDate().getTime();
    if (t >= until.getTime()) return out;
    out.push(t);
  }
}

const zones = ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata"];
const dailyish = ["0 6 * * *", "30 1 * * *", "30 2 * * *", "0 0 * * 1-5", "15 3 L * *", "0 12 * * 5#2", "0 0 1 */3 *"];
const subDaily = ["0 * * * *", "*/30 * * * *", "*/20 1-3 * * *"];
// cron-parser costs ~0.1 ms per tick: sub-daily crons are compared around the DST changes only.
const periods: Record<string, [string, string][]> = {
  year: [["2025-01-01", "2026-01-01"]],
  dst: [
    ["2025-03-05", "2025-04-05"],
    ["2025-10-20", "2025-11-10"],
  ],
};

/** Whether the zone's UTC offset changes within a day either side of `t`: ticks there follow the DST rules below. */
function nearChange(tz: string, t: number): boolean {
  const offset = (x: number) => DateTime.fromMillis(x, { zone: tz }).offset;
  return offset(t - 86_400_000) !== offset(t + 86_400_000);
}

describe("timeWindows({ cron }) boundaries", () => {
  for (const tz of zones) {
    for (const cron of [...dailyish, ...subDaily]) {
      it(`match cron-parser for "${cron}" in ${tz} away from DST changes`, () => {
        for (const [from, to] of periods[subDaily.includes(cron) ? "dst" : "year"]!) {
          const space = partitionSpace(timeWindows({ cron, start: from, timezone: tz }));
          const first = space.windowAt(0)!.start;
          const until = new Date(`${to}T00:00:00Z`).getTime();
          const expected = cronParserTicks(cron, tz, new Date(first.getTime() - 1), new Date(until)).filter((t) => !nearChange(tz, t));
          const actual: number[] = [];
          for (let i = 0; space.windowAt(i)!.start.getTime() < until; i++) {
            const t = space.windowAt(i)!.start.getTime();
            if (!nearChange(tz, t)) actual.push(t);
            // Round trip key → index for every window.
            expect(space.indexOf(space.keyAt(i))).toBe(i);
          }
          expect(actual.map((t) => new Date(t).toISOString())).toEqual(expected.map((t) => new Date(t).toISOString()));
        }
      });
    }
  }

  const startsOf = (cron: string, timezone: string, start: string, n: number) => {
    const space = partitionSpace(timeWindows({ cron, start, timezone }));
    return Array.from({ length: n }, (_, i) => [space.keyAt(i), space.windowAt(i)!.start.toISOString()]);
  };

  it("a daily time the clock shows twice (fall-back night) starts its window at the second occurrence", () => {
    const space = partitionSpace(timeWindows({ cron: "30 1 * * *", start: "2024-11-01", timezone: "America/New_York" }));
    const window = space.window("2024-11-02-01:30")!;
    expect(window.start.toISOString()).toBe("2024-11-02T05:30:00.000Z");
    expect(window.end.toISOString()).toBe("2024-11-03T06:30:00.000Z"); // 01:30 EST: a 25-hour window
    // Only the second 01:30 is a window start, so its key needs no offset suffix.
    expect(space.window("2024-11-03-01:30")!.start.toISOString()).toBe("2024-11-03T06:30:00.000Z");
    expect(space.keyAt(space.indexOf("2024-11-03-01:30"))).toBe("2024-11-03-01:30");
    expect(() => space.indexOf("2024-11-03-01:30-05:00")).toThrow(/did you mean "2024-11-03-01:30"\?/);
    expect(space.window("2024-11-03-01:30")!.end.toISOString()).toBe("2024-11-04T06:30:00.000Z");
    // Weekly (Sunday 01:30) likewise; several times of day in the repeated hour each take their second occurrence.
    expect(startsOf("30 1 * * 0", "America/New_York", "2024-10-27", 2)[1]).toEqual(["2024-11-03-01:30", "2024-11-03T06:30:00.000Z"]);
    expect(startsOf("*/20 1-2 * * *", "America/New_York", "2024-11-03", 4).map(([, t]) => t)).toEqual([
      "2024-11-03T06:00:00.000Z",
      "2024-11-03T06:20:00.000Z",
      "2024-11-03T06:40:00.000Z",
      "2024-11-03T07:00:00.000Z",
    ]);
  });

  it("a time of day the clock skips (spring-forward night) moves to the first instant after the gap", () => {
    expect(startsOf("30 2 * * *", "America/New_York", "2025-03-08", 3)).toEqual([
      ["2025-03-08-02:30", "2025-03-08T07:30:00.000Z"],
      ["2025-03-09-03:00", "2025-03-09T07:00:00.000Z"],
      ["2025-03-10-02:30", "2025-03-10T06:30:00.000Z"],
    ]);
    expect(startsOf("30 2 * * *", "Europe/Berlin", "2025-03-30", 1)).toEqual([["2025-03-30-03:00", "2025-03-30T01:00:00.000Z"]]);
    // Several skipped times become one tick, not several at the same instant.
    expect(startsOf("*/20 2-3 * * *", "America/New_York", "2025-03-09", 3).map(([, t]) => t)).toEqual([
      "2025-03-09T07:00:00.000Z",
      "2025-03-09T07:20:00.000Z",
      "2025-03-09T07:40:00.000Z",
    ]);
  });

  it("an hourly cron fires in both occurrences of a repeated hour and skips a skipped one", () => {
    expect(startsOf("30 * * * *", "America/New_York", "2024-11-03", 4)).toEqual([
      ["2024-11-03-00:30", "2024-11-03T04:30:00.000Z"],
      ["2024-11-03-01:30", "2024-11-03T05:30:00.000Z"],
      ["2024-11-03-01:30-05:00", "2024-11-03T06:30:00.000Z"],
      ["2024-11-03-02:30", "2024-11-03T07:30:00.000Z"],
    ]);
    expect(startsOf("30 * * * *", "America/New_York", "2025-03-09", 3).map(([, t]) => t)).toEqual([
      "2025-03-09T05:30:00.000Z",
      "2025-03-09T06:30:00.000Z", // 01:30 EST
      "2025-03-09T07:30:00.000Z", // 03:30 EDT: an hour later, no 02:30 and no 03:00
    ]);
  });

  it("survives DST changes cron-parser cannot iterate (Lord Howe's 30-minute shift)", () => {
    const space = partitionSpace(timeWindows({ cron: "0 6 * * *", start: "2025-01-01", timezone: "Australia/Lord_Howe" }));
    let previous = -Infinity;
    for (let i = 0; i < 365; i++) {
      const { start, end } = space.windowAt(i)!;
      expect(start.getTime()).toBeGreaterThan(previous);
      expect(end.getTime() - start.getTime()).toBeGreaterThanOrEqual(23.5 * 3_600_000);
      expect(end.getTime() - start.getTime()).toBeLessThanOrEqual(24.5 * 3_600_000);
      expect(space.indexOf(space.keyAt(i))).toBe(i);
      previous = start.getTime();
    }
    expect(space.keyAt(364)).toBe("2025-12-31-06:00");
  });

  it("starts with the first tick at or after start", () => {
    const space = partitionSpace(timeWindows({ cron: "0 6 * * *", start: "2025-01-01T06:00", timezone: "UTC" }));
    expect(space.keyAt(0)).toBe("2025-01-01-06:00");
    const later = partitionSpace(timeWindows({ cron: "0 6 * * *", start: "2025-01-01T06:01", timezone: "UTC" }));
    expect(later.keyAt(0)).toBe("2025-01-02-06:00");
  });

  it("counts closed windows from start to now without iterating cron-parser per tick", () => {
    const space = partitionSpace(timeWindows({ cron: "*/5 * * * *", start: "2020-01-01", timezone: "Europe/Berlin" }));
    const t0 = performance.now();
    const count = space.count(new Date("2025-01-01T00:00:00Z"));
    expect(performance.now() - t0).toBeLessThan(2000);
    // Berlin's 2020-01-01 starts at 2019-12-31T23:00Z; every 5-minute window since has closed.
    const minutes = (Date.UTC(2025, 0, 1) - Date.UTC(2019, 11, 31, 23)) / 60_000;
    expect(count).toBe(minutes / 5);
    const last = space.keyAt(count - 1);
    expect(last).toBe("2025-01-01-00:55");
    expect(space.indexOf(last)).toBe(count - 1);
  });

  it("uses custom key formats and rejects formats that cannot tell windows apart", () => {
    const space = partitionSpace(timeWindows({ cron: "0 6 * * *", start: "2025-01-01", format: "yyyyMMdd" }));
    expect(space.keyAt(0)).toBe("20250101");
    expect(space.indexOf("20250103")).toBe(2);
    expect(space.window("20250103")!.start.toISOString()).toBe("2025-01-03T06:00:00.000Z");
    expect(() => timeWindows({ cron: "0 */6 * * *", start: "2025-01-01", format: "yyyy-MM-dd" })).toThrow(
      /field "format".*both have key "2025-01-01"/,
    );
  });

  it("keeps windows of a cron in the fall-back hour distinct", () => {
    const space = partitionSpace(timeWindows({ cron: "*/30 * * * *", start: "2025-11-02", timezone: "America/New_York" }));
    const i = space.indexOf("2025-11-02-01:00");
    expect([1, 2, 3, 4].map((d) => space.keyAt(i + d))).toEqual([
      "2025-11-02-01:30",
      "2025-11-02-01:00-05:00",
      "2025-11-02-01:30-05:00",
      "2025-11-02-02:00",
    ]);
    for (let d = 0; d < 5; d++) expect(space.indexOf(space.keyAt(i + d))).toBe(i + d);
  });

  it("reports windows before start with negative indices through the mapping helpers only", () => {
    const space = partitionSpace(timeWindows({ cron: "0 6 * * *", start: "2025-01-01", timezone: "UTC" }));
    expect(() => space.keyAt(-1)).toThrow(/index -1 is not a partition/);
    expect(() => space.indexOf("2024-12-31-06:00")).toThrow(/before the first partition "2025-01-01-06:00"/);
  });
});

import { CronExpressionParser } from "cron-parser";
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

describe("timeWindows({ cron }) boundaries", () => {
  for (const tz of zones) {
    for (const cron of [...dailyish, ...subDaily]) {
      it(`match cron-parser for "${cron}" in ${tz}`, () => {
        for (const [from, to] of periods[subDaily.includes(cron) ? "dst" : "year"]!) {
          const space = partitionSpace(timeWindows({ cron, start: from, timezone: tz }));
          const first = space.windowAt(0)!.start;
          const expected = cronParserTicks(cron, tz, new Date(first.getTime() - 1), new Date(`${to}T00:00:00Z`));
          const actual = expected.map((_, i) => space.windowAt(i)!.start.toISOString());
          expect(actual).toEqual(expected.map((t) => new Date(t).toISOString()));
          // Round trip key → index for every window.
          for (let i = 0; i < expected.length; i++) expect(space.indexOf(space.keyAt(i))).toBe(i);
        }
      });
    }
  }

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

import { describe, expect, it } from "vitest";
import {
  PartitionSubset,
  daily,
  downstreamPartitions,
  hourly,
  partitionSpace,
  timeWindow,
  upstreamPartitions,
  weekly,
} from "../../src/partitions/index.js";

/** Large partition spaces give the right answers; bench/partition-math.ts measures how fast (no timing here). */
describe("partition math at scale", () => {
  it("enumerates 100 000 hourly keys in a DST zone", () => {
    const space = partitionSpace(hourly({ start: "2014-01-01", timezone: "America/New_York" }));
    const keys = [...space.keys(PartitionSubset.range(0, 100_000))];
    expect(keys).toHaveLength(100_000);
    expect(new Set(keys).size).toBe(100_000);
    expect(keys[0]).toBe("2014-01-01-00:00");
  });

  it("counts 100 000 existing hourly partitions and looks keys up", () => {
    const space = partitionSpace(hourly({ start: "2014-01-01", timezone: "Europe/Berlin" }));
    const now = space.windowAt(100_000)!.start;
    expect(space.all(now).count()).toBe(100_000);
    expect(space.keyAt(space.indexOf("2025-05-29-16:00"))).toBe("2025-05-29-16:00");
    expect(space.count(now)).toBe(100_000);
  });

  it("maps a year of dailies to weeklies and back", () => {
    const days = daily({ start: "2025-01-01" });
    const weeks = weekly({ start: "2024-12-30" });
    const now = new Date("2026-02-01T00:00:00Z");
    const year = partitionSpace(days).range("2025-01-01", "2025-12-31");
    const affected = downstreamPartitions(days, weeks, timeWindow(), year, undefined, now);
    const back = upstreamPartitions(weeks, days, timeWindow(), affected, undefined, now);
    expect(affected.count()).toBe(53);
    expect(back.subset.isSubsetOf(partitionSpace(days).all(now))).toBe(true);
    // The first week starts on 2024-12-30, two days before the dailies do: it reads the five there are.
    expect(back.missing.count).toBe(0);
    expect(back.subset.first()).toBe(0);
  });
});

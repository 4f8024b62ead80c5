/**
 * Partition math benchmarks: prints one JSON object (milliseconds, medians of
 * several runs after one warm-up) to stdout.
 *
 *   npx tsx bench/partition-math.ts
 */
import {
  PartitionSubset,
  daily,
  downstreamPartitions,
  hourly,
  partitionSpace,
  timeWindow,
  upstreamPartitions,
  weekly,
} from "../src/partitions/index.js";
import { ascending, floorRank, printResult } from "./_setup.js";

const RUNS = 9;

function median(fn: () => unknown): number {
  fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  return Number(floorRank(ascending(times), 0.5)!.toFixed(3));
}

// 100 000 hourly keys in a DST zone (crosses 22 DST changes).
const hours = partitionSpace(hourly({ start: "2014-01-01", timezone: "America/New_York" }));
const hundredThousandHours = PartitionSubset.range(0, 100_000);
let lastKey = "";
const enumerate100kHourlyKeys = median(() => {
  for (const key of hours.keys(hundredThousandHours)) lastKey = key;
});

// The reverse: 100 000 hourly keys (shuffled, as a status read gets them) looked up one by one and made a subset,
// in UTC and in the DST zone.
const utcHours = partitionSpace(hourly({ start: "2014-01-01" }));
const shuffled = (space: typeof hours) => {
  const keys = [...space.keys(hundredThousandHours)];
  for (let i = keys.length - 1; i > 0; i--) {
    const j = (i * 7_919) % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  return keys;
};
const utcKeys = shuffled(utcHours);
const zonedKeys = shuffled(hours);
let lookedUp = 0;
const lookUp100kHourlyKeysUtc = median(() => (lookedUp = utcHours.subset(utcKeys).count()));
const lookUp100kHourlyKeysNewYork = median(() => (lookedUp = hours.subset(zonedKeys).count()));

// A year of dailies ↔ weeklies.
const days = daily({ start: "2025-01-01", timezone: "Europe/Berlin" });
const weeks = weekly({ start: "2024-12-30", timezone: "Europe/Berlin" });
const now = new Date("2026-02-01T00:00:00Z");
const daySpace = partitionSpace(days);
const weekSpace = partitionSpace(weeks);
const yearOfDays = daySpace.range("2025-01-01", "2025-12-31");
const yearOfWeeks = weekSpace.range("2024-12-30", "2025-12-29");
const everyOtherDay = PartitionSubset.fromIndices(Array.from({ length: 183 }, (_, i) => 2 * i));
const mapYearDailiesToWeeklies = median(() => downstreamPartitions(days, weeks, timeWindow(), yearOfDays, undefined, now));
const mapYearWeekliesToDailies = median(() => upstreamPartitions(weeks, days, timeWindow(), yearOfWeeks, undefined, now));
const mapEveryOtherDayToWeeklies = median(() => downstreamPartitions(days, weeks, timeWindow(), everyOtherDay, undefined, now));
const mapEachDailyToItsWeekly = median(() => {
  for (const i of yearOfDays) downstreamPartitions(days, weeks, timeWindow(), PartitionSubset.single(i), undefined, now);
});

// Subset algebra on 1 000 000 partitions held as 10 000 ranges each.
const a = PartitionSubset.fromRanges(Array.from({ length: 10_000 }, (_, i) => [i * 100, i * 100 + 60] as [number, number]));
const b = a.shift(30);
const whole = PartitionSubset.range(0, 1_000_000);
const union1m = median(() => a.union(b));
const intersection1m = median(() => a.intersection(b));
const difference1m = median(() => whole.difference(a));

// count / all(now) of an hourly definition with ~100 000 existing partitions.
const recentHours = partitionSpace(hourly({ start: "2014-01-01", timezone: "America/New_York" }));
const nowFor100k = recentHours.windowAt(100_000)!.start;
const countAllNow100kHourly = median(() => recentHours.all(nowFor100k).count());

printResult({
  runs: RUNS,
  enumerate100kHourlyKeysMs: enumerate100kHourlyKeys,
  lookUp100kHourlyKeysUtcMs: lookUp100kHourlyKeysUtc,
  lookUp100kHourlyKeysNewYorkMs: lookUp100kHourlyKeysNewYork,
  mapYearDailiesToWeekliesMs: mapYearDailiesToWeeklies,
  mapYearWeekliesToDailiesMs: mapYearWeekliesToDailies,
  mapEveryOtherDayToWeekliesMs: mapEveryOtherDayToWeeklies,
  map365DailiesOneByOneToWeekliesMs: mapEachDailyToItsWeekly,
  union1mPartitions10kRangesMs: union1m,
  intersection1mPartitions10kRangesMs: intersection1m,
  difference1mPartitions10kRangesMs: difference1m,
  countAllNow100kHourlyMs: countAllNow100kHourly,
  checks: {
    lastOf100kHourlyKeys: lastKey,
    lookedUp,
    existingHourly: recentHours.count(nowFor100k),
    unionCount: a.union(b).count(),
  },
});

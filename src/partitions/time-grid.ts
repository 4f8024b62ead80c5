import { DAY_MS, HOUR_MS, civilFromDays, isoWeekday, parseWallTime } from "./civil-date.js";
import { CronGrid } from "./cron-grid.js";
import { DayGrid } from "./day-grid.js";
import { HourlyGrid } from "./hourly-grid.js";
import { MonthGrid } from "./month-grid.js";
import type { TimeWindowPartitionsSpec } from "./types.js";
import { zoneClock } from "./zone-clock.js";

/**
 * The window boundaries of a time partitions definition. Window `i` is
 * [startOf(i), startOf(i + 1)); window 0 is the first one starting at or after
 * the definition's `start`. Indices may be negative or beyond `end`: mappings
 * need to name the windows a definition does not have, to report them missing.
 */
export interface TimeGrid {
  /** True when no window ever starts (a cron that never fires). */
  readonly empty: boolean;
  /** Instant (epoch ms) at which window `i` starts. */
  startOf(i: number): number;
  /** The window containing `instant`: the largest `i` with `startOf(i) <= instant`. */
  indexAt(instant: number): number;
}

/** The first window starting at or after `instant`. */
export function ceilIndex(grid: TimeGrid, instant: number): number {
  const i = grid.indexAt(instant);
  return grid.startOf(i) === instant ? i : i + 1;
}

const grids = new Map<string, TimeGrid>();

/** The (cached) grid of a validated time spec; `end` and `endOffset` do not change the grid. */
export function timeGrid(spec: TimeWindowPartitionsSpec): TimeGrid {
  const cacheKey = `${spec.cadence}\u0000${spec.cron}\u0000${spec.timezone}\u0000${spec.start}`;
  let grid = grids.get(cacheKey);
  if (!grid) {
    grid = buildGrid(spec);
    grids.set(cacheKey, grid);
  }
  return grid;
}

function buildGrid(spec: TimeWindowPartitionsSpec): TimeGrid {
  const clock = zoneClock(spec.timezone);
  const startWall = parseWallTime(spec.start);
  if (startWall === undefined) throw new Error(`unvalidated start "${spec.start}"`);
  const startDay = Math.floor(startWall / DAY_MS);
  // A calendar window starts at midnight: a start later in the day begins with the next one.
  const firstDay = startWall === startDay * DAY_MS ? startDay : startDay + 1;
  switch (spec.cadence) {
    case "hourly": {
      const start = clock.instantOf(startWall);
      const wall = clock.toWall(start);
      const onTheHour = Math.floor(wall / HOUR_MS) * HOUR_MS;
      return new HourlyGrid(onTheHour === wall ? start : clock.instantOf(onTheHour + HOUR_MS));
    }
    case "daily":
      return new DayGrid(clock, firstDay, 1);
    case "weekly":
      return new DayGrid(clock, firstDay + ((8 - isoWeekday(firstDay)) % 7), 7);
    case "monthly": {
      const { year, month, day } = civilFromDays(firstDay);
      const firstMonth = year * 12 + month - 1 + (day === 1 ? 0 : 1);
      return new MonthGrid(clock, firstMonth);
    }
    case "cron":
      return new CronGrid(spec.cron, clock, clock.instantOf(startWall));
  }
}

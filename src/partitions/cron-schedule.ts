import { CronGrid } from "./cron-grid.js";
import { DAY_MS, daysFromCivil } from "./civil-date.js";
import { zoneClock } from "./zone-clock.js";

/**
 * The ticks of a cron expression in a timezone, placed by the same rules as
 * the windows of `timeWindows({ cron })` (see CronGrid): on a fall-back night
 * a daily-or-coarser time of day fires at its second occurrence, an hourly
 * cron at both; a time inside a spring-forward gap fires at the first instant
 * after it (an hourly cron skips it).
 */
export interface CronSchedule {
  /** Ticks in (from, to], oldest first; at most `max`, the latest ones kept. */
  between(from: Date, to: Date, max: number): Date[];
  /** The first tick after `instant`. */
  after(instant: Date): Date | undefined;
  /** The latest tick at or before `instant`. */
  atOrBefore(instant: Date): Date | undefined;
}

const schedules = new Map<string, CronSchedule | string>();
/** Indices count from the first tick of 2000-01-01 (earlier instants get negative ones). */
const ANCHOR_WALL = daysFromCivil(2000, 1, 1) * DAY_MS;

/**
 * The schedule of `cron` in `timezone` (the process's own zone when null, as
 * cron itself does), or why it has none: the expression does not parse, or
 * it never fires.
 *
 * @example
 * const schedule = cronSchedule("30 1 * * *", "America/New_York"); // a string says what is wrong with the expression
 * if (typeof schedule !== "string") schedule.after(new Date("2024-11-03T05:00:00Z")); // 06:30Z, 01:30 EST
 */
export function cronSchedule(cron: string, timezone: string | null): CronSchedule | string {
  const zone = timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const key = `${cron}\u0000${zone}`;
  let schedule = schedules.get(key);
  if (schedule === undefined) {
    schedule = build(cron, zone);
    schedules.set(key, schedule);
  }
  return schedule;
}

function build(cron: string, zone: string): CronSchedule | string {
  let grid: CronGrid;
  try {
    const clock = zoneClock(zone);
    grid = new CronGrid(cron, clock, clock.instantOf(ANCHOR_WALL));
  } catch (cause) {
    return `cron "${cron}" cannot be evaluated: ${(cause as Error).message}`;
  }
  if (grid.empty) return `cron "${cron}" never fires`;
  const at = (i: number): Date | undefined => {
    try {
      return new Date(grid.startOf(i));
    } catch {
      // No tick that far back (a cron that fired only later).
      return undefined;
    }
  };
  return {
    between(from, to, max) {
      const last = grid.indexAt(to.getTime());
      const first = Math.max(grid.indexAt(from.getTime()) + 1, last - max + 1);
      const out: Date[] = [];
      for (let i = first; i <= last; i++) {
        const t = at(i);
        if (t) out.push(t);
      }
      return out;
    },
    after: (instant) => at(grid.indexAt(instant.getTime()) + 1),
    atOrBefore: (instant) => at(grid.indexAt(instant.getTime())),
  };
}

import { DAY_MS } from "./civil-date.js";
import type { TimeGrid } from "./time-grid.js";
import type { ZoneClock } from "./zone-clock.js";

/**
 * Windows of `stepDays` calendar days starting at local midnight (daily: 1,
 * weekly: 7 from a Monday). A day is 23, 24 or 25 real hours; the index of an
 * instant is its local date minus the first, so no iteration from the start.
 */
export class DayGrid implements TimeGrid {
  readonly empty = false;

  constructor(
    private readonly clock: ZoneClock,
    private readonly firstDay: number,
    private readonly stepDays: number,
  ) {}

  startOf(i: number): number {
    return this.clock.instantOf((this.firstDay + i * this.stepDays) * DAY_MS);
  }

  indexAt(instant: number): number {
    const day = Math.floor(this.clock.toWall(instant) / DAY_MS);
    let i = Math.floor((day - this.firstDay) / this.stepDays);
    // Only off by one where midnight itself is skipped or repeated.
    while (this.startOf(i + 1) <= instant) i++;
    while (this.startOf(i) > instant) i--;
    return i;
  }
}

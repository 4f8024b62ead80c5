import { DAY_MS, civilFromDays, monthStartDay } from "./civil-date.js";
import type { TimeGrid } from "./time-grid.js";
import type { ZoneClock } from "./zone-clock.js";

/** Calendar months starting on the 1st at local midnight; indices are month numbers. */
export class MonthGrid implements TimeGrid {
  readonly empty = false;

  constructor(
    private readonly clock: ZoneClock,
    /** year * 12 + month - 1 of window 0. */
    private readonly firstMonth: number,
  ) {}

  startOf(i: number): number {
    return this.clock.instantOf(monthStartDay(this.firstMonth + i) * DAY_MS);
  }

  indexAt(instant: number): number {
    const { year, month } = civilFromDays(Math.floor(this.clock.toWall(instant) / DAY_MS));
    let i = year * 12 + month - 1 - this.firstMonth;
    while (this.startOf(i + 1) <= instant) i++;
    while (this.startOf(i) > instant) i--;
    return i;
  }
}

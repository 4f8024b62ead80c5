import { HOUR_MS } from "./civil-date.js";
import type { TimeGrid } from "./time-grid.js";

/**
 * Hourly windows are real hours counted from the first one, so index math is
 * one division. Across DST the wall clock skips or repeats an hour, which is
 * exactly what counting real hours does; in a zone whose offset changes by a
 * non-whole hour, later windows start at :30 wall time, which keeps every
 * window one hour long.
 */
export class HourlyGrid implements TimeGrid {
  readonly empty = false;

  constructor(private readonly first: number) {}

  startOf(i: number): number {
    return this.first + i * HOUR_MS;
  }

  indexAt(instant: number): number {
    return Math.floor((instant - this.first) / HOUR_MS);
  }
}

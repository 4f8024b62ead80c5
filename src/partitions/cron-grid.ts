import { CronExpressionParser, type CronExpression } from "cron-parser";
import { DAY_MS, HOUR_MS, MINUTE_MS, civilFromDays, daysInMonth, isoWeekday } from "./civil-date.js";
import type { TimeGrid } from "./time-grid.js";
import type { ZoneClock } from "./zone-clock.js";

/** The Gregorian calendar repeats every 400 years: a cron silent that long never fires. */
const MAX_SILENT_DAYS = 146_097;

/**
 * Windows between consecutive ticks of a 5-field cron expression in a zone.
 *
 * cron-parser is the authority on which instants are ticks, but it costs
 * ~0.1–0.25 ms per tick, far too slow to count a few years of hourly ticks on
 * every call. So ticks are counted per local day: on a day without a UTC
 * offset change, the ticks are exactly the (hour, minute) pairs of the
 * expression when the day matches (day-of-month/-week/month, asked once of
 * cron-parser per calendar shape and memoised); on DST-change days each wall
 * time is placed by the rules of changeDayTicks. Per-day cumulative
 * counts (grown lazily in both directions and cached with the grid) make
 * index ↔ instant a binary search.
 */
export class CronGrid implements TimeGrid {
  readonly empty: boolean;
  private readonly expression: CronExpression;
  private readonly minutes: readonly number[];
  private readonly hours: readonly number[];
  private readonly firstDay: number;
  /** forward[k] = ticks in local days [firstDay, firstDay + k). */
  private readonly forward: number[] = [0];
  /** backward[k] = ticks in local days [firstDay - k, firstDay). */
  private readonly backward: number[] = [0];
  private forwardSilentDays = 0;
  private backwardSilentDays = 0;
  /** Ticks of firstDay before the definition's start: index = tick number - base. */
  private readonly base: number;
  private readonly dayMatches = new Map<number, boolean>();
  private readonly changeDays = new Map<number, readonly number[]>();
  /** The same expression read in UTC: which calendar days match, whatever the zone's clock does that day. */
  private readonly calendar: CronExpression;

  constructor(
    private readonly cron: string,
    private readonly clock: ZoneClock,
    start: number,
  ) {
    this.expression = CronExpressionParser.parse(cron, { tz: clock.zone });
    this.calendar = CronExpressionParser.parse(cron, { tz: "UTC" });
    this.minutes = [...this.expression.fields.minute.values].sort((a, b) => a - b);
    this.hours = [...this.expression.fields.hour.values].sort((a, b) => a - b);
    this.firstDay = Math.floor(clock.toWall(start) / DAY_MS);
    this.base = this.ticksOfDay(this.firstDay).filter((t) => t < start).length;
    this.empty = this.locate(this.base) === undefined;
  }

  startOf(i: number): number {
    const tick = this.locate(i + this.base);
    if (tick === undefined) throw new RangeError(`cron "${this.cron}" has no window ${i}`);
    return tick;
  }

  indexAt(instant: number): number {
    const day = Math.floor(this.clock.toWall(instant) / DAY_MS);
    const ticks = this.ticksOfDay(day);
    let atOrBefore = 0;
    while (atOrBefore < ticks.length && ticks[atOrBefore]! <= instant) atOrBefore++;
    const k = day - this.firstDay;
    const before = k >= 0 ? this.forwardCount(k) : -this.backwardCount(-k);
    return before + atOrBefore - 1 - this.base;
  }

  /** The instant of tick number `n` (0 = first tick of firstDay), or undefined if there is none. */
  private locate(n: number): number | undefined {
    if (n >= 0) {
      while (this.forward[this.forward.length - 1]! <= n) if (!this.growForward()) return undefined;
      const k = upperBound(this.forward, n) - 1;
      return this.tickOfDay(this.firstDay + k, n - this.forward[k]!);
    }
    const m = -n;
    while (this.backward[this.backward.length - 1]! < m) if (!this.growBackward()) return undefined;
    const k = lowerBound(this.backward, m);
    const inDay = this.backward[k]! - this.backward[k - 1]!;
    return this.tickOfDay(this.firstDay - k, inDay - (m - this.backward[k - 1]!));
  }

  private forwardCount(k: number): number {
    while (this.forward.length <= k && this.growForward());
    return this.forward[Math.min(k, this.forward.length - 1)]!;
  }

  private backwardCount(k: number): number {
    while (this.backward.length <= k && this.growBackward());
    return this.backward[Math.min(k, this.backward.length - 1)]!;
  }

  private growForward(): boolean {
    if (this.forwardSilentDays > MAX_SILENT_DAYS) return false;
    const count = this.countOfDay(this.firstDay + this.forward.length - 1);
    this.forwardSilentDays = count === 0 ? this.forwardSilentDays + 1 : 0;
    this.forward.push(this.forward[this.forward.length - 1]! + count);
    return true;
  }

  private growBackward(): boolean {
    if (this.backwardSilentDays > MAX_SILENT_DAYS) return false;
    const count = this.countOfDay(this.firstDay - this.backward.length);
    this.backwardSilentDays = count === 0 ? this.backwardSilentDays + 1 : 0;
    this.backward.push(this.backward[this.backward.length - 1]! + count);
    return true;
  }

  private countOfDay(day: number): number {
    const offset = this.steadyOffset(day);
    if (offset === undefined) return this.changeDayTicks(day).length;
    return this.matches(day, offset) ? this.hours.length * this.minutes.length : 0;
  }

  private tickOfDay(day: number, j: number): number {
    const offset = this.steadyOffset(day);
    if (offset === undefined) return this.changeDayTicks(day)[j]!;
    const perHour = this.minutes.length;
    const wall = day * DAY_MS + this.hours[Math.floor(j / perHour)]! * HOUR_MS + this.minutes[j % perHour]! * MINUTE_MS;
    return wall - offset;
  }

  private ticksOfDay(day: number): number[] {
    const count = this.countOfDay(day);
    const out = new Array<number>(count);
    for (let j = 0; j < count; j++) out[j] = this.tickOfDay(day, j);
    return out;
  }

  /** Whether a day without offset change has ticks; depends only on the calendar shape of the day. */
  private matches(day: number, offset: number): boolean {
    const { year, month, day: dom } = civilFromDays(day);
    const shape = ((month * 32 + dom) * 8 + isoWeekday(day)) * 32 + daysInMonth(year, month);
    let match = this.dayMatches.get(shape);
    if (match === undefined) {
      const wall = day * DAY_MS + this.hours[0]! * HOUR_MS + this.minutes[0]! * MINUTE_MS;
      match = this.expression.includesDate(new Date(wall - offset));
      this.dayMatches.set(shape, match);
    }
    return match;
  }

  /**
   * The UTC offset of a local day when it is the same all day long (and an
   * hour either side); undefined on days when it changes.
   */
  private steadyOffset(day: number): number | undefined {
    const midnight = day * DAY_MS;
    const offset = this.clock.offsetAt(midnight - this.clock.offsetAt(midnight));
    const from = midnight - offset - HOUR_MS;
    return this.clock.changesBetween(from, from + DAY_MS + 2 * HOUR_MS) ? undefined : offset;
  }

  /**
   * Ticks of a local day on which the UTC offset changes, by the rules Dagster
   * and Airflow schedule with. A cron whose hour field is `*` fires every hour
   * the clock shows: twice in a repeated hour, never in a skipped one. Any
   * other cron names times of day: one the clock shows twice fires at its
   * second occurrence (01:30 on a fall-back night is 01:30 standard time, so
   * that day's window ends an hour later), and one the clock skips fires at
   * the first instant after the gap (02:30 → 03:00).
   */
  private changeDayTicks(day: number): readonly number[] {
    const cached = this.changeDays.get(day);
    if (cached) return cached;
    const instants = new Set<number>();
    const wallClock = this.hours.length === 24;
    if (this.calendarMatches(day)) {
      for (const hour of this.hours) {
        for (const minute of this.minutes) {
          const wall = day * DAY_MS + hour * HOUR_MS + minute * MINUTE_MS;
          const readings = this.clock.instantsOf(wall);
          if (wallClock) for (const t of readings) instants.add(t);
          else instants.add(readings.length > 0 ? readings[readings.length - 1]! : this.endOfGap(wall));
        }
      }
    }
    const ticks = [...instants].filter((t) => Math.floor(this.clock.toWall(t) / DAY_MS) === day).sort((a, b) => a - b);
    this.changeDays.set(day, ticks);
    return ticks;
  }

  private calendarMatches(day: number): boolean {
    return this.calendar.includesDate(new Date(day * DAY_MS + this.hours[0]! * HOUR_MS + this.minutes[0]! * MINUTE_MS));
  }

  /** The first instant after the spring-forward gap that `wall` falls in (the instant of the change). */
  private endOfGap(wall: number): number {
    const after = this.clock.offsetAt(wall + DAY_MS);
    // The change happened in (wall - after, wall - before]: find its first instant, to the second.
    let lo = Math.floor((wall - after) / 1000);
    let hi = Math.ceil((wall - this.clock.offsetAt(wall - DAY_MS)) / 1000);
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.clock.offsetAt(mid * 1000) === after) hi = mid;
      else lo = mid + 1;
    }
    return lo * 1000;
  }
}

/** First index whose value is > x (values ascending). */
function upperBound(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index whose value is >= x (values ascending). */
function lowerBound(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

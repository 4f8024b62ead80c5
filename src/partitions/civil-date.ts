/**
 * Integer calendar arithmetic on "wall" instants: milliseconds since the epoch
 * of a clock reading taken as if it were UTC. Keys and window boundaries are
 * wall-clock values, and doing this math with integers (rather than building a
 * luxon DateTime per key) is what keeps enumerating 100 000 keys cheap.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export interface CivilDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = year - (month <= 2 ? 1 : 0);
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (month + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** Inverse of {@link daysFromCivil}. */
export function civilFromDays(epochDay: number): CivilDate {
  const z = epochDay + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** ISO weekday of an epoch day: Monday = 1 … Sunday = 7 (1970-01-01 was a Thursday). */
export function isoWeekday(epochDay: number): number {
  return ((((epochDay + 3) % 7) + 7) % 7) + 1;
}

export function daysInMonth(year: number, month: number): number {
  return daysFromCivil(month === 12 ? year + 1 : year, month === 12 ? 1 : month + 1, 1) - daysFromCivil(year, month, 1);
}

/** Epoch day of the first of the month `monthIndex` (= year * 12 + month - 1). */
export function monthStartDay(monthIndex: number): number {
  const year = Math.floor(monthIndex / 12);
  return daysFromCivil(year, monthIndex - year * 12 + 1, 1);
}

export function isValidCivilDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

function pad4(n: number): string {
  return n >= 1000 ? `${n}` : `${n}`.padStart(4, "0");
}

/** `yyyy-MM-dd` of an epoch day. */
export function formatEpochDay(epochDay: number): string {
  const { year, month, day } = civilFromDays(epochDay);
  return `${pad4(year)}-${pad2(month)}-${pad2(day)}`;
}

/** `yyyy-MM-dd-HH:mm` of a wall instant. */
export function formatWallMinute(wall: number): string {
  const epochDay = Math.floor(wall / DAY_MS);
  const msOfDay = wall - epochDay * DAY_MS;
  const hour = Math.floor(msOfDay / HOUR_MS);
  const minute = Math.floor((msOfDay - hour * HOUR_MS) / MINUTE_MS);
  return `${formatEpochDay(epochDay)}-${pad2(hour)}:${pad2(minute)}`;
}

/** `+01:00` / `-05:00` for an offset in milliseconds (seconds of historical LMT offsets are dropped). */
export function formatOffset(offsetMs: number): string {
  const sign = offsetMs < 0 ? "-" : "+";
  const minutes = Math.floor(Math.abs(offsetMs) / MINUTE_MS);
  return `${sign}${pad2(Math.floor(minutes / 60))}:${pad2(minutes % 60)}`;
}

/** Parses `+01:00` / `-05:00` into milliseconds; undefined when malformed. */
export function parseOffset(text: string): number | undefined {
  const m = /^([+-])(\d{2}):(\d{2})$/.exec(text);
  if (!m) return undefined;
  const hours = Number(m[2]);
  const minutes = Number(m[3]);
  if (hours > 18 || minutes > 59) return undefined;
  return (m[1] === "-" ? -1 : 1) * (hours * HOUR_MS + minutes * MINUTE_MS);
}

const MONTH_NAMES = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const DATE_PREFIX = /^(\d{4})-(\d{2})-(\d{2})(?:[-T](\d{2}):(\d{2}))?/;

/**
 * Why text shaped like a date (`2025-02-30`, `2025-02-10-24:00`) names no
 * day or time on the calendar; undefined when it does, or is not shaped so.
 * A key that merely has the wrong shape is better explained by its format.
 */
export function calendarProblem(text: string): string | undefined {
  const m = DATE_PREFIX.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = `${m[1]}-${m[2]}-${m[3]}`;
  if (month < 1 || month > 12) return `${date} is not a day: there is no month ${month}`;
  if (day < 1) return `${date} is not a day: days start at 01`;
  const length = daysInMonth(year, month);
  if (day > length) return `${date} is not a day: ${MONTH_NAMES[month - 1]} ${m[1]} has ${length} days`;
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59)) return `${m[4]}:${m[5]} is not a time of day (00:00 … 23:59)`;
  return undefined;
}

const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}))?$/;

/**
 * Parses the `start`/`end` syntax of time partitions: `2025-01-01` or
 * `2025-01-01T06:00`, a wall-clock reading. Returns the wall instant, or
 * undefined when the text is malformed or names an impossible date.
 */
export function parseWallTime(text: string): number | undefined {
  const m = WALL_TIME.exec(text);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  if (!isValidCivilDate(year, month, day) || hour > 23 || minute > 59) return undefined;
  return daysFromCivil(year, month, day) * DAY_MS + hour * HOUR_MS + minute * MINUTE_MS;
}

/** Civil fields of a wall instant. */
export function wallFields(wall: number): CivilDate & { readonly hour: number; readonly minute: number } {
  const epochDay = Math.floor(wall / DAY_MS);
  const msOfDay = wall - epochDay * DAY_MS;
  const hour = Math.floor(msOfDay / HOUR_MS);
  return { ...civilFromDays(epochDay), hour, minute: Math.floor((msOfDay - hour * HOUR_MS) / MINUTE_MS) };
}

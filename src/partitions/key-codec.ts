import { DateTime } from "luxon";
import { DAY_MS, HOUR_MS, MINUTE_MS, daysFromCivil, formatEpochDay, formatWallMinute, isValidCivilDate } from "./civil-date.js";

/**
 * Turns wall-clock readings into partition keys and back, for one key format.
 * The two built-in formats are done with integer math; any other luxon format
 * goes through luxon (slower, but only `timeWindows({ format })` uses them).
 */
export interface KeyCodec {
  readonly format: string;
  /** Whether keys show a time of day, so that a repeated wall time needs an offset suffix. */
  readonly hasTimeOfDay: boolean;
  /** Whether formatting the wall instant of every key it parses gives that key back (a fixed-width format). */
  readonly roundTrips: boolean;
  formatWall(wall: number): string;
  /** The wall instant a key (without offset suffix) reads, or undefined when it does not fit the format. */
  parseWall(key: string): number | undefined;
}

export const DATE_FORMAT = "yyyy-MM-dd";
export const DATE_TIME_FORMAT = "yyyy-MM-dd-HH:mm";

// The built-in formats are read character by character (a regular expression and Number() per field cost three
// times as much when a status read looks up 100 000 keys).
const DASH = 0x2d;
const COLON = 0x3a;
const ZERO = 0x30;

/** The decimal number written by the `length` ASCII digits at `from`, or -1 when any of them is not a digit. */
function digits(key: string, from: number, length: number): number {
  let n = 0;
  for (let i = from; i < from + length; i++) {
    const d = key.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

const dateCodec: KeyCodec = {
  format: DATE_FORMAT,
  hasTimeOfDay: false,
  roundTrips: true,
  formatWall: (wall) => formatEpochDay(Math.floor(wall / DAY_MS)),
  parseWall(key) {
    if (key.length !== 10 || key.charCodeAt(4) !== DASH || key.charCodeAt(7) !== DASH) return undefined;
    const [year, month, day] = [digits(key, 0, 4), digits(key, 5, 2), digits(key, 8, 2)];
    if (year < 0 || month < 0 || day < 0 || !isValidCivilDate(year, month, day)) return undefined;
    return daysFromCivil(year, month, day) * DAY_MS;
  },
};

const dateTimeCodec: KeyCodec = {
  format: DATE_TIME_FORMAT,
  hasTimeOfDay: true,
  roundTrips: true,
  formatWall: formatWallMinute,
  parseWall(key) {
    if (key.length !== 16 || key.charCodeAt(4) !== DASH || key.charCodeAt(7) !== DASH || key.charCodeAt(10) !== DASH) return undefined;
    if (key.charCodeAt(13) !== COLON) return undefined;
    const [year, month, day] = [digits(key, 0, 4), digits(key, 5, 2), digits(key, 8, 2)];
    const [hour, minute] = [digits(key, 11, 2), digits(key, 14, 2)];
    if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0) return undefined;
    if (!isValidCivilDate(year, month, day) || hour > 23 || minute > 59) return undefined;
    return daysFromCivil(year, month, day) * DAY_MS + hour * HOUR_MS + minute * MINUTE_MS;
  },
};

function luxonCodec(format: string): KeyCodec {
  // Quoted literals are not tokens; H/h/m/s/a tokens mean the key shows a time of day.
  const tokens = format.replace(/'[^']*'/g, "");
  return {
    format,
    hasTimeOfDay: /[Hhmsa]/.test(tokens),
    // Luxon parses leniently (single-digit months for `M`, any case for names): a key may read a wall instant whose
    // own key is spelled otherwise.
    roundTrips: false,
    // Wall instants are formatted as UTC so that luxon does no zone conversion of its own.
    formatWall: (wall) => DateTime.fromMillis(wall, { zone: "UTC" }).toFormat(format),
    parseWall(key) {
      const parsed = DateTime.fromFormat(key, format, { zone: "UTC" });
      return parsed.isValid ? parsed.toMillis() : undefined;
    },
  };
}

const codecs = new Map<string, KeyCodec>([
  [DATE_FORMAT, dateCodec],
  [DATE_TIME_FORMAT, dateTimeCodec],
]);

export function keyCodec(format: string): KeyCodec {
  let codec = codecs.get(format);
  if (!codec) {
    codec = luxonCodec(format);
    codecs.set(format, codec);
  }
  return codec;
}

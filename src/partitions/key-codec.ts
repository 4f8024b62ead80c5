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
  formatWall(wall: number): string;
  /** The wall instant a key (without offset suffix) reads, or undefined when it does not fit the format. */
  parseWall(key: string): number | undefined;
}

export const DATE_FORMAT = "yyyy-MM-dd";
export const DATE_TIME_FORMAT = "yyyy-MM-dd-HH:mm";

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})-(\d{2}):(\d{2})$/;

const dateCodec: KeyCodec = {
  format: DATE_FORMAT,
  hasTimeOfDay: false,
  formatWall: (wall) => formatEpochDay(Math.floor(wall / DAY_MS)),
  parseWall(key) {
    const m = DATE.exec(key);
    if (!m) return undefined;
    const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return isValidCivilDate(year, month, day) ? daysFromCivil(year, month, day) * DAY_MS : undefined;
  },
};

const dateTimeCodec: KeyCodec = {
  format: DATE_TIME_FORMAT,
  hasTimeOfDay: true,
  formatWall: formatWallMinute,
  parseWall(key) {
    const m = DATE_TIME.exec(key);
    if (!m) return undefined;
    const [year, month, day, hour, minute] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
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

import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import { deepFreeze } from "./deep-freeze.js";
import { DATE_TIME_FORMAT } from "./key-codec.js";
import {
  FIXED_CADENCES,
  cronSchema,
  endOffsetSchema,
  keyFormatSchema,
  parseWith,
  startBeforeEnd,
  timezoneSchema,
  wallTimeSchema,
} from "./spec-schema.js";
import { TimePartitionSpace } from "./time-partition-space.js";
import type { TimeCadence, TimeWindowPartitionsSpec } from "./types.js";

/** The options of hourly(), daily(), weekly() and monthly(). */
export interface TimePartitionsOptions {
  /**
   * First window start: `2025-01-01` or `2025-01-01T06:00`, wall clock in `timezone`. A start between window boundaries begins with the next window.
   * @example hourly({ start: "2025-01-01T06:00" })
   */
  start: string;
  /**
   * Exclusive: no window starts at or after it. Same syntax as `start`.
   * @example daily({ start: "2025-01-01", end: "2026-01-01" }) // the days of 2025
   */
  end?: string;
  /**
   * IANA zone name; default "UTC".
   * @example daily({ start: "2025-01-01", timezone: "America/New_York" }) // days from local midnight
   */
  timezone?: string;
  /**
   * 0: a partition exists once its window has closed; 1: the open window too; n: n windows ahead. Default 0.
   * @example daily({ start: "2025-01-01", endOffset: 1 }) // today's partition exists already
   */
  endOffset?: number;
}

/** The options of timeWindows(): the time options and the cron whose ticks bound the windows. */
export interface TimeWindowsOptions extends TimePartitionsOptions {
  /**
   * 5-field cron whose ticks, in `timezone`, are the window boundaries.
   * @example timeWindows({ cron: "0 6 * * 1-5", start: "2025-01-06" }) // from one working day's 06:00 to the next one's
   */
  cron: string;
  /**
   * Luxon format of keys; default `yyyy-MM-dd-HH:mm`. It must tell every window apart.
   * @example timeWindows({ cron: "0 6 * * *", start: "2025-01-01", format: "yyyyMMdd" })
   */
  format?: string;
}

const timeOptionsShape = {
  start: wallTimeSchema,
  end: wallTimeSchema.optional(),
  timezone: timezoneSchema.default("UTC"),
  endOffset: endOffsetSchema.default(0),
};

const timeOptionsSchema = z.strictObject(timeOptionsShape);
const timeWindowsOptionsSchema = z.strictObject({
  ...timeOptionsShape,
  cron: cronSchema,
  format: keyFormatSchema.default(DATE_TIME_FORMAT),
});

/**
 * Hourly windows (always one real hour; across DST the wall clock skips or
 * repeats an hour). Keys `yyyy-MM-dd-HH:mm`; the second of two repeated wall
 * times gets its UTC offset appended: `2025-11-02-01:00-05:00`.
 *
 * @example hourly({ start: "2025-01-01", timezone: "America/New_York" })
 */
export function hourly(options: TimePartitionsOptions): TimeWindowPartitionsSpec {
  return fixedCadence("hourly", options);
}

/**
 * Calendar days from local midnight (23 or 25 hours on DST change days). Keys `yyyy-MM-dd`.
 *
 * @example daily({ start: "2025-01-01", timezone: "Europe/Berlin" })
 */
export function daily(options: TimePartitionsOptions): TimeWindowPartitionsSpec {
  return fixedCadence("daily", options);
}

/**
 * Weeks from Monday 00:00. Keys `yyyy-MM-dd` (the Monday).
 *
 * @example weekly({ start: "2025-01-06" })
 */
export function weekly(options: TimePartitionsOptions): TimeWindowPartitionsSpec {
  return fixedCadence("weekly", options);
}

/**
 * Calendar months from the 1st at 00:00. Keys `yyyy-MM-dd` (the 1st).
 *
 * @example monthly({ start: "2025-01-01" })
 */
export function monthly(options: TimePartitionsOptions): TimeWindowPartitionsSpec {
  return fixedCadence("monthly", options);
}

/**
 * Windows between consecutive ticks of a cron expression in `timezone`.
 *
 * @example timeWindows({ cron: "0 6 * * *", start: "2025-01-01", timezone: "Europe/Berlin" })
 */
export function timeWindows(options: TimeWindowsOptions): TimeWindowPartitionsSpec {
  const where = "timeWindows()";
  const o = parseWith(timeWindowsOptionsSchema.superRefine(startBeforeEnd), options, where);
  return finish(where, "cron", o.cron, o.format, o);
}

function fixedCadence(cadence: Exclude<TimeCadence, "cron">, options: TimePartitionsOptions): TimeWindowPartitionsSpec {
  const where = `${cadence}()`;
  const o = parseWith(timeOptionsSchema.superRefine(startBeforeEnd), options, where);
  const fixed = FIXED_CADENCES[cadence];
  return finish(where, cadence, fixed.cron, fixed.format, o);
}

function finish(
  where: string,
  cadence: TimeCadence,
  cron: string,
  format: string,
  o: { start: string; end?: string | undefined; timezone: string; endOffset: number },
): TimeWindowPartitionsSpec {
  const spec: TimeWindowPartitionsSpec = {
    kind: "time",
    cadence,
    cron,
    start: o.start,
    ...(o.end === undefined ? {} : { end: o.end }),
    timezone: o.timezone,
    endOffset: o.endOffset,
    format,
  };
  const space = new TimePartitionSpace(spec);
  if (o.end !== undefined && space.size === 0) {
    throw new DefinitionError(`${where}: field "end": no window starts between start "${o.start}" and end "${o.end}"`, {
      location: { field: "end" },
    });
  }
  if (cadence === "cron") checkFormatIdentifiesWindows(where, space);
  return deepFreeze(spec);
}

/** Sampled check that keys of a custom format tell windows apart and read back. */
function checkFormatIdentifiesWindows(where: string, space: TimePartitionSpace): void {
  const sample = Math.min(space.size, 48);
  let previous: string | undefined;
  for (let i = 0; i < sample; i++) {
    const key = space.keyOfExtended(i);
    const problem =
      key === previous
        ? `windows ${i - 1} and ${i} both have key "${key}": the format must tell windows apart (add HH:mm?)`
        : space.locate(key) !== i
          ? `key "${key}" does not read back as the window it names`
          : undefined;
    if (problem) {
      throw new DefinitionError(
        `${where}: field "format": format "${space.spec.format}" does not fit cron "${space.spec.cron}": ${problem}`,
        {
          location: { field: "format" },
        },
      );
    }
    previous = key;
  }
}

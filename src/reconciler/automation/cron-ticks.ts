import { cronSchedule } from "../../partitions/index.js";

/** Most ticks enumerated in one evaluation: a minutely cron after a month's pause is 43 200. */
export const MAX_TICKS = 50_000;

/**
 * Results by arguments: assets sharing a schedule (most of them) evaluated at
 * the same instant share one computation. Bounded; pure, so always safe.
 */
const memo = new Map<string, unknown>();
const MEMO_SIZE = 2_000;
function memoized<T>(key: string, compute: () => T): T {
  if (memo.has(key)) return memo.get(key) as T;
  const value = compute();
  if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value!);
  memo.set(key, value);
  return value;
}

export interface CronTicks {
  /** Tick instants in (from, to], oldest first (at most MAX_TICKS, the latest ones kept). */
  readonly ticks: readonly Date[];
  /** Why no tick could be computed (a cron that never fires), if so. */
  readonly problem?: string;
}

/**
 * The cron's ticks in (from, to] in its timezone, by the rules partitions of
 * `timeWindows({ cron })` follow (see cronSchedule): on a fall-back night a
 * daily time in the repeated hour fires at its second occurrence, an hourly
 * cron at both; a tick inside a spring-forward gap fires at the first instant
 * after it (an hourly cron skips it).
 */
export function cronTicks(cron: string, timezone: string | null, from: Date, to: Date): CronTicks {
  if (to.getTime() <= from.getTime()) return { ticks: [] };
  return memoized(`t|${cron}|${timezone}|${from.getTime()}|${to.getTime()}`, () => {
    const schedule = cronSchedule(cron, timezone);
    if (typeof schedule === "string") return { ticks: [], problem: schedule };
    return { ticks: schedule.between(from, to, MAX_TICKS) };
  });
}

/** The first tick after `after` (undefined when there is none). */
export function nextTick(cron: string, timezone: string | null, after: Date): Date | undefined {
  const schedule = cronSchedule(cron, timezone);
  return typeof schedule === "string" ? undefined : schedule.after(after);
}

/** The latest tick at or before `at` (undefined when the cron never fired before it). */
export function latestTick(cron: string, timezone: string | null, at: Date): { latest?: Date; problem?: string } {
  const schedule = cronSchedule(cron, timezone);
  if (typeof schedule === "string") return { problem: schedule };
  const latest = schedule.atOrBefore(at);
  return latest ? { latest } : {};
}

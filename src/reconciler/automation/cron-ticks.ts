import { CronExpressionParser } from "cron-parser";

/** Most ticks enumerated in one evaluation: a minutely cron after a month's pause is 43 200. */
export const MAX_TICKS = 50_000;

/**
 * cron-parser started inside or just after a spring-forward gap can skip the
 * tick it moves out of the gap; started a few hours earlier it walks through
 * the gap consistently. Every enumeration starts this much early.
 */
const ANCHOR_MS = 3 * 3_600_000;

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
 * The cron's ticks in (from, to] in its timezone. On a spring-forward day a
 * tick inside the skipped hour fires once, just after the gap; on a fall-back
 * day a tick inside the repeated hour fires once.
 */
export function cronTicks(cron: string, timezone: string | null, from: Date, to: Date): CronTicks {
  if (to.getTime() <= from.getTime()) return { ticks: [] };
  return memoized(`t|${cron}|${timezone}|${from.getTime()}|${to.getTime()}`, () => computeTicks(cron, timezone, from, to));
}

function computeTicks(cron: string, timezone: string | null, from: Date, to: Date): CronTicks {
  try {
    const it = CronExpressionParser.parse(cron, { ...(timezone ? { tz: timezone } : {}), currentDate: new Date(from.getTime() - ANCHOR_MS) });
    const ticks: Date[] = [];
    for (;;) {
      const t = it.next().toDate();
      if (t.getTime() > to.getTime()) break;
      if (t.getTime() <= from.getTime()) continue;
      ticks.push(t);
      if (ticks.length > MAX_TICKS) ticks.shift();
    }
    return { ticks };
  } catch (cause) {
    return { ticks: [], problem: `cron "${cron}" cannot be evaluated: ${(cause as Error).message}` };
  }
}

/** The first tick after `after` (undefined when there is none). */
export function nextTick(cron: string, timezone: string | null, after: Date): Date | undefined {
  return memoized(`n|${cron}|${timezone}|${after.getTime()}`, () => computeNext(cron, timezone, after));
}

function computeNext(cron: string, timezone: string | null, after: Date): Date | undefined {
  try {
    const it = CronExpressionParser.parse(cron, { ...(timezone ? { tz: timezone } : {}), currentDate: new Date(after.getTime() - ANCHOR_MS) });
    for (let i = 0; i < 100_000; i++) {
      const t = it.next().toDate();
      if (t.getTime() > after.getTime()) return t;
    }
  } catch {
    // A cron that never fires has no next tick.
  }
  return undefined;
}

/** The latest tick at or before `at` (undefined when the cron never fired before it). */
export function latestTick(cron: string, timezone: string | null, at: Date): { latest?: Date; problem?: string } {
  return memoized(`l|${cron}|${timezone}|${at.getTime()}`, () => computeLatest(cron, timezone, at));
}

function computeLatest(cron: string, timezone: string | null, at: Date): { latest?: Date; problem?: string } {
  try {
    const it = CronExpressionParser.parse(cron, { ...(timezone ? { tz: timezone } : {}), currentDate: new Date(at.getTime() + 1) });
    const previous = it.prev().toDate();
    // prev() can skip a tick moved out of a spring-forward gap: walk forward so both directions agree.
    const after = cronTicks(cron, timezone, new Date(previous.getTime() - 1), at);
    return { latest: after.ticks.at(-1) ?? previous };
  } catch (cause) {
    return { problem: `cron "${cron}" cannot be evaluated: ${(cause as Error).message}` };
  }
}

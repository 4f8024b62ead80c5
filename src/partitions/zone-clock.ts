import { IANAZone } from "luxon";
import { DAY_MS } from "./civil-date.js";

/**
 * UTC offsets of one IANA zone, fast. Luxon (via Intl) costs ~5 µs per offset
 * lookup, too slow to format 100 000 keys; so each zone's transitions are found
 * once per ~400-day bucket (daily samples, then a binary search to the second)
 * and later lookups are a few comparisons.
 *
 * Offsets are in milliseconds, positive east of Greenwich. A "wall" instant is
 * a clock reading in milliseconds as if it were UTC (see civil-date.ts).
 */
export interface ZoneClock {
  readonly zone: string;
  /** Offset in force at `instant`. */
  offsetAt(instant: number): number;
  /** `instant` as a wall-clock reading in this zone. */
  toWall(instant: number): number;
  /**
   * Every instant that reads `wall` on this zone's clock, earliest first:
   * none inside a spring-forward gap, two inside a fall-back overlap.
   */
  instantsOf(wall: number): number[];
  /**
   * The instant a wall time denotes for window arithmetic: the earliest one
   * when the clock shows it twice; inside a gap, the wall time shifted forward
   * by the gap's length (02:30 in a 02:00→03:00 gap becomes 03:30), the same
   * rule cron-parser and luxon follow.
   */
  instantOf(wall: number): number;
  /** Whether the offset changes anywhere in [from, to]. */
  changesBetween(from: number, to: number): boolean;
}

const BUCKET_MS = 400 * DAY_MS;
const SECOND_MS = 1000;

interface Transition {
  readonly at: number;
  readonly offset: number;
}

interface Bucket {
  readonly start: number;
  readonly end: number;
  readonly initial: number;
  readonly transitions: readonly Transition[];
}

abstract class BaseZoneClock implements ZoneClock {
  constructor(readonly zone: string) {}

  abstract offsetAt(instant: number): number;
  abstract changesBetween(from: number, to: number): boolean;

  toWall(instant: number): number {
    return instant + this.offsetAt(instant);
  }

  instantsOf(wall: number): number[] {
    const before = this.offsetAt(wall - DAY_MS);
    const after = this.offsetAt(wall + DAY_MS);
    const out: number[] = [];
    for (const offset of before === after ? [before] : [before, after]) {
      const instant = wall - offset;
      if (this.offsetAt(instant) === offset) out.push(instant);
    }
    return out.sort((a, b) => a - b);
  }

  instantOf(wall: number): number {
    const candidates = this.instantsOf(wall);
    return candidates[0] ?? wall - this.offsetAt(wall - DAY_MS);
  }
}

class FixedZoneClock extends BaseZoneClock {
  constructor(
    zone: string,
    private readonly offset: number,
  ) {
    super(zone);
  }

  offsetAt(): number {
    return this.offset;
  }

  override toWall(instant: number): number {
    return instant + this.offset;
  }

  override instantsOf(wall: number): number[] {
    return [wall - this.offset];
  }

  override instantOf(wall: number): number {
    return wall - this.offset;
  }

  changesBetween(): boolean {
    return false;
  }
}

class IanaZoneClock extends BaseZoneClock {
  private readonly luxonZone: IANAZone;
  private readonly buckets = new Map<number, Bucket>();
  private last: Bucket | undefined;

  constructor(zone: string) {
    super(zone);
    this.luxonZone = IANAZone.create(zone);
  }

  offsetAt(instant: number): number {
    let bucket = this.last;
    if (bucket === undefined || instant < bucket.start || instant >= bucket.end) {
      bucket = this.bucket(Math.floor(instant / BUCKET_MS));
      this.last = bucket;
    }
    let offset = bucket.initial;
    for (const t of bucket.transitions) {
      if (t.at > instant) break;
      offset = t.offset;
    }
    return offset;
  }

  changesBetween(from: number, to: number): boolean {
    for (let b = Math.floor(from / BUCKET_MS); b <= Math.floor(to / BUCKET_MS); b++) {
      for (const t of this.bucket(b).transitions) {
        if (t.at > from && t.at <= to) return true;
      }
    }
    return false;
  }

  private slowOffset(instant: number): number {
    return Math.round(this.luxonZone.offset(instant) * 60_000);
  }

  private bucket(index: number): Bucket {
    const cached = this.buckets.get(index);
    if (cached) return cached;
    const start = index * BUCKET_MS;
    const end = start + BUCKET_MS;
    const initial = this.slowOffset(start);
    const transitions: Transition[] = [];
    let prevAt = start;
    let prevOffset = initial;
    // Daily samples: no zone has changed offset twice within one day and come back.
    for (let at = start + DAY_MS; at <= end; at += DAY_MS) {
      const offset = this.slowOffset(at);
      if (offset !== prevOffset) {
        let lo = prevAt;
        let hi = at;
        while (hi - lo > SECOND_MS) {
          const mid = lo + Math.floor((hi - lo) / 2 / SECOND_MS) * SECOND_MS;
          if (this.slowOffset(mid) === prevOffset) lo = mid;
          else hi = mid;
        }
        if (hi < end) transitions.push({ at: hi, offset });
      }
      prevAt = at;
      prevOffset = offset;
    }
    const bucket: Bucket = { start, end, initial, transitions };
    this.buckets.set(index, bucket);
    return bucket;
  }
}

const UTC_NAMES = new Set(["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"]);
const clocks = new Map<string, ZoneClock>();

/** Whether `zone` is an IANA time zone name this runtime knows. */
export function isValidTimeZone(zone: string): boolean {
  return zone.length > 0 && IANAZone.isValidZone(zone);
}

/** The (shared, cached) clock of an IANA zone; the zone must be valid. */
export function zoneClock(zone: string): ZoneClock {
  let clock = clocks.get(zone);
  if (!clock) {
    clock = UTC_NAMES.has(zone) ? new FixedZoneClock(zone, 0) : new IanaZoneClock(zone);
    clocks.set(zone, clock);
  }
  return clock;
}

import { PartitionError } from "../errors/index.js";
import { calendarProblem, parseOffset, formatOffset, parseWallTime } from "./civil-date.js";
import { BasePartitionSpace } from "./base-partition-space.js";
import { keyCodec, type KeyCodec } from "./key-codec.js";
import type { PartitionSubset } from "./partition-subset.js";
import { ceilIndex, timeGrid, type TimeGrid } from "./time-grid.js";
import type { TimeWindow, TimeWindowPartitionsSpec } from "./types.js";
import { zoneClock, type ZoneClock } from "./zone-clock.js";

const OFFSET_SUFFIX = /^(.*)([+-]\d{2}:\d{2})$/;

/**
 * Time-window partitions. A key is the window start on the zone's wall clock
 * in the spec's format. When the clock repeats an hour (DST fall-back), the
 * second window starting at the same wall time gets its UTC offset appended
 * (`2025-11-02-01:00-05:00`), so every window keeps a distinct key and the
 * common case keeps the plain one.
 */
export class TimePartitionSpace extends BasePartitionSpace {
  readonly grid: TimeGrid;
  readonly clock: ZoneClock;
  readonly codec: KeyCodec;
  readonly size: number;

  constructor(readonly spec: TimeWindowPartitionsSpec) {
    super();
    this.grid = timeGrid(spec);
    this.clock = zoneClock(spec.timezone);
    this.codec = keyCodec(spec.format);
    if (this.grid.empty) this.size = 0;
    else if (spec.end === undefined) this.size = Infinity;
    else this.size = Math.max(0, ceilIndex(this.grid, this.clock.instantOf(parseWallTime(spec.end)!)));
  }

  count(now: Date): number {
    const instant = now.getTime();
    if (!Number.isFinite(instant)) throw new PartitionError(`invalid "now" for ${this.describe()}: ${String(now)}`);
    if (this.size === 0) return 0;
    // Windows before the one containing `now` have closed.
    const closed = this.grid.indexAt(instant);
    return Math.min(this.size, Math.max(0, closed + this.spec.endOffset));
  }

  keyOfExtended(index: number): string {
    return this.keyOfInstant(this.grid.startOf(index));
  }

  /** Key of the window starting at `instant`. */
  keyOfInstant(instant: number): string {
    const offset = this.clock.offsetAt(instant);
    const wall = instant + offset;
    const key = this.codec.formatWall(wall);
    if (!this.codec.hasTimeOfDay) return key;
    const readings = this.clock.instantsOf(wall);
    return readings.length > 1 && readings[0]! < instant && this.startsWindow(readings[0]!) ? key + formatOffset(offset) : key;
  }

  /**
   * Whether a window starts at `instant`. A repeated wall time names its
   * second occurrence with a plain key when no window starts at the first (a
   * daily cron at 01:30 fires at the second 01:30 of a fall-back night).
   */
  private startsWindow(instant: number): boolean {
    return this.grid.startOf(this.grid.indexAt(instant)) === instant;
  }

  locate(key: string): number | string {
    if (this.grid.empty) return "it has no windows: its cron never fires";
    const parsed = this.parseKey(key);
    if (typeof parsed === "string") return parsed;
    const { instant, ownKey } = parsed;
    const index = ceilIndex(this.grid, instant);
    // A key that is the only spelling of its instant, at a window start, is that window's key: formatting it again
    // (most of the cost of looking up many keys) is needed only otherwise.
    if (!(ownKey && this.grid.startOf(index) === instant)) {
      const canonical = this.keyOfExtended(index);
      if (canonical !== key) {
        if (this.grid.startOf(index) === instant) return `did you mean "${canonical}"?`;
        return `no window starts at it; the nearest partitions are "${this.keyOfExtended(index - 1)}" and "${canonical}"`;
      }
    }
    if (index < 0) return `it is before the first partition "${this.keyOfExtended(0)}"`;
    if (index >= this.size) return `it is after the last partition "${this.keyOfExtended(this.size - 1)}" (end ${this.spec.end})`;
    return index;
  }

  windowOfExtended(index: number): TimeWindow {
    return { start: new Date(this.grid.startOf(index)), end: new Date(this.grid.startOf(index + 1)) };
  }

  override *keys(subset: PartitionSubset): IterableIterator<string> {
    const first = subset.first();
    const last = subset.last();
    if (first === undefined || last === undefined) return;
    this.checkIndex(first);
    this.checkIndex(last);
    for (const [start, end] of subset.ranges()) {
      for (let i = start; i < end; i++) yield this.keyOfExtended(i);
    }
  }

  /**
   * The instant a key names, or why it names none; `ownKey` when the key is the one the instant formats to (a
   * round-tripping format, without offset suffix, of a wall time the clock shows once).
   */
  private parseKey(key: string): { instant: number; ownKey: boolean } | string {
    const wall = this.codec.parseWall(key);
    if (wall !== undefined) {
      if (!this.codec.hasTimeOfDay) {
        const instant = this.clock.instantOf(wall);
        return { instant, ownKey: this.codec.roundTrips && this.clock.toWall(instant) === wall };
      }
      const readings = this.clock.instantsOf(wall);
      if (readings.length === 0) return `that wall time does not exist in ${this.spec.timezone} (the clocks skip it for DST)`;
      if (readings.length > 1) return { instant: this.startsWindow(readings[0]!) ? readings[0]! : readings[1]!, ownKey: false };
      return { instant: readings[0]!, ownKey: this.codec.roundTrips };
    }
    const suffixed = this.codec.hasTimeOfDay ? OFFSET_SUFFIX.exec(key) : null;
    if (suffixed) {
      const base = this.codec.parseWall(suffixed[1]!);
      const offset = parseOffset(suffixed[2]!);
      if (base !== undefined && offset !== undefined) {
        const instant = base - offset;
        if (this.clock.offsetAt(instant) === offset) return { instant, ownKey: false };
        return `${this.spec.timezone} is not at UTC offset ${suffixed[2]} at ${suffixed[1]}`;
      }
    }
    return calendarProblem(key) ?? `expected ${this.spec.format}`;
  }
}

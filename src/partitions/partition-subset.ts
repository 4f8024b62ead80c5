import { PartitionError } from "../errors/index.js";

/**
 * An immutable set of partition indices held as sorted, disjoint, non-adjacent
 * half-open ranges, so that a backfill of 1 000 000 partitions is one range.
 * Every operation is linear in the number of ranges, never in the number of
 * partitions (iterating indices is, of course, linear in what it yields).
 *
 * Indices are positions in a {@link PartitionSpace}; mappings may also produce
 * indices outside a definition's range (negative: windows before its start) to
 * report partitions that would be read but do not exist.
 *
 * @example
 * const a = PartitionSubset.range(0, 100).union(PartitionSubset.range(150, 151));
 * a.serialize(); // "0-100,150-151"
 * PartitionSubset.parse("0-100,150-151").equals(a); // true
 */
export class PartitionSubset implements Iterable<number> {
  static readonly EMPTY: PartitionSubset = new PartitionSubset([]);

  /** Flat [start0, end0, start1, end1, …]: sorted, disjoint, non-adjacent, every start < end. */
  private readonly bounds: readonly number[];
  private readonly total: number;

  private constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    let total = 0;
    for (let i = 0; i < bounds.length; i += 2) total += bounds[i + 1]! - bounds[i]!;
    this.total = total;
  }

  static empty(): PartitionSubset {
    return PartitionSubset.EMPTY;
  }

  /** The indices [start, end); empty when end <= start. */
  static range(start: number, end: number): PartitionSubset {
    checkIndex(start, "start");
    checkIndex(end, "end");
    return end > start ? new PartitionSubset([start, end]) : PartitionSubset.EMPTY;
  }

  static single(index: number): PartitionSubset {
    return PartitionSubset.range(index, index + 1);
  }

  /** Half-open ranges in any order, possibly overlapping. */
  static fromRanges(ranges: Iterable<readonly [number, number]>): PartitionSubset {
    const list: (readonly [number, number])[] = [];
    for (const r of ranges) {
      checkIndex(r[0], "start");
      checkIndex(r[1], "end");
      if (r[1] > r[0]) list.push(r);
    }
    list.sort((a, b) => a[0] - b[0]);
    const out: number[] = [];
    for (const [start, end] of list) appendRange(out, start, end);
    return out.length === 0 ? PartitionSubset.EMPTY : new PartitionSubset(out);
  }

  static fromIndices(indices: Iterable<number>): PartitionSubset {
    const sorted = [...indices].sort((a, b) => a - b);
    const out: number[] = [];
    for (const i of sorted) {
      checkIndex(i, "index");
      appendRange(out, i, i + 1);
    }
    return out.length === 0 ? PartitionSubset.EMPTY : new PartitionSubset(out);
  }

  /** Inverse of {@link serialize}: `"0-100,150-151"` (half-open ranges); `""` is empty. */
  static parse(text: string): PartitionSubset {
    if (text.trim() === "") return PartitionSubset.EMPTY;
    const ranges: [number, number][] = [];
    for (const part of text.split(",")) {
      const m = /^\s*(-?\d+)-(-?\d+)\s*$/.exec(part);
      if (!m || Number(m[2]) <= Number(m[1])) {
        throw new PartitionError(
          `invalid partition subset "${text}": "${part}" is not a range "start-end" with start < end (e.g. "0-100,150-151")`,
          { code: "PARTITION_SUBSET_INVALID" },
        );
      }
      ranges.push([Number(m[1]), Number(m[2])]);
    }
    return PartitionSubset.fromRanges(ranges);
  }

  /** Number of indices. */
  count(): number {
    return this.total;
  }

  isEmpty(): boolean {
    return this.bounds.length === 0;
  }

  get rangeCount(): number {
    return this.bounds.length / 2;
  }

  /** The ranges as [start, end) pairs, ascending. */
  *ranges(): IterableIterator<[number, number]> {
    for (let i = 0; i < this.bounds.length; i += 2) yield [this.bounds[i]!, this.bounds[i + 1]!];
  }

  /** Smallest index, or undefined when empty. */
  first(): number | undefined {
    return this.bounds[0];
  }

  /** Largest index, or undefined when empty. */
  last(): number | undefined {
    const end = this.bounds[this.bounds.length - 1];
    return end === undefined ? undefined : end - 1;
  }

  has(index: number): boolean {
    // Binary search over the range starts.
    let lo = 0;
    let hi = this.bounds.length / 2;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.bounds[2 * mid]! <= index) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && index < this.bounds[2 * (lo - 1) + 1]!;
  }

  union(other: PartitionSubset): PartitionSubset {
    if (other.isEmpty()) return this;
    if (this.isEmpty()) return other;
    const a = this.bounds;
    const b = other.bounds;
    const out: number[] = [];
    let i = 0;
    let j = 0;
    while (i < a.length || j < b.length) {
      if (j >= b.length || (i < a.length && a[i]! <= b[j]!)) {
        appendRange(out, a[i]!, a[i + 1]!);
        i += 2;
      } else {
        appendRange(out, b[j]!, b[j + 1]!);
        j += 2;
      }
    }
    return new PartitionSubset(out);
  }

  intersection(other: PartitionSubset): PartitionSubset {
    const a = this.bounds;
    const b = other.bounds;
    const out: number[] = [];
    let i = 0;
    let j = 0;
    while (i < a.length && j < b.length) {
      const start = Math.max(a[i]!, b[j]!);
      const end = Math.min(a[i + 1]!, b[j + 1]!);
      if (start < end) out.push(start, end);
      if (a[i + 1]! < b[j + 1]!) i += 2;
      else j += 2;
    }
    return out.length === 0 ? PartitionSubset.EMPTY : new PartitionSubset(out);
  }

  difference(other: PartitionSubset): PartitionSubset {
    if (this.isEmpty() || other.isEmpty()) return this;
    const a = this.bounds;
    const b = other.bounds;
    const out: number[] = [];
    let j = 0;
    for (let i = 0; i < a.length; i += 2) {
      let cursor = a[i]!;
      const end = a[i + 1]!;
      while (j < b.length && b[j + 1]! <= cursor) j += 2;
      // A range of `other` may cover several of ours: scan with k, keep j.
      for (let k = j; k < b.length && b[k]! < end; k += 2) {
        if (b[k]! > cursor) out.push(cursor, b[k]!);
        cursor = Math.max(cursor, b[k + 1]!);
        if (cursor >= end) break;
      }
      if (cursor < end) out.push(cursor, end);
    }
    return out.length === 0 ? PartitionSubset.EMPTY : new PartitionSubset(out);
  }

  /** The indices within [start, end). */
  clamp(start: number, end: number): PartitionSubset {
    return this.intersection(PartitionSubset.range(start, end));
  }

  /** Every index moved by `delta`. */
  shift(delta: number): PartitionSubset {
    if (delta === 0 || this.isEmpty()) return this;
    checkIndex(delta, "delta");
    return new PartitionSubset(this.bounds.map((x) => x + delta));
  }

  /** The `n` smallest indices (a backfill's next batch). */
  take(n: number): PartitionSubset {
    const out: number[] = [];
    let left = n;
    for (let i = 0; i < this.bounds.length && left > 0; i += 2) {
      const start = this.bounds[i]!;
      const end = Math.min(this.bounds[i + 1]!, start + left);
      out.push(start, end);
      left -= end - start;
    }
    return out.length === 0 ? PartitionSubset.EMPTY : new PartitionSubset(out);
  }

  equals(other: PartitionSubset): boolean {
    if (this.bounds.length !== other.bounds.length) return false;
    for (let i = 0; i < this.bounds.length; i++) if (this.bounds[i] !== other.bounds[i]) return false;
    return true;
  }

  isSubsetOf(other: PartitionSubset): boolean {
    return this.difference(other).isEmpty();
  }

  *[Symbol.iterator](): Iterator<number> {
    for (let i = 0; i < this.bounds.length; i += 2) {
      const end = this.bounds[i + 1]!;
      for (let x = this.bounds[i]!; x < end; x++) yield x;
    }
  }

  /** The indices >= `start`, ascending (resuming a paginated listing). */
  *indicesFrom(start: number): IterableIterator<number> {
    for (let i = 0; i < this.bounds.length; i += 2) {
      const end = this.bounds[i + 1]!;
      for (let x = Math.max(this.bounds[i]!, start); x < end; x++) yield x;
    }
  }

  /** `"0-100,150-151"`: half-open ranges, ascending; `""` when empty. */
  serialize(): string {
    const parts: string[] = [];
    for (let i = 0; i < this.bounds.length; i += 2) parts.push(`${this.bounds[i]}-${this.bounds[i + 1]}`);
    return parts.join(",");
  }

  toJSON(): string {
    return this.serialize();
  }

  toString(): string {
    return `PartitionSubset(${this.serialize()})`;
  }
}

/** The subset holding the single implicit partition of an unpartitioned asset. */
export const UNPARTITIONED: PartitionSubset = PartitionSubset.range(0, 1);

function appendRange(out: number[], start: number, end: number): void {
  const n = out.length;
  if (n > 0 && out[n - 1]! >= start) {
    if (end > out[n - 1]!) out[n - 1] = end;
  } else {
    out.push(start, end);
  }
}

function checkIndex(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) {
    throw new PartitionError(`partition ${what} must be a safe integer, got ${value}`, { code: "PARTITION_RANGE_INVALID" });
  }
}

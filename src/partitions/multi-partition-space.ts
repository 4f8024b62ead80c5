import { BasePartitionSpace } from "./base-partition-space.js";
import type { KeyListPartitionSpace } from "./key-list-partition-space.js";
import { PartitionSubset } from "./partition-subset.js";
import { DIMENSION_SEPARATOR } from "./spec-schema.js";
import { TimePartitionSpace } from "./time-partition-space.js";
import type { MultiPartitionsSpec, TimeWindow } from "./types.js";

export type SingleDimensionSpace = TimePartitionSpace | KeyListPartitionSpace;

/** One dimension of a multi space, in linearisation order. */
export interface Axis {
  /** Dimension name; null for the sole axis of a single-dimension space. */
  readonly name: string | null;
  readonly space: SingleDimensionSpace;
  /** Position of the dimension's key in a multi key (declaration order). */
  readonly position: number;
}

/**
 * Multi-dimensional partitions: the product of single-dimension spaces.
 * Index = Σ indexₖ · strideₖ over the axes in linearisation order (the time
 * dimension first, then the others as declared; see PartitionSpace), where
 * strideₖ is the product of the sizes of the axes after k. Only the leading
 * axis may be unbounded, which is why the time dimension leads.
 */
export class MultiPartitionSpace extends BasePartitionSpace {
  readonly size: number;
  /** Axes in linearisation order. */
  readonly axes: readonly Axis[];
  /** strides[k] = product of the sizes of the axes after k. */
  readonly strides: readonly number[];
  private readonly timeAxis: Axis | undefined;

  constructor(
    readonly spec: MultiPartitionsSpec,
    spaces: readonly SingleDimensionSpace[],
  ) {
    super();
    const declared = spec.dimensions.map((d, position): Axis => ({ name: d.name, space: spaces[position]!, position }));
    this.timeAxis = declared.find((a) => a.space instanceof TimePartitionSpace);
    this.axes = this.timeAxis ? [this.timeAxis, ...declared.filter((a) => a !== this.timeAxis)] : declared;
    const strides = new Array<number>(this.axes.length).fill(1);
    for (let k = this.axes.length - 2; k >= 0; k--) strides[k] = strides[k + 1]! * this.axes[k + 1]!.space.size;
    this.strides = strides;
    this.size = strides[0] === 0 ? 0 : this.axes[0]!.space.size * strides[0]!;
  }

  /** Sizes of the axes in linearisation order. */
  get sizes(): number[] {
    return this.axes.map((a) => a.space.size);
  }

  count(now: Date): number {
    return this.strides[0] === 0 ? 0 : this.axes[0]!.space.count(now) * this.strides[0]!;
  }

  /** Per-axis indices (linearisation order) of a linear index; the leading one may lie outside its axis. */
  digits(index: number): number[] {
    const out: number[] = [];
    let rest = index;
    for (const stride of this.strides) {
      const digit = Math.floor(rest / stride);
      out.push(digit);
      rest -= digit * stride;
    }
    return out;
  }

  keyOfExtended(index: number): string {
    if (this.strides[0] === 0) this.checkIndex(index);
    const parts = new Array<string>(this.axes.length);
    this.digits(index).forEach((digit, k) => {
      const axis = this.axes[k]!;
      parts[axis.position] = axis.space.keyOfExtended(digit);
    });
    return parts.join(DIMENSION_SEPARATOR);
  }

  locate(key: string): number | string {
    const parts = key.split(DIMENSION_SEPARATOR);
    if (parts.length !== this.axes.length) {
      const shape = this.spec.dimensions.map((d) => d.name).join(DIMENSION_SEPARATOR);
      return `expected ${this.axes.length} keys separated by "${DIMENSION_SEPARATOR}" (${shape})`;
    }
    let index = 0;
    for (const [k, axis] of this.axes.entries()) {
      const part = parts[axis.position]!;
      const found = axis.space.locate(part);
      if (typeof found === "string") return `dimension "${axis.name}": "${part}" is not a partition of ${axis.space.describe()}: ${found}`;
      index += found * this.strides[k]!;
    }
    return index;
  }

  windowOfExtended(index: number): TimeWindow | undefined {
    if (!this.timeAxis) {
      this.checkIndex(index);
      return undefined;
    }
    return (this.timeAxis.space as TimePartitionSpace).windowOfExtended(this.digits(index)[0]!);
  }

  override range(fromKey: string, toKey: string): PartitionSubset {
    if (this.timeAxis && !fromKey.includes(DIMENSION_SEPARATOR) && !toKey.includes(DIMENSION_SEPARATOR)) {
      // Dates alone: every combination of the other dimensions within those dates.
      const stride = this.strides[0]!;
      if (stride === 0) return PartitionSubset.EMPTY;
      const time = this.timeAxis.space;
      const from = time.indexOf(fromKey);
      const to = time.indexOf(toKey);
      return this.indexRange(fromKey, from * stride, toKey, (to + 1) * stride - 1);
    }
    return super.range(fromKey, toKey);
  }

  override dimensions(key: string): Readonly<Record<string, string>> {
    this.indexOf(key);
    const parts = key.split(DIMENSION_SEPARATOR);
    return Object.freeze(Object.fromEntries(this.spec.dimensions.map((d, i) => [d.name, parts[i]!])));
  }
}

import type { PartitionSubset } from "../partitions/index.js";

/**
 * Where the steps of one asset sit in a plan: its partitions are numbered
 * from `base` in index order, so a partition's step is `base` + its rank in
 * the planned subset, found by binary search over the subset's ranges.
 */
export class AssetSteps {
  readonly base: number;
  readonly count: number;
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  /** Rank of each range's first partition. */
  private readonly ranks: number[] = [];

  constructor(base: number, subset: PartitionSubset) {
    this.base = base;
    let rank = 0;
    for (const [start, end] of subset.ranges()) {
      this.starts.push(start);
      this.ends.push(end);
      this.ranks.push(rank);
      rank += end - start;
    }
    this.count = rank;
  }

  /**
   * Adds the step index ranges of the planned partitions within [start, end)
   * to `out` as [from, to) pairs: a range of consecutive partitions is a
   * range of consecutive steps.
   */
  stepRanges(start: number, end: number, out: [number, number][]): void {
    let i = this.rangeAtOrAfter(start);
    for (; i < this.starts.length && this.starts[i]! < end; i++) {
      const from = Math.max(start, this.starts[i]!);
      const to = Math.min(end, this.ends[i]!);
      if (from >= to) continue;
      const first = this.base + this.ranks[i]! + (from - this.starts[i]!);
      out.push([first, first + (to - from)]);
    }
  }

  /** The first range whose end is after `index`. */
  private rangeAtOrAfter(index: number): number {
    let lo = 0;
    let hi = this.ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ends[mid]! <= index) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

import type { AnyPartitionSpace } from "./partition-space.js";
import { PartitionSubset } from "./partition-subset.js";
import type { AxisMapping } from "./mapping-plan.js";
import { sameTimeGrid } from "./mapping-plan.js";
import { specsEqual } from "./specs-equal.js";
import { ceilIndex } from "./time-grid.js";
import { TimePartitionSpace } from "./time-partition-space.js";

/** Upstream partitions one mapping asks for, before checking which exist. */
export interface AxisRequest {
  /** Indices in the upstream space; may lie outside what exists (before start, not yet closed, after end). */
  readonly indices: PartitionSubset;
  /** Keys the mapping names that the upstream definition does not have (static mappings, identity between different definitions). */
  readonly unknownKeys: readonly string[];
  /** Set when lastPartition() finds no upstream partition at all. */
  readonly noneToRead?: string;
}

/**
 * The upstream partitions `subset` of `down` reads through `mapping`. Works
 * on single dimensions and, for identity/all/last/static, on whole spaces.
 */
export function requestUpstream(
  down: AnyPartitionSpace,
  up: AnyPartitionSpace,
  mapping: AxisMapping,
  subset: PartitionSubset,
  now: Date,
): AxisRequest {
  if (subset.isEmpty()) return { indices: PartitionSubset.EMPTY, unknownKeys: [] };
  switch (mapping.kind) {
    case "all":
      return { indices: up.all(now), unknownKeys: [] };
    case "last": {
      const count = up.count(now);
      if (count > 0) return { indices: PartitionSubset.single(count - 1), unknownKeys: [] };
      // The first partition is what would be read once one exists.
      if (up.size > 0) return { indices: PartitionSubset.single(0), unknownKeys: [] };
      return { indices: PartitionSubset.EMPTY, unknownKeys: [], noneToRead: `${up.describe()} has no partitions yet` };
    }
    case "identity": {
      if (specsEqual(down.spec, up.spec)) return { indices: subset, unknownKeys: [] };
      const shift = gridShift(down, up);
      if (shift !== undefined) return { indices: subset.shift(shift), unknownKeys: [] };
      return byKey(subset, (i) => [down.keyOfExtended(i)], up);
    }
    case "timeWindow": {
      const { startOffset, endOffset } = mapping;
      const [d, u] = timeSpaces(down, up);
      if (d.grid.empty || u.grid.empty) return { indices: PartitionSubset.EMPTY, unknownKeys: [] };
      // Consecutive downstream windows read overlapping or touching upstream
      // windows (startOffset <= endOffset), so each range maps to one range.
      const ranges: [number, number][] = [];
      for (const [a, b] of subset.ranges()) {
        const from = d.grid.startOf(a + startOffset);
        const to = d.grid.startOf(b + endOffset);
        ranges.push([u.grid.indexAt(from), ceilIndex(u.grid, to)]);
      }
      const indices = PartitionSubset.fromRanges(ranges);
      // The part of a window outside the upstream's definition never exists: it is not read (Dagster clips
      // the same way), unless the mapping asks for whole windows, and then it is reported missing.
      if (mapping.allowPartial === false) return { indices, unknownKeys: [] };
      return { indices: indices.clamp(0, Number.isFinite(u.size) ? u.size : Number.MAX_SAFE_INTEGER), unknownKeys: [] };
    }
    case "static": {
      const indices: number[] = [];
      const unknownKeys: string[] = [];
      for (const [upKey, downKeys] of Object.entries(mapping.map)) {
        if (!downKeys.some((k) => isIn(down, k, subset))) continue;
        const found = up.locate(upKey);
        if (typeof found === "number") indices.push(found);
        else unknownKeys.push(upKey);
      }
      return { indices: PartitionSubset.fromIndices(indices), unknownKeys };
    }
  }
}

/**
 * The downstream partitions that read any of `subset` of `up` through
 * `mapping` (may include ones that do not exist yet: callers clip).
 */
export function affectedDownstream(
  up: AnyPartitionSpace,
  down: AnyPartitionSpace,
  mapping: AxisMapping,
  subset: PartitionSubset,
  now: Date,
): PartitionSubset {
  if (subset.isEmpty()) return PartitionSubset.EMPTY;
  switch (mapping.kind) {
    case "all":
      return down.all(now);
    case "last": {
      const count = up.count(now);
      return count > 0 && subset.has(count - 1) ? down.all(now) : PartitionSubset.EMPTY;
    }
    case "identity": {
      if (specsEqual(down.spec, up.spec)) return subset;
      const shift = gridShift(down, up);
      if (shift !== undefined) return subset.shift(-shift);
      return byKey(subset, (i) => [up.keyOfExtended(i)], down).indices;
    }
    case "timeWindow": {
      const { startOffset, endOffset } = mapping;
      const [d, u] = timeSpaces(down, up);
      if (d.grid.empty || u.grid.empty) return PartitionSubset.EMPTY;
      // Downstream window i reads [start(i + startOffset), start(i + endOffset + 1)):
      // it overlaps upstream [from, to) iff i >= indexAt(from) - endOffset and i < ceil(to) - startOffset.
      const ranges: [number, number][] = [];
      for (const [a, b] of subset.ranges()) {
        const from = u.grid.startOf(a);
        const to = u.grid.startOf(b);
        ranges.push([d.grid.indexAt(from) - endOffset, ceilIndex(d.grid, to) - startOffset]);
      }
      return PartitionSubset.fromRanges(ranges);
    }
    case "static": {
      const indices: number[] = [];
      for (const [upKey, downKeys] of Object.entries(mapping.map)) {
        if (!isIn(up, upKey, subset)) continue;
        for (const k of downKeys) {
          const found = down.locate(k);
          if (typeof found === "number") indices.push(found);
        }
      }
      return PartitionSubset.fromIndices(indices);
    }
  }
}

/**
 * Index difference between two time definitions on the same grid (same
 * cadence, zone and format, different start): identity is then a shift.
 */
function gridShift(from: AnyPartitionSpace, to: AnyPartitionSpace): number | undefined {
  if (!(from instanceof TimePartitionSpace) || !(to instanceof TimePartitionSpace)) return undefined;
  if (!sameTimeGrid(from.spec, to.spec) || from.grid.empty || to.grid.empty) return undefined;
  const start = from.grid.startOf(0);
  const shift = to.grid.indexAt(start);
  return to.grid.startOf(shift) === start ? shift : undefined;
}

function byKey(subset: PartitionSubset, keysOf: (index: number) => string[], target: AnyPartitionSpace): AxisRequest {
  const indices: number[] = [];
  const unknownKeys: string[] = [];
  for (const i of subset) {
    for (const key of keysOf(i)) {
      const found = target.locate(key);
      if (typeof found === "number") indices.push(found);
      else unknownKeys.push(key);
    }
  }
  return { indices: PartitionSubset.fromIndices(indices), unknownKeys };
}

function isIn(space: AnyPartitionSpace, key: string, subset: PartitionSubset): boolean {
  const found = space.locate(key);
  return typeof found === "number" && subset.has(found);
}

function timeSpaces(down: AnyPartitionSpace, up: AnyPartitionSpace): [TimePartitionSpace, TimePartitionSpace] {
  if (!(down instanceof TimePartitionSpace) || !(up instanceof TimePartitionSpace)) {
    throw new TypeError("timeWindow mapping between non-time dimensions (planMapping should have refused it)");
  }
  return [down, up];
}

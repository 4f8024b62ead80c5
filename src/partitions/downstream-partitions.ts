import { affectedDownstream } from "./axis-mapping.js";
import { axesOf, axisIndex } from "./axes-of.js";
import { spaceOf, type PartitionContext } from "./partition-space.js";
import { PartitionSubset, UNPARTITIONED } from "./partition-subset.js";
import { resolvePlan, unpartitionedDownstreamMapping } from "./resolve-plan.js";
import { boxesOf, linearize } from "./subset-boxes.js";
import type { PartitionMappingSpec, PartitionsSpec } from "./types.js";

/**
 * The downstream partitions that read any of `upSubset` of the upstream asset
 * (those existing at `now`): what a new upstream materialisation makes stale.
 * `null` specs and mapping mean as in upstreamPartitions.
 */
export function downstreamPartitions(
  upSpec: PartitionsSpec | null,
  downSpec: PartitionsSpec | null,
  mapping: PartitionMappingSpec | null,
  upSubset: PartitionSubset,
  ctx: PartitionContext | undefined,
  now: Date,
): PartitionSubset {
  if (upSubset.isEmpty()) return PartitionSubset.EMPTY;
  if (downSpec === null) {
    if (upSpec === null) return UNPARTITIONED;
    const up = spaceOf(upSpec, ctx);
    const kind = unpartitionedDownstreamMapping(mapping, upSpec);
    const count = up.count(now);
    return kind === "all" || (count > 0 && upSubset.has(count - 1)) ? UNPARTITIONED : PartitionSubset.EMPTY;
  }
  const down = spaceOf(downSpec, ctx);
  if (upSpec === null) return down.all(now);
  const up = spaceOf(upSpec, ctx);
  const plan = resolvePlan(downSpec, upSpec, mapping);
  const existing = down.all(now);
  if (plan.kind === "whole") return affectedDownstream(up, down, plan.mapping, upSubset, now).intersection(existing);
  const downAxes = axesOf(down);
  const upAxes = axesOf(up);
  const downSizes = downAxes.map((a) => a.space.size);
  const links = plan.links.map((l) => ({ d: axisIndex(downAxes, l.down), u: axisIndex(upAxes, l.up), mapping: l.mapping }));
  const boxes =
    upAxes.length === 1
      ? [[upSubset]]
      : boxesOf(
          upSubset,
          upAxes.map((a) => a.space.size),
        );
  const ranges: [number, number][] = [];
  for (const box of boxes) {
    const downBox = downAxes.map((a) => a.space.all(now));
    for (const { d, u, mapping: m } of links) {
      downBox[d] = downBox[d]!.intersection(affectedDownstream(upAxes[u]!.space, downAxes[d]!.space, m, box[u]!, now));
    }
    for (const range of linearize(downBox, downSizes)) ranges.push(range);
  }
  return PartitionSubset.fromRanges(ranges).intersection(existing);
}

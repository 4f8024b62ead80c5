import { readsMany, type AssetGraph, type SnapshotAsset } from "../graph/index.js";
import { partitionSpace, UNPARTITIONED, upstreamPartitions, type PartitionContext } from "../partitions/index.js";

/** What a step reads of one dependency: the upstream partitions, in partition order, and whether as an array. */
export interface StepRead {
  /** The dependency's name: the key of the input the function receives. */
  readonly name: string;
  readonly assetKey: string;
  readonly keys: readonly string[];
  /** The function receives an array (in partition order) rather than one value. */
  readonly many: boolean;
}

/**
 * The upstream partitions one partition of `asset` reads, per dependency, through the dependencies' partition
 * mappings at `now`: what a worker loads as the step's inputs. An unpartitioned upstream is read as its one
 * partition `""`. Throws when a dependency's asset is not in `graph` or the mapping cannot map the partition.
 * @example
 * import type { AssetGraph } from "../graph/index.js";
 * // given graph: AssetGraph
 * const reads = stepReads(graph, graph.require("shop/revenue_7d"), "2025-03-10", undefined, new Date());
 * // [{ name: "orders", assetKey: "shop/orders", keys: ["2025-03-04", …, "2025-03-10"], many: true }]
 */
export function stepReads(
  graph: AssetGraph,
  asset: SnapshotAsset,
  partitionKey: string,
  ctx: PartitionContext | undefined,
  now: Date,
): StepRead[] {
  const downSubset = asset.partitions ? partitionSpace(asset.partitions, ctx).subset([partitionKey]) : UNPARTITIONED;
  return asset.deps.map((dep) => {
    const up = graph.require(dep.assetKey);
    const { subset } = upstreamPartitions(asset.partitions, up.partitions, dep.mapping, downSubset, ctx, now);
    const keys = up.partitions ? [...partitionSpace(up.partitions, ctx).keys(subset)] : [""];
    const many = dep.mapping !== null && readsMany(asset.partitions, up.partitions, dep.mapping);
    return { name: dep.name, assetKey: dep.assetKey, keys, many };
  });
}

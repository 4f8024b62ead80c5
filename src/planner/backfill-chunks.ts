import type { AssetGraph } from "../graph/index.js";
import { downstreamPartitions, PartitionSubset, upstreamPartitions, type PartitionContext } from "../partitions/index.js";
import type { BackfillLayout } from "./backfill-layout.js";

/** Partitions per asset; only non-empty entries, in topological order. */
export type AssetSubsets = ReadonlyMap<string, PartitionSubset>;

/**
 * How a backfill is cut into runs ("chunks"), oldest partitions first.
 *
 * The assets on the axis (those sharing the roots' partitions definition)
 * are sliced in partition order, `maxPartitionsPerRun` partitions of the
 * axis per chunk. Every partition of every target then goes into the first
 * chunk at or after its own slice in which everything it reads from the
 * backfill is materialised by that chunk or an earlier one; so a weekly
 * partition that reads seven dailies joins the chunk of its last day, an
 * unpartitioned report reading all days joins the last chunk, and an
 * unpartitioned input of everything joins the first. Within a chunk the run's
 * plan orders assets by dependency; a chunk never reads a partition that a
 * later chunk makes.
 *
 * Formally, with S_k(X) the partitions of asset X in chunks 0…k:
 *   S_k(X) = targets(X) ∩ slice_0…k (axis assets only)
 *            \ the partitions of X that read targets(U) \ S_k(U), for each dependency U
 * computed in topological order; chunk k is S_k \ S_(k-1). Everything is a
 * set operation on ranges: a chunk costs O(assets × dependencies × ranges),
 * whatever the number of partitions, and nothing needs storing besides the
 * layout.
 *
 * @example
 * import type { AssetGraph } from "../graph/index.js";
 * // given graph: AssetGraph, layout: BackfillLayout, now: Date
 * const chunks = new BackfillChunks(graph, layout, undefined, now);
 * for (let k = 0; k < chunks.count; k++) chunks.chunk(k); // Map { "sales/orders" => 0-1, … }
 */
export class BackfillChunks {
  /** How many chunks there are (at least one). */
  readonly count: number;
  private readonly axisKeys: ReadonlySet<string>;
  /** The union of the axis assets' targets: what the slices are cut from. */
  private readonly axis: PartitionSubset;
  /** The targets in dependency order (of the current graph: deps may have changed since the launch). */
  private readonly order: readonly string[];
  /** S_k by k, for the few k asked about recently. */
  private readonly prefixes = new Map<number, Map<string, PartitionSubset>>();

  constructor(
    private readonly graph: AssetGraph,
    private readonly layout: BackfillLayout,
    private readonly ctx: PartitionContext | undefined,
    private readonly now: Date,
  ) {
    this.order = graph.topologicalOrder(layout.targets.keys());
    this.axisKeys = new Set(layout.axis.filter((k) => layout.targets.has(k)));
    let axis = PartitionSubset.EMPTY;
    for (const key of this.axisKeys) axis = axis.union(layout.targets.get(key)!);
    this.axis = axis;
    this.count = Math.max(1, Math.ceil(axis.count() / layout.maxPartitionsPerRun));
  }

  /** The partitions of chunk `k` (0 ≤ k < count) per asset; empty when every one of them went to a later chunk. */
  chunk(k: number): Map<string, PartitionSubset> {
    const upTo = this.prefix(k);
    const before = this.prefix(k - 1);
    const out = new Map<string, PartitionSubset>();
    for (const [key, subset] of upTo) {
      const own = subset.difference(before.get(key) ?? PartitionSubset.EMPTY);
      if (!own.isEmpty()) out.set(key, own);
    }
    return out;
  }

  /**
   * The upstream partitions that the steps of `chunk` read and that the
   * chunk does not make itself, per upstream asset: from earlier chunks, or
   * from outside the backfill. What the chunk must wait for, and must find
   * materialised.
   */
  readsOutside(chunk: AssetSubsets): Map<string, PartitionSubset> {
    const out = new Map<string, PartitionSubset>();
    for (const [key, subset] of chunk) {
      const a = this.graph.require(key);
      for (const dep of a.deps) {
        const up = this.graph.get(dep.assetKey);
        if (!up) continue;
        const read = upstreamPartitions(a.partitions, up.partitions, dep.mapping, subset, this.ctx, this.now).subset;
        const outside = read.difference(chunk.get(up.key) ?? PartitionSubset.EMPTY);
        if (!outside.isEmpty()) out.set(up.key, (out.get(up.key) ?? PartitionSubset.EMPTY).union(outside));
      }
    }
    return out;
  }

  /**
   * The partitions of `chunk` that cannot be materialised now: they read
   * an upstream partition that is neither planned in the chunk nor
   * `available` (materialised), directly or through other blocked
   * partitions of the chunk. An earlier chunk that failed is the usual
   * cause. `available` is consulted for partitions outside the chunk and
   * for partitions of the chunk that are already there (they are not run).
   */
  blocked(chunk: AssetSubsets, available: (assetKey: string) => PartitionSubset): Map<string, PartitionSubset> {
    const out = new Map<string, PartitionSubset>();
    for (const [key, subset] of chunk) {
      const a = this.graph.require(key);
      const toRun = subset.difference(available(key));
      let blocked = PartitionSubset.EMPTY;
      for (const dep of a.deps) {
        const up = this.graph.get(dep.assetKey);
        if (!up) continue;
        const read = upstreamPartitions(a.partitions, up.partitions, dep.mapping, toRun, this.ctx, this.now).subset;
        const planned = (chunk.get(up.key) ?? PartitionSubset.EMPTY).difference(out.get(up.key) ?? PartitionSubset.EMPTY);
        const lacking = read.difference(planned).difference(available(up.key));
        if (lacking.isEmpty()) continue;
        blocked = blocked.union(downstreamPartitions(up.partitions, a.partitions, dep.mapping, lacking, this.ctx, this.now));
      }
      blocked = blocked.intersection(toRun);
      if (!blocked.isEmpty()) out.set(key, blocked);
    }
    return out;
  }

  /** S_k: the partitions in chunks 0…k, per target asset. */
  private prefix(k: number): Map<string, PartitionSubset> {
    if (k < 0) return new Map();
    const cached = this.prefixes.get(k);
    if (cached) return cached;
    const last = k >= this.count - 1;
    const slice = last ? this.axis : this.axis.take((k + 1) * this.layout.maxPartitionsPerRun);
    const out = new Map<string, PartitionSubset>();
    for (const key of this.order) {
      const targets = this.layout.targets.get(key)!;
      let subset = this.axisKeys.has(key) && !last ? targets.intersection(slice) : targets;
      const a = this.graph.require(key);
      for (const dep of a.deps) {
        const upTargets = this.layout.targets.get(dep.assetKey);
        const upPrefix = out.get(dep.assetKey);
        if (!upTargets || !upPrefix || subset.isEmpty()) continue;
        const later = upTargets.difference(upPrefix);
        if (later.isEmpty()) continue;
        const up = this.graph.require(dep.assetKey);
        subset = subset.difference(downstreamPartitions(up.partitions, a.partitions, dep.mapping, later, this.ctx, this.now));
      }
      out.set(key, subset);
    }
    // The advancing loop asks for k and k-1, then k+1 and k: keep the last few.
    if (this.prefixes.size >= 4) this.prefixes.delete(this.prefixes.keys().next().value!);
    this.prefixes.set(k, out);
    return out;
  }
}

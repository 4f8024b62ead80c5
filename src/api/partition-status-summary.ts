import type { SnapshotAsset } from "../graph/index.js";
import { loadPartitionSpace, PartitionSubset, type PartitionSpace } from "../partitions/index.js";
import type { PartitionState, PartitionStatusStore, RecordedPartitionState, RecordedStatusCounts } from "../storage/index.js";

export type PartitionStatusCounts = Record<PartitionState, number> & { total: number };

/** Consecutive partitions (in the partition space's order) with one status. */
export interface PartitionStatusRange {
  readonly status: PartitionState;
  /** First and last key, both included ('' for an unpartitioned asset). */
  readonly from: string;
  readonly to: string;
  readonly count: number;
}

export interface PartitionStatusSummary {
  readonly counts: PartitionStatusCounts;
  /** Present when asked for: covers every existing partition, oldest first. */
  readonly ranges?: readonly PartitionStatusRange[];
}

const RECORDED: readonly RecordedPartitionState[] = ["materializing", "materialized", "failed", "stale", "timed_out"];

/**
 * Counts (and, when asked, ranges) of an asset's existing partitions by status.
 *
 * Counts alone come from one SQL aggregate (`counts`, e.g. batched over many
 * assets); partitions without a record are the missing ones. They count every
 * recorded partition of the asset, so after its partitions definition shrank,
 * records of keys that left it are counted until they are cleared.
 *
 * Ranges need each recorded key's place in the partition space, so they read
 * the recorded keys of the asset (one query, one short string per recorded
 * partition; nothing per missing partition) and fold them into index ranges;
 * the counts then come from the same fold and are exact.
 */
export async function partitionStatusSummary(
  asset: SnapshotAsset,
  options: {
    readonly store: Pick<PartitionStatusStore, "keysByStatus">;
    /** The recorded counts of this asset (see PartitionStatusStore.countByStatus). */
    readonly counts: () => Promise<RecordedStatusCounts>;
    readonly withRanges: boolean;
    readonly now: Date;
    readonly dynamicKeys: (name: string) => Promise<readonly string[]>;
  },
): Promise<PartitionStatusSummary> {
  const space = asset.partitions ? await loadPartitionSpace(asset.partitions, options.dynamicKeys) : undefined;
  const total = space ? space.count(options.now) : 1;
  if (!options.withRanges) {
    const recorded = await options.counts();
    const known = RECORDED.reduce((n, s) => n + recorded[s], 0);
    return { counts: { ...recorded, missing: Math.max(0, total - known), total } };
  }
  const keys = await options.store.keysByStatus({ assetKey: asset.key, codeVersion: asset.codeVersion });
  const subsets = new Map<PartitionState, PartitionSubset>();
  for (const status of RECORDED) subsets.set(status, toSubset(keys.get(status) ?? [], space, total));
  let recordedAll = PartitionSubset.empty();
  for (const s of subsets.values()) recordedAll = recordedAll.union(s);
  subsets.set("missing", PartitionSubset.range(0, total).difference(recordedAll));

  const ranges: { start: number; end: number; status: PartitionState }[] = [];
  for (const [status, subset] of subsets) for (const [start, end] of subset.ranges()) ranges.push({ start, end, status });
  ranges.sort((a, b) => a.start - b.start);
  const keyAt = (i: number) => (space ? space.keyAt(i) : "");
  const count = (s: PartitionState) => subsets.get(s)?.count() ?? 0;
  return {
    counts: {
      missing: count("missing"),
      materializing: count("materializing"),
      materialized: count("materialized"),
      failed: count("failed"),
      stale: count("stale"),
      timed_out: count("timed_out"),
      total,
    },
    ranges: ranges.map((r) => ({ status: r.status, from: keyAt(r.start), to: keyAt(r.end - 1), count: r.end - r.start })),
  };
}

/** Indices of the keys that exist now; records of keys outside the space (a changed definition) are left out. */
function toSubset(keys: readonly string[], space: PartitionSpace | undefined, total: number): PartitionSubset {
  if (!space) return keys.includes("") ? PartitionSubset.range(0, 1) : PartitionSubset.empty();
  const indices: number[] = [];
  for (const key of keys) {
    if (!space.has(key)) continue;
    const i = space.indexOf(key);
    if (i < total) indices.push(i);
  }
  return PartitionSubset.fromIndices(indices);
}

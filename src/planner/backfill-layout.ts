import { InputError, PartitionError } from "../errors/index.js";
import type { AssetGraph } from "../graph/index.js";
import { PartitionSubset, specHash } from "../partitions/index.js";

/**
 * What a backfill materialises, frozen when it is launched: the partitions of
 * each asset (as ranges), and which assets are cut into chunks by partition.
 * Everything else about a backfill (which partitions each run holds, what a
 * run waits for) is derived from this and the graph by {@link BackfillChunks}.
 */
export interface BackfillLayout {
  /** Target partitions per asset, in topological order, none empty (`UNPARTITIONED` for an unpartitioned asset). */
  readonly targets: ReadonlyMap<string, PartitionSubset>;
  /**
   * The assets that share the partitions definition of the selection's
   * roots: their partitions are sliced directly, `maxPartitionsPerRun` at a
   * time, oldest first. Every other asset's partition goes into the first
   * chunk that holds everything it reads from the backfill.
   */
  readonly axis: readonly string[];
  readonly maxPartitionsPerRun: number;
}

/** The stored form (backfills.partitions): subsets as ranges, with the definition each was taken from. */
export interface SerializedBackfillLayout {
  readonly format: 1;
  /** The definitions snapshot version it was planned with: a reader with an older graph must not judge it. */
  readonly version: number;
  readonly assets: readonly { readonly key: string; readonly partitionsHash: string | null; readonly subset: string }[];
  readonly axis: readonly string[];
}

export function serializeLayout(layout: BackfillLayout, graph: AssetGraph, version: number): SerializedBackfillLayout {
  return {
    format: 1,
    version,
    assets: [...layout.targets].map(([key, subset]) => ({ key, partitionsHash: hashOf(graph, key), subset: subset.serialize() })),
    axis: [...layout.axis],
  };
}

/**
 * The stored layout against the current graph. Partition indices mean
 * something only in the definition they were taken from, so an asset that
 * left the definitions, or whose partitions definition changed since the
 * launch, is a PartitionError BACKFILL_DEFINITIONS_CHANGED: the rest of such
 * a backfill cannot be carried out as requested.
 */
export function parseLayout(value: unknown, maxPartitionsPerRun: number, graph: AssetGraph): BackfillLayout {
  const stored = value as Partial<SerializedBackfillLayout> | null;
  if (!stored || stored.format !== 1 || !Array.isArray(stored.assets) || !Array.isArray(stored.axis)) {
    throw new InputError(`unreadable backfill partitions: ${JSON.stringify(value)?.slice(0, 200)}`, { code: "BACKFILL_CORRUPT" });
  }
  const targets = new Map<string, PartitionSubset>();
  for (const a of stored.assets) {
    const asset = graph.get(a.key);
    if (!asset) {
      throw new PartitionError(`asset "${a.key}" is no longer in the definitions; the rest of the backfill cannot run as launched`, {
        code: "BACKFILL_DEFINITIONS_CHANGED",
        location: { assetKey: a.key },
      });
    }
    if (hashOf(graph, a.key) !== a.partitionsHash) {
      throw new PartitionError(
        `the partitions definition of "${a.key}" changed since the backfill was launched; launch a new backfill over the new partitions`,
        { code: "BACKFILL_DEFINITIONS_CHANGED", location: { assetKey: a.key } },
      );
    }
    targets.set(a.key, PartitionSubset.parse(a.subset));
  }
  return { targets, axis: [...stored.axis], maxPartitionsPerRun };
}

function hashOf(graph: AssetGraph, key: string): string | null {
  const spec = graph.require(key).partitions;
  return spec === null ? null : specHash(spec);
}

/** The definitions version a stored layout was planned with (0 when unknown). */
export function layoutVersion(value: unknown): number {
  const version = (value as Partial<SerializedBackfillLayout> | null)?.version;
  return typeof version === "number" ? version : 0;
}

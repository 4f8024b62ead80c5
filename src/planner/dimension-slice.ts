import { PartitionError } from "../errors/index.js";
import { suggestKey, type SnapshotAsset } from "../graph/index.js";
import { DIMENSION_SEPARATOR, partitionSpace, type PartitionContext, type PartitionSpace } from "../partitions/index.js";

/**
 * The keys of one dimension of a multi-partitioned asset: a list (`keys`) or
 * an inclusive range (`from`/`to`; an open end is the dimension's first /
 * latest existing key). A dimension left out of a slice means all its keys.
 */
export interface DimensionSlice {
  readonly name: string;
  readonly keys?: readonly string[] | undefined;
  readonly from?: string | undefined;
  readonly to?: string | undefined;
}

/** Above this many partitions a slice is refused: it is a typo more often than a wish (narrow a dimension). */
export const MAX_SLICE_PARTITIONS = 1_000_000;

/**
 * The partition keys of a multi-partitioned asset that a per-dimension
 * selection picks: the cross product of each dimension's chosen keys (all
 * existing keys of a dimension the slice leaves out), in the asset's key
 * order. PartitionError naming the asset when it is not multi-partitioned,
 * for an unknown or repeated dimension (with the nearest name), a key that is
 * not one of the dimension's, or a slice that gives both keys and a range.
 */
export function dimensionSliceKeys(
  asset: SnapshotAsset,
  slices: readonly DimensionSlice[],
  ctx: PartitionContext | undefined,
  now: Date,
): string[] {
  const spec = asset.partitions;
  if (spec === null || spec.kind !== "multi") {
    const what = spec === null ? "unpartitioned" : `partitioned by one dimension only (${partitionSpace(spec, ctx).describe()})`;
    throw new PartitionError(
      `asset "${asset.key}" is ${what}: a selection per dimension applies to multi-partitioned assets; select its partitions by key or range`,
      {
        code: "PARTITION_DIMENSION_INVALID",
        location: { assetKey: asset.key },
      },
    );
  }
  const names = spec.dimensions.map((d) => d.name);
  const byName = new Map<string, DimensionSlice>();
  for (const slice of slices) {
    if (!names.includes(slice.name)) {
      const near = suggestKey(slice.name, names);
      throw new PartitionError(
        `asset "${asset.key}" has no dimension "${slice.name}"${near ? ` (did you mean "${near}"?)` : ""}; its dimensions are ${names.map((n) => `"${n}"`).join(", ")}`,
        { code: "PARTITION_DIMENSION_UNKNOWN", location: { assetKey: asset.key, field: slice.name } },
      );
    }
    if (byName.has(slice.name)) {
      throw new PartitionError(`asset "${asset.key}": dimension "${slice.name}" is selected twice; give it once, as a list or a range`, {
        code: "PARTITION_DIMENSION_INVALID",
        location: { assetKey: asset.key, field: slice.name },
      });
    }
    byName.set(slice.name, slice);
  }
  const perDimension = spec.dimensions.map((d) => {
    const space = partitionSpace(d.partitions, ctx);
    const slice = byName.get(d.name);
    try {
      return slice ? chosenKeys(space, slice, now) : [...space.keys(space.all(now))];
    } catch (err) {
      if (!(err instanceof PartitionError)) throw err;
      throw new PartitionError(`asset "${asset.key}", dimension "${d.name}": ${err.message}`, {
        code: err.code,
        cause: err,
        location: { ...err.location, assetKey: asset.key, field: d.name },
      });
    }
  });
  const total = perDimension.reduce((n, keys) => n * keys.length, 1);
  if (total > MAX_SLICE_PARTITIONS) {
    throw new PartitionError(
      `asset "${asset.key}": the selection per dimension names ${total} partitions (more than ${MAX_SLICE_PARTITIONS}); narrow a dimension`,
      {
        code: "PARTITION_DIMENSION_INVALID",
        location: { assetKey: asset.key },
      },
    );
  }
  let product: string[][] = [[]];
  for (const keys of perDimension) product = product.flatMap((prefix) => keys.map((k) => [...prefix, k]));
  return product.map((parts) => parts.join(DIMENSION_SEPARATOR));
}

function chosenKeys(space: PartitionSpace, slice: DimensionSlice, now: Date): string[] {
  const ranged = slice.from !== undefined || slice.to !== undefined;
  if (slice.keys !== undefined && ranged) {
    throw new PartitionError("give a list of keys or a range (from/to), not both", { code: "PARTITION_DIMENSION_INVALID" });
  }
  if (slice.keys !== undefined) {
    if (slice.keys.length === 0)
      throw new PartitionError("the list of keys is empty; leave the dimension out to select all its keys", {
        code: "PARTITION_DIMENSION_INVALID",
      });
    for (const k of slice.keys) space.indexOf(k);
    return [...new Set(slice.keys)];
  }
  if (!ranged) throw new PartitionError("give a list of keys or a range (from/to)", { code: "PARTITION_DIMENSION_INVALID" });
  const count = space.count(now);
  if (count === 0) throw new PartitionError(`no key of ${space.describe()} exists yet`, { code: "PARTITION_NOT_EXISTING" });
  return [...space.keys(space.range(slice.from ?? space.keyAt(0), slice.to ?? space.keyAt(count - 1)))];
}

import { PartitionError } from "../../errors/index.js";
import type { PartitionSpace } from "../../partitions/index.js";
import type { DimensionSlice, PartitionSelection } from "../../planner/index.js";

/** Which partitions of an asset a request acts on: one key, an inclusive range, or a slice per dimension. */
export interface PartitionRequest {
  /** One partition key… */
  readonly partition?: string | undefined;
  /** …or an inclusive range (either end may be omitted: the first / latest existing partition)… */
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  /** …or keys or a range per dimension of a multi-partitioned asset (left out: all its keys), as their cross product. */
  readonly dimensions?: readonly DimensionSlice[] | undefined;
}

/**
 * A range of an asset's partitions whose open ends are its first and its latest existing partition; an asset with no
 * partition yet is a PartitionError (PARTITION_NOT_EXISTING) naming it.
 */
export function openRange(
  assetKey: string,
  space: PartitionSpace,
  range: { readonly from?: string | undefined; readonly to?: string | undefined },
  now: Date,
): PartitionSelection {
  const count = space.count(now);
  if (count === 0) {
    throw new PartitionError(`asset "${assetKey}" has no partitions yet (${space.describe()})`, {
      code: "PARTITION_NOT_EXISTING",
      location: { assetKey },
    });
  }
  return { kind: "range", from: range.from ?? space.keyAt(0), to: range.to ?? space.keyAt(count - 1) };
}

import type { DimensionSlice } from "../../planner/index.js";

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

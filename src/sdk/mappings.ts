import * as partitions from "../partitions/index.js";
import type { ManyMapping, SingleMapping } from "./asset.js";

// Typed views of the partition mappings: the type says whether the downstream
// function receives one upstream value or an array of them.

/** The same partition key upstream and downstream. */
export const identity = (): SingleMapping => partitions.identity() as SingleMapping;

/**
 * The upstream windows overlapping the downstream window shifted by offsets in
 * downstream units. @example timeWindow({ startOffset: -6 }) // the last seven days
 */
export const timeWindow = (options: partitions.TimeWindowMappingOptions = {}): ManyMapping => partitions.timeWindow(options) as ManyMapping;

/** Every upstream partition. */
export const allPartitions = (): ManyMapping => partitions.allPartitions() as ManyMapping;

/** The latest existing upstream partition. */
export const lastPartition = (): SingleMapping => partitions.lastPartition() as SingleMapping;

/** Upstream key → the downstream keys it feeds. */
export const staticMapping = (map: Record<string, string | string[]>): ManyMapping => partitions.staticMapping(map) as ManyMapping;

/** Per-dimension mapping between multi-partitioned assets. */
export const multiMapping = (dimensions: Parameters<typeof partitions.multiMapping>[0]): ManyMapping =>
  partitions.multiMapping(dimensions) as ManyMapping;

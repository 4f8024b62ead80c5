import * as partitions from "../partitions/index.js";
import type { ManyMapping, SingleMapping } from "./asset.js";

// Typed views of the partition mappings: the type says whether the downstream
// function receives one upstream value or an array of them.

/**
 * The same partition key upstream and downstream: the function receives one value.
 * @example
 * // given orders: AssetDefinition<{ rows: number }>
 * dep(orders, identity()) // { rows } | null
 */
export const identity = (): SingleMapping => partitions.identity() as SingleMapping;

/**
 * The upstream windows overlapping the downstream window shifted by offsets in
 * downstream units: the function receives an array, in partition order.
 * @example
 * // given orders: AssetDefinition<{ rows: number }>
 * dep(orders, timeWindow({ startOffset: -6 })) // the last seven days: ({ rows } | null)[]
 */
export const timeWindow = (options: partitions.TimeWindowMappingOptions = {}): ManyMapping => partitions.timeWindow(options) as ManyMapping;

/**
 * Every upstream partition, as an array in partition order.
 * @example
 * // given profiles: AssetDefinition<{ customer: string }>
 * dep(profiles, allPartitions()) // ({ customer } | null)[]
 */
export const allPartitions = (): ManyMapping => partitions.allPartitions() as ManyMapping;

/**
 * The latest existing upstream partition: one value.
 * @example
 * // given rates: AssetDefinition<{ eurUsd: number }>
 * dep(rates, lastPartition()) // { eurUsd } | null
 */
export const lastPartition = (): SingleMapping => partitions.lastPartition() as SingleMapping;

/**
 * Upstream key → the downstream keys it feeds; the function receives an array.
 * @example
 * // given byCountry: AssetDefinition<{ revenue: number }>
 * dep(byCountry, staticMapping({ de: "eu", fr: "eu", us: ["us", "global"] }))
 */
export const staticMapping = (map: Record<string, string | string[]>): ManyMapping => partitions.staticMapping(map) as ManyMapping;

/**
 * Per-dimension mapping between multi-partitioned assets; the function receives an array.
 * @example
 * // given sales: AssetDefinition<{ revenue: number }>
 * dep(sales, multiMapping({ date: { upstreamDimension: "date", mapping: timeWindow({ startOffset: -1 }) } }))
 */
export const multiMapping = (dimensions: Parameters<typeof partitions.multiMapping>[0]): ManyMapping =>
  partitions.multiMapping(dimensions) as ManyMapping;

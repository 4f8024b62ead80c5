/**
 * Partitions: time windows, keys, mappings and partition subsets as ranges.
 * Pure: no I/O (dynamic keys come in through a context). The only entry point
 * of this module for the rest of Tributary.
 */
export type {
  TimeCadence,
  TimeWindowPartitionsSpec,
  StaticPartitionsSpec,
  DynamicPartitionsSpec,
  SingleDimensionPartitionsSpec,
  MultiPartitionsSpec,
  PartitionsSpec,
  PartitionMappingSpec,
  TimeWindow,
} from "./types.js";

export { hourly, daily, weekly, monthly, timeWindows } from "./time-partitions.js";
export type { TimePartitionsOptions, TimeWindowsOptions } from "./time-partitions.js";
export { staticPartitions } from "./static-partitions.js";
export { dynamicPartitions } from "./dynamic-partitions.js";
export { multiPartitions, multiPartitionKey } from "./multi-partitions.js";

export { identity, timeWindow, allPartitions, lastPartition, staticMapping, multiMapping } from "./partition-mappings.js";
export type { TimeWindowMappingOptions, MultiMappingDimension } from "./partition-mappings.js";

export { PartitionSubset, UNPARTITIONED } from "./partition-subset.js";
export { partitionSpace, loadPartitionSpace, loadPartitionContext, dynamicNames } from "./partition-space.js";
export type { PartitionSpace, PartitionContext } from "./partition-space.js";

export { upstreamPartitions } from "./upstream-partitions.js";
export type { UpstreamPartitions, MissingPartitions } from "./upstream-partitions.js";
export { downstreamPartitions } from "./downstream-partitions.js";
export { defaultMapping } from "./default-mapping.js";
export type { DefaultMapping } from "./default-mapping.js";
export { validateMapping } from "./validate-mapping.js";

export { describePartitions, describeMapping } from "./describe-partitions.js";
export { partitionsInWords, mappingInWords } from "./partitions-in-words.js";
export { cronInWords } from "./cron-in-words.js";
export { specsEqual, specHash } from "./specs-equal.js";
export { partitionKeyWindowIso } from "./partition-key-window-iso.js";
export { partitionInfo } from "./partition-info.js";
export { cronSchedule } from "./cron-schedule.js";
export type { CronSchedule } from "./cron-schedule.js";
export type { PartitionInfo } from "./partition-info.js";
export { parsePartitionsSpec, parsePartitionMappingSpec, partitionKeyProblem, DIMENSION_SEPARATOR } from "./spec-schema.js";

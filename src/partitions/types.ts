/**
 * Serialisable descriptions of partitions definitions and partition mappings.
 * These plain, frozen JSON objects are what the SDK hands out, what the loader
 * serialises into a snapshot, and what every other module reads back.
 */

export type TimeCadence = "hourly" | "daily" | "weekly" | "monthly" | "cron";

export interface TimeWindowPartitionsSpec {
  readonly kind: "time";
  readonly cadence: TimeCadence;
  /** Cron expression whose ticks are the window boundaries, in `timezone`. */
  readonly cron: string;
  /** First window start as given by the user (`2025-01-01`, `2025-01-01T06:00`), wall clock in `timezone`. */
  readonly start: string;
  /** Exclusive end (no window starts at or after it), wall clock in `timezone`. */
  readonly end?: string;
  /** IANA zone name; default "UTC". */
  readonly timezone: string;
  /** 0 = a partition exists once its window closed; 1 = the open window too; n = n windows ahead. */
  readonly endOffset: number;
  /** Luxon format of keys, e.g. "yyyy-MM-dd" or "yyyy-MM-dd-HH:mm". */
  readonly format: string;
}

export interface StaticPartitionsSpec {
  readonly kind: "static";
  readonly keys: readonly string[];
}

export interface DynamicPartitionsSpec {
  readonly kind: "dynamic";
  /** Name of the key set; keys live in the database (table dynamic_partitions). */
  readonly name: string;
}

export type SingleDimensionPartitionsSpec = TimeWindowPartitionsSpec | StaticPartitionsSpec | DynamicPartitionsSpec;

export interface MultiPartitionsSpec {
  readonly kind: "multi";
  /** Any number (≥ 2) of dimensions, in key order: keys read `2025-03-15|eu|web`. */
  readonly dimensions: readonly { readonly name: string; readonly partitions: SingleDimensionPartitionsSpec }[];
}

export type PartitionsSpec = SingleDimensionPartitionsSpec | MultiPartitionsSpec;

export type PartitionMappingSpec =
  | { readonly kind: "identity" }
  /**
   * Offsets in downstream units: downstream window [start + startOffset, end + endOffset) read from upstream,
   * clipped to the upstream's definition unless `allowPartial` is false (only stored when false).
   */
  | { readonly kind: "timeWindow"; readonly startOffset: number; readonly endOffset: number; readonly allowPartial?: false | undefined }
  | { readonly kind: "all" }
  | { readonly kind: "last" }
  /** upstream key → downstream keys it feeds. */
  | { readonly kind: "static"; readonly map: Readonly<Record<string, readonly string[]>> }
  /** Per downstream dimension: which upstream dimension it reads and through which mapping. */
  | {
      readonly kind: "multi";
      readonly dimensions: Readonly<Record<string, { readonly upstreamDimension: string; readonly mapping: PartitionMappingSpec }>>;
    };

/** A time window: [start, end) as instants. */
export interface TimeWindow {
  readonly start: Date;
  readonly end: Date;
}

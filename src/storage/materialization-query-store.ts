// Read-only queries behind GraphQL's read entry points: an asset's
// materialisation history and filtered, cursor-paged run listings.
import type { RunOrigin, RunStatus } from "./database.js";
import type { EventRecord } from "./event-store.js";
import type { RunSummary } from "./run-store.js";

/** The most items one page of materialisations or runs returns. */
export const MAX_READ_PAGE = 1000;

/** The event kinds that count as a partition being written or seen: what `Asset.materializations` lists. */
export const MATERIALIZATION_KINDS = ["materialization", "external", "observation"] as const;
export type MaterializationKind = (typeof MATERIALIZATION_KINDS)[number];

/** One materialisation (or external report, or observation) of an asset partition; partitionKey '' when unpartitioned. */
export interface MaterializationView extends Omit<EventRecord, "kind"> {
  readonly kind: MaterializationKind;
}

/** One page of an asset's materialisations to read. */
export interface MaterializationQuery {
  readonly assetKey: string;
  /** Only this partition; undefined for every partition of the asset. */
  readonly partitionKey?: string | undefined;
  /** 1 to {@link MAX_READ_PAGE}. */
  readonly first: number;
  /** `endCursor` of the previous page. */
  readonly after?: string | undefined;
}

export interface ReadPage<T> {
  readonly nodes: readonly T[];
  readonly endCursor: string | null;
  readonly hasNextPage: boolean;
}

/** Which runs to list; absent fields do not filter. */
export interface RunFilter {
  readonly status?: RunStatus | undefined;
  /** Runs with a step of this asset. */
  readonly assetKey?: string | undefined;
  readonly backfillId?: string | undefined;
  readonly origin?: RunOrigin | undefined;
  /** Created at or after this instant. */
  readonly createdAfter?: Date | undefined;
  /** Created before this instant. */
  readonly createdBefore?: Date | undefined;
}

export interface RunPageQuery extends RunFilter {
  /** 1 to {@link MAX_READ_PAGE}. */
  readonly first: number;
  /** `endCursor` of the previous page. */
  readonly after?: string | undefined;
}

/**
 * Read-only listings with opaque cursors, newest first. A malformed cursor is
 * an InputError (INPUT_INVALID) naming the `after` field.
 */
export interface MaterializationQueryStore {
  /**
   * Pages of many assets' (or partitions') materialisations in one statement,
   * in the order of `queries`: GraphQL asks for all assets of a level at once.
   */
  materializations(queries: readonly MaterializationQuery[]): Promise<ReadPage<MaterializationView>[]>;
  /** Runs matching the filter, newest first (by creation time, then id). */
  runPage(query: RunPageQuery): Promise<ReadPage<RunSummary>>;
  /** What each run materialises, per asset (by key), in one statement for many runs: a run list needs no step lists. */
  runAssets(runIds: readonly string[]): Promise<ReadonlyMap<string, readonly RunAssetSummary[]>>;
}

/** One asset's share of a run. */
export interface RunAssetSummary {
  readonly assetKey: string;
  /** How many steps (partitions, and mapped items) of the asset the run has. */
  readonly steps: number;
  /** The smallest and largest partition key in text order ("" for an unpartitioned asset). */
  readonly minPartition: string;
  readonly maxPartition: string;
}

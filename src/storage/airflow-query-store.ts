import type { RunOrigin, RunStatus } from "./database.js";

/** The most rows one page of a REST listing returns. */
export const MAX_AIRFLOW_PAGE = 1000;

export interface AirflowPage {
  readonly limit: number;
  readonly offset: number;
}

/** A run as a DAG run: the run and the span of partition keys its steps of the DAG's assets cover. */
export interface JobRunRow {
  readonly id: string;
  readonly status: RunStatus;
  readonly origin: RunOrigin;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly endedAt: Date | null;
  /** Smallest and largest partition key (text order) of the run's steps of those assets ('' when unpartitioned). */
  readonly firstPartitionKey: string;
  readonly lastPartitionKey: string;
}

/** One stored output of a step (the step's XCom "return_value"). */
export interface StepOutputRow {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly sizeBytes: number;
  readonly createdAt: Date;
}

/** An inclusive range of instants; either end may be left out. */
export interface InstantRange {
  readonly gte?: Date | undefined;
  readonly lte?: Date | undefined;
}

/**
 * Filters of a DAG's run listing (Airflow's list parameters, mapped by the
 * REST layer); every given one must hold. The logical date is filtered either
 * through the run's first partition key of the DAG (time partitions: the keys
 * whose windows start in the range) or through the creation time (no time
 * partitions), as the REST API derives it.
 */
export interface JobRunFilter {
  readonly statuses?: readonly RunStatus[] | undefined;
  /** The first partition key (text order) of the run's steps of the DAG lies in this inclusive key range… */
  readonly firstKeyRange?: { readonly gte?: string | undefined; readonly lte?: string | undefined } | undefined;
  /** …or is one of these keys. */
  readonly firstKeyIn?: readonly string[] | undefined;
  readonly createdAt?: InstantRange | undefined;
  readonly startedAt?: InstantRange | undefined;
  readonly endedAt?: InstantRange | undefined;
  readonly updatedAt?: InstantRange | undefined;
}

/**
 * The order of a DAG's run listing: by creation, by the first partition key
 * (its text order is time order), or by the first key's position in `keys`
 * (listed in time order; a key not listed sorts last). Ties: newer first.
 */
export type JobRunOrder = { readonly descending: boolean } & (
  { readonly by: "createdAt" } | { readonly by: "firstKey" } | { readonly by: "keyRank"; readonly keys: readonly string[] }
);

/** What a task instance shows beyond the RunStore's step record. */
export interface StepAttributesRow {
  readonly stepId: number;
  readonly queue: string | null;
  readonly executor: string;
  readonly poolSlots: number;
  readonly updatedAt: Date;
}

/** The latest run with a step of one (asset, partition). */
export interface PartitionRunRow {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string;
}

/**
 * Read-only queries the Airflow-compatible REST API needs beyond RunStore and
 * PoolStore: runs of a set of assets (a DAG), and which steps stored an
 * output. Each call is one or two bounded statements.
 */
export interface AirflowQueryStore {
  /** Runs that have a step of any of these assets, in `order` (default: newest first), and how many there are in all. */
  listRunsOfAssets(
    assetKeys: readonly string[],
    page: AirflowPage,
    filter?: JobRunFilter,
    order?: JobRunOrder,
  ): Promise<{ rows: JobRunRow[]; total: number }>;
  /** The outputs these steps stored (at most one per successful try). */
  stepOutputs(stepIds: readonly number[]): Promise<StepOutputRow[]>;
  /** Queue, executor, pool slots and last change of these steps. */
  stepAttributes(stepIds: readonly number[]): Promise<StepAttributesRow[]>;
  /** For each (asset, partition) that ever ran: the run of its newest step. */
  latestRunsOfPartitions(partitions: readonly { assetKey: string; partitionKey: string }[]): Promise<PartitionRunRow[]>;
}

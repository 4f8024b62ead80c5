import type { Generated } from "kysely";
import type { GeneratedInt8, GeneratedTimestamp, Int8, Json, NullableInt8, NullableTimestamp, PartitionState } from "./database.js";

// The Kysely view of the partition status tables: each partition's latest recorded status, the change rows that
// version it for readers that cache, what pruning deleted of those, and the API's copies of folded statuses.

/** One asset's partition statuses changed (one row per asset per writing statement, appended by triggers). */
export interface PartitionStatusChangesTable {
  id: GeneratedInt8;
  asset_key: string;
  /** The writing transaction. */
  tx_id: Generated<string>;
  /** The partitions the statement wrote; null when more than 1 000. */
  partition_keys: string[] | null;
  created_at: GeneratedTimestamp;
}

export interface PartitionStatusChangesPrunedTable {
  singleton: Generated<boolean>;
  /** The newest transaction id among the change rows pruning deleted. */
  through_tx: GeneratedInt8;
}

export interface PartitionStatusChangesPrunedAssetsTable {
  asset_key: string;
  /** The newest transaction id among the asset's change rows pruning deleted. */
  through_tx: Int8;
}

/** An API server's folded partition statuses of a large asset, for servers that have not read it yet. */
export interface PartitionStatusSummariesTable {
  asset_key: string;
  /** A digest of the code version and partition space the folded indices belong to. */
  definition: string;
  /** The cluster whose transaction ids the snapshot names. */
  system_identifier: string;
  snapshot: string;
  upstream_asset_keys: string[];
  /** Per recorded status, a serialized subset of partition-space indices. */
  subsets: Json<Record<string, string>>;
  updated_at: GeneratedTimestamp;
}

export interface PartitionStatusTable {
  asset_key: string;
  partition_key: string;
  status: PartitionState;
  last_materialization_event_id: NullableInt8;
  last_run_id: string | null;
  last_step_id: NullableInt8;
  data_version: string | null;
  code_version: string | null;
  materialized_at: NullableTimestamp;
  updated_at: GeneratedTimestamp;
  /** A blocking check that failed on the latest materialisation. */
  failed_check: string | null;
}

export interface PartitionStatusTables {
  partition_status: PartitionStatusTable;
  partition_status_changes: PartitionStatusChangesTable;
  partition_status_changes_pruned: PartitionStatusChangesPrunedTable;
  partition_status_changes_pruned_assets: PartitionStatusChangesPrunedAssetsTable;
  partition_status_summaries: PartitionStatusSummariesTable;
}

import type { ColumnType, Generated } from "kysely";
import type { FailureClass } from "../errors/index.js";
import type { AccessTables } from "./access-tables.js";
import type { PartitionStatusTables } from "./partition-status-tables.js";
import type { JsonText, JsonValue } from "./json.js";

type JsonNonNull = Exclude<JsonValue, null>;

// Column helpers. Select types are what both dialects return (see
// type-parsers.ts); JSON is written as JsonText (see json.ts).
/** int8 columns: numbers (a bigint only beyond ±2^53, which ids never reach). */
export type Int8 = ColumnType<number, number | bigint, number | bigint>;
export type GeneratedInt8 = ColumnType<number, number | bigint | undefined, number | bigint>;
export type NullableInt8 = ColumnType<number | null, number | bigint | null | undefined, number | bigint | null>;
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** JSON in a NOT NULL column (holding JSON null there is avoided: it reads back as SQL NULL does). */
export type Json<T extends JsonValue = JsonNonNull> = ColumnType<T, JsonText, JsonText>;
export type GeneratedJson<T extends JsonValue = JsonNonNull> = ColumnType<T, JsonText | undefined, JsonText>;
export type NullableJson<T extends JsonValue = JsonValue> = ColumnType<T | null, JsonText | null | undefined, JsonText | null>;

export type StepState =
  | "pending"
  | "scheduled"
  | "queued"
  | "running"
  | "success"
  | "failed"
  | "skipped"
  | "up_for_retry"
  | "up_for_reschedule"
  | "deferred"
  | "upstream_failed"
  | "removed";
export type TriggerRule =
  | "all_success"
  | "all_failed"
  | "all_done"
  | "all_skipped"
  | "one_success"
  | "one_failed"
  | "one_done"
  | "none_failed"
  | "none_failed_min_one_success"
  | "none_skipped"
  | "always";
export type RunStatus = "queued" | "running" | "success" | "failed" | "canceled";
export type RunOrigin = "manual" | "schedule" | "automation" | "backfill" | "rerun";
export type BackfillStatus = "requested" | "running" | "completed" | "failed" | "canceling" | "canceled";
/**
 * `timed_out`: a source partition whose observation gave up before it appeared. `erased`: its data was removed by an
 * erasure request; it waits to be re-materialised from the cleaned source.
 */
export type PartitionState = "missing" | "materializing" | "materialized" | "failed" | "stale" | "timed_out" | "erased";
export type EventKind = "materialization" | "observation" | "external" | "check_result" | "planned" | "failure" | "wipe";
export type TriggerStatus = "waiting" | "fired" | "failed" | "timed_out" | "canceled";
export type EvaluationDecision = "requested" | "declined" | "skipped";
export type ComponentKind = "reconciler" | "triggerer" | "worker" | "api";
export type AlertStatus = "pending" | "sent" | "failed";
export type FileLoadStatus = "ok" | "error";

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  checksum: string;
  applied_at: GeneratedTimestamp;
  duration_ms: Generated<number>;
}

export interface DefinitionSnapshotsTable {
  version: number;
  content_hash: string;
  graph: Json;
  created_at: GeneratedTimestamp;
}

export interface DefinitionFilesTable {
  path: string;
  source_hash: string;
  status: FileLoadStatus;
  error: NullableJson;
  warnings: GeneratedJson<string[]>;
  problems: GeneratedJson<JsonValue[]>;
  assets: GeneratedJson<JsonValue[]>;
  checks: GeneratedJson<JsonValue[]>;
  load_ms: Generated<number>;
  loaded_at: GeneratedTimestamp;
  last_success_at: NullableTimestamp;
}

export interface AssetsTable {
  key: string;
  file: string;
  spec: Json;
  group_name: string | null;
  owner: string | null;
  is_source: Generated<boolean>;
  partitions_hash: string | null;
  first_seen_version: number;
  last_seen_version: number;
  removed_at: NullableTimestamp;
  paused: Generated<boolean>;
  paused_at: NullableTimestamp;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
}

export interface DynamicPartitionsTable {
  name: string;
  partition_key: string;
  position: GeneratedInt8;
  added_at: GeneratedTimestamp;
}

export interface BackfillsTable {
  id: Generated<string>;
  status: Generated<BackfillStatus>;
  selection: Json;
  partitions: Json;
  max_concurrent_runs: Generated<number>;
  max_partitions_per_run: Generated<number>;
  priority: Generated<number>;
  requested_count: GeneratedInt8;
  done_count: GeneratedInt8;
  failed_count: GeneratedInt8;
  in_progress_count: GeneratedInt8;
  cursor: NullableJson;
  tags: GeneratedJson<{ [key: string]: JsonValue }>;
  error: NullableJson;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
  canceled_at: NullableTimestamp;
  completed_at: NullableTimestamp;
}

export interface RunsTable {
  id: Generated<string>;
  status: Generated<RunStatus>;
  origin: RunOrigin;
  backfill_id: string | null;
  parent_run_id: string | null;
  idempotency_key: string | null;
  snapshot_version: number;
  plan: Json;
  job_name: string | null;
  logical_date: NullableTimestamp;
  data_interval_start: NullableTimestamp;
  data_interval_end: NullableTimestamp;
  priority: Generated<number>;
  tags: GeneratedJson<{ [key: string]: JsonValue }>;
  max_active_steps: number | null;
  cancel_requested_at: NullableTimestamp;
  created_at: GeneratedTimestamp;
  started_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  updated_at: GeneratedTimestamp;
  error: NullableJson;
  steps_total: Generated<number>;
  steps_done: Generated<number>;
  steps_failed: Generated<number>;
  steps_active: Generated<number>;
  max_active_runs: number | null;
  /** Bumped when the run's steps change after creation (an expansion, a clear inside the run). */
  plan_version: Generated<number>;
}

export interface StepsTable {
  id: GeneratedInt8;
  run_id: string;
  asset_key: string;
  partition_key: Generated<string>;
  map_index: Generated<number>;
  state: Generated<StepState>;
  trigger_rule: Generated<TriggerRule>;
  try_number: Generated<number>;
  max_tries: Generated<number>;
  priority: Generated<number>;
  pool: Generated<string>;
  pool_slots: Generated<number>;
  executor: Generated<string>;
  queue: string | null;
  timeout_ms: NullableInt8;
  retry_policy: NullableJson;
  next_retry_at: NullableTimestamp;
  scheduled_at: NullableTimestamp;
  queued_at: NullableTimestamp;
  started_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  heartbeat_at: NullableTimestamp;
  worker_id: string | null;
  trigger_id: NullableInt8;
  skip_reason: string | null;
  error: NullableJson;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
  upstream_total: Generated<number>;
  tries_before: Generated<number>;
  max_concurrency: number | null;
  depth: Generated<number>;
  wait_started_at: NullableTimestamp;
  /** The check this step runs; null for the asset's own step. */
  check_name: string | null;
  /** A mapped step's item and label (map_index >= 0). */
  map_item: NullableJson;
  map_label: string | null;
  /** An expanded step: how many mapped steps it expanded into (it gathers them); null when not expanded. */
  map_count: number | null;
  /** An expanded step: its mapped steps that have not ended yet. */
  map_open: number | null;
  /** An expanded step's lineage and code version at expansion, for the gathered materialisation. */
  map_inputs: NullableJson;
  /** Infrastructure failures re-run since the step was last cleared (they count in tries_before too). */
  infrastructure_failures: Generated<number>;
}

export interface StepDepsTable {
  step_id: Int8;
  upstream_step_id: Int8;
}

export interface StepTriesTable {
  id: GeneratedInt8;
  step_id: Int8;
  run_id: string;
  try_number: number;
  state: StepState;
  executor: string | null;
  worker_id: string | null;
  hostname: string | null;
  pid: number | null;
  queued_at: NullableTimestamp;
  started_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  heartbeat_at: NullableTimestamp;
  duration_ms: NullableInt8;
  error: NullableJson;
  log_ref: string | null;
  token_hash: string | null;
  created_at: GeneratedTimestamp;
  token_expires_at: NullableTimestamp;
  /** Whose fault the try's failure was; null for a try that did not fail. */
  failure_class: FailureClass | null;
}

export interface EventsTable {
  id: GeneratedInt8;
  /** xid8 as decimal text. */
  tx_id: Generated<string>;
  kind: EventKind;
  asset_key: string;
  partition_key: Generated<string>;
  run_id: string | null;
  step_id: NullableInt8;
  try_number: number | null;
  data_version: string | null;
  code_version: string | null;
  metadata: GeneratedJson<{ [key: string]: JsonValue }>;
  created_at: GeneratedTimestamp;
}

export interface EventInputsTable {
  event_id: Int8;
  upstream_asset_key: string;
  upstream_partition_key: Generated<string>;
  upstream_event_id: NullableInt8;
}

export interface OutputsTable {
  id: GeneratedInt8;
  asset_key: string;
  partition_key: Generated<string>;
  run_id: string;
  step_id: Int8;
  map_index: Generated<number>;
  try_number: number;
  size_bytes: Int8;
  inline_value: NullableJson;
  storage_ref: string | null;
  content_type: Generated<string>;
  created_at: GeneratedTimestamp;
  /** Mapped steps' outputs: their data version, gathered into the partition's. */
  data_version: string | null;
}

/** An object of a deleted output that the object store still holds (see OutputDeletionStore). */
export interface OutputObjectDeletionsTable {
  id: GeneratedInt8;
  storage_ref: string;
  reason: string;
  asset_key: string;
  partition_key: Generated<string>;
  requested_at: GeneratedTimestamp;
  attempts: Generated<number>;
  next_attempt_at: GeneratedTimestamp;
  last_error: string | null;
}

/** An archive of history past its retention, one object in the output store (see HistoryArchiveStore). */
export interface HistoryArchivesTable {
  id: Generated<string>;
  /** YYYY-MM-DD (a date column: read as text). */
  day: string;
  state: Generated<string>;
  storage_ref: string | null;
  runs: Generated<number>;
  events: Generated<number>;
  row_count: Generated<number>;
  log_count: Generated<number>;
  size_bytes: GeneratedInt8;
  archived_by: string;
  created_at: GeneratedTimestamp;
  archived_at: NullableTimestamp;
  restored_at: NullableTimestamp;
  restored_by: string | null;
}

/** A run or an event claimed by a writing archive. */
export interface HistoryArchiveClaimsTable {
  archive_id: string;
  run_id: string | null;
  event_id: NullableInt8;
}

/** A partition whose try logs an archive holds. */
export interface HistoryArchiveLogPartitionsTable {
  archive_id: string;
  asset_key: string;
  partition_key: string;
}

/** A restored day, not archived again until the hold ends. */
export interface HistoryHoldsTable {
  day: string;
  held_until: Date;
  held_by: string | null;
}

export interface ErasureRequestsTable {
  id: Generated<string>;
  state: Generated<string>;
  asset_key: string;
  partition_keys: Json;
  reason: string | null;
  requested_by: string | null;
  backfill_id: string | null;
  message: string | null;
  attempts: Generated<number>;
  lease_owner: string | null;
  lease_until: Date | null;
  next_attempt_at: GeneratedTimestamp;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
  finished_at: Date | null;
}

export interface ErasureItemsTable {
  request_id: string;
  asset_key: string;
  partition_key: string;
  event_id: NullableInt8;
  run_id: string | null;
  step_id: NullableInt8;
  erased_at: Date | null;
  replaced_by_event_id: NullableInt8;
  replaced_by_run_id: string | null;
  replaced_at: Date | null;
  skipped_reason: string | null;
}

export interface ErasureDeletionsTable {
  id: GeneratedInt8;
  request_id: string;
  kind: string;
  asset_key: string;
  partition_key: string;
  run_id: string | null;
  step_id: NullableInt8;
  try_number: number | null;
  ref: string | null;
  size_bytes: NullableInt8;
  deleted_at: Date;
}

export interface ErasureHookCallsTable {
  id: GeneratedInt8;
  request_id: string;
  asset_key: string;
  partition_keys: Json;
  attempt: number;
  started_at: Date;
  ended_at: Date | null;
  state: string;
  error: string | null;
  log: Generated<Json>;
}

export interface CheckResultsTable {
  id: GeneratedInt8;
  asset_key: string;
  check_name: string;
  partition_key: Generated<string>;
  run_id: string | null;
  step_id: NullableInt8;
  event_id: NullableInt8;
  passed: boolean;
  severity: Generated<"warn" | "error">;
  blocking: Generated<boolean>;
  metadata: GeneratedJson<{ [key: string]: JsonValue }>;
  created_at: GeneratedTimestamp;
  try_number: number | null;
  error: JsonValue | null;
}

export interface PoolsTable {
  name: string;
  slots: number;
  description: Generated<string>;
  include_deferred: Generated<boolean>;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
  occupied_slots: Generated<number>;
}

export interface TriggersTable {
  id: GeneratedInt8;
  kind: string;
  args: GeneratedJson;
  step_id: NullableInt8;
  asset_key: string | null;
  partition_key: string | null;
  status: Generated<TriggerStatus>;
  next_check_at: GeneratedTimestamp;
  timeout_at: NullableTimestamp;
  lease_owner: string | null;
  lease_expires_at: NullableTimestamp;
  attempts: Generated<number>;
  last_checked_at: NullableTimestamp;
  last_result: NullableJson;
  payload: NullableJson;
  error: NullableJson;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
  ended_at: NullableTimestamp;
  partition_window: NullableJson;
  poll_interval_ms: Generated<number>;
  soft_fail: Generated<boolean>;
  try_number: number | null;
}

export interface AutomationEvaluationsTable {
  id: GeneratedInt8;
  asset_key: string;
  partition_subset: Generated<string>;
  decision: EvaluationDecision;
  condition: string;
  reasons: GeneratedJson<JsonValue[]>;
  run_id: string | null;
  snapshot_version: number | null;
  evaluated_at: GeneratedTimestamp;
  tick: GeneratedInt8;
}

export interface AutomationStateTable {
  asset_key: string;
  state: Json;
  updated_at: GeneratedTimestamp;
}

export interface AutomationPartitionsTable {
  asset_key: string;
  partitions: string;
  materialized: Json;
  failed: Json;
  updated_at: GeneratedTimestamp;
}

export interface CursorsTable {
  name: string;
  value: Json;
  updated_at: GeneratedTimestamp;
}

export interface ComponentHeartbeatsTable {
  id: string;
  kind: ComponentKind;
  hostname: string;
  pid: number;
  started_at: GeneratedTimestamp;
  heartbeat_at: GeneratedTimestamp;
  info: GeneratedJson<{ [key: string]: JsonValue }>;
}

export interface AlertsTable {
  id: GeneratedInt8;
  cause_key: string;
  kind: string;
  asset_key: string | null;
  partition_key: string | null;
  run_id: string | null;
  owner: string | null;
  payload: GeneratedJson;
  status: Generated<AlertStatus>;
  attempts: Generated<number>;
  next_attempt_at: GeneratedTimestamp;
  last_error: NullableJson;
  sent_at: NullableTimestamp;
  created_at: GeneratedTimestamp;
  /** Sinks that accepted the alert (migration 0005). */
  sent_to: GeneratedJson<string[]>;
}

/** The Kysely view of the schema in migrations/ (docs/schema.sql is the reference). */
export interface Database extends AccessTables, PartitionStatusTables {
  schema_migrations: SchemaMigrationsTable;
  definition_snapshots: DefinitionSnapshotsTable;
  definition_files: DefinitionFilesTable;
  assets: AssetsTable;
  dynamic_partitions: DynamicPartitionsTable;
  backfills: BackfillsTable;
  runs: RunsTable;
  steps: StepsTable;
  step_deps: StepDepsTable;
  step_tries: StepTriesTable;
  events: EventsTable;
  event_inputs: EventInputsTable;
  outputs: OutputsTable;
  output_object_deletions: OutputObjectDeletionsTable;
  erasure_requests: ErasureRequestsTable;
  history_archives: HistoryArchivesTable;
  history_archive_claims: HistoryArchiveClaimsTable;
  history_archive_log_partitions: HistoryArchiveLogPartitionsTable;
  history_holds: HistoryHoldsTable;
  erasure_items: ErasureItemsTable;
  erasure_deletions: ErasureDeletionsTable;
  erasure_hook_calls: ErasureHookCallsTable;
  check_results: CheckResultsTable;
  pools: PoolsTable;
  triggers: TriggersTable;
  automation_evaluations: AutomationEvaluationsTable;
  cursors: CursorsTable;
  automation_state: AutomationStateTable;
  automation_partitions: AutomationPartitionsTable;
  component_heartbeats: ComponentHeartbeatsTable;
  alerts: AlertsTable;
}

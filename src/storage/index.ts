// Public surface of storage: database handles, migrations, schema types and repositories.
export { openDatabase } from "./open-database.js";
export { openPostgres, type PostgresHandle } from "./open-postgres.js";
export { openPglite, type PgliteHandle } from "./open-pglite.js";
export {
  checkPgliteTemplate,
  pgliteVersion,
  PACKAGE_PGLITE_TEMPLATE,
  seedFromTemplate,
  type PgliteTemplateCheck,
  type UnusablePgliteTemplate,
  type UsablePgliteTemplate,
} from "./pglite-template.js";
export { buildPgliteTemplate } from "./build-pglite-template.js";
export {
  assertChannel,
  notifyIn,
  type DatabaseConfig,
  type DatabaseHandle,
  type DatabaseKind,
  type NotificationHandler,
  type PgliteConfig,
  type PostgresConfig,
  type Unlisten,
} from "./database-handle.js";
export { PgliteDialect, type PgliteDialectConfig } from "./pglite-dialect.js";
export {
  advertiseDataDirServer,
  liveLockHolder,
  lockDataDir,
  readLockHolder,
  LOCK_FILE_NAME,
  type DataDirLock,
  type LockHolder,
} from "./data-dir-lock.js";
export { migrate, type MigrateOptions, type MigrateResult } from "./migrate.js";
export { readMigrationFiles, migrationsHash, DEFAULT_MIGRATIONS_DIR, type MigrationFile } from "./migration-files.js";
export { migrationStatus, type MigrationStatus } from "./migration-status.js";
export { dumpSchema, SCHEMA_DUMP_COMMAND } from "./schema-dump.js";
export { createDatabase, dropDatabase, withAdminClient } from "./pg-admin.js";
export { databaseNameOf, databaseUrlWithName, redactDatabaseUrl } from "./pg-url.js";
export { toJson, type JsonText, type JsonValue } from "./json.js";
export type * from "./database.js";
export type {
  AssetRecord,
  AssetSyncInput,
  DefinitionFile,
  DefinitionSnapshot,
  DefinitionStore,
  FileLoadInput,
  SaveSnapshotResult,
  SnapshotInput,
  SyncAssetsResult,
} from "./definition-store.js";
export { PgDefinitionStore } from "./pg-definition-store.js";
export { PgRunStore } from "./runs/pg-run-store.js";
export { WAKE_CHANNEL } from "./runs/channels.js";
export type { HandedOutTry } from "./runs/requeue.js";
export { removedAssetCompletion } from "./run-store.js";
export type {
  RunStore,
  NewRun,
  ClaimedStep,
  ClaimOptions,
  StepStart,
  StoredOutput,
  LineageInput,
  StepCompletion,
  CompletionSummary,
  FollowUp,
  HousekeepingOptions,
  HousekeepingResult,
  RunSummary,
  MappedStepRef,
  ClearedMappedStep,
  RunDetail,
  StepRecord,
  StepTryRecord,
  OutputRecord,
  GatheredItem,
} from "./run-store.js";
export { GraphCache, type CurrentGraph } from "./graph-cache.js";
export { LocalDirOutputStore, INLINE_OUTPUT_LIMIT_BYTES, type OutputStore } from "./output-store.js";
export {
  S3OutputStore,
  resolveS3OutputStoreSettings,
  type S3OutputStoreSettings,
  type ResolvedS3OutputStoreSettings,
} from "./s3-output-store.js";
export { PgEventStore, reportEventsIn } from "./pg-event-store.js";
export { PgObservationStore, recordObservationsIn, recordObservationTimeoutsIn } from "./pg-observation-store.js";
export type {
  ObservationStore,
  ObservationTarget,
  ObservedSource,
  FiredObservation,
  TimedOutObservation,
  EnsureObservationsResult,
} from "./observation-store.js";
export { PgBackfillStore, initialCursor } from "./pg-backfill-store.js";
export type {
  BackfillStore,
  BackfillRecord,
  BackfillSelection,
  BackfillCursor,
  BackfillTransaction,
  BackfillUpdate,
  NewBackfill,
  AssetPartitionRef,
  RunProgress,
  UnsuccessfulStep,
} from "./backfill-store.js";
export { PgAlertStore } from "./pg-alert-store.js";
export { deadlineCursorName } from "./alert-store.js";
export type { AlertStore, AlertRecord, AlertKind, AlertSettlement, DeadlineCandidate, ListAlertsOptions } from "./alert-store.js";
export type { EventStore, EventRecord, ListEventsOptions, ReportedEvent, ReportedEventKind } from "./event-store.js";
export { PgPartitionStatusStore } from "./pg-partition-status-store.js";
export { MAX_STALE_REASONS, UNFINISHED_STEP_STATES } from "./partition-status-store.js";
export type {
  AssetCodeVersion,
  PartitionStatusRecord,
  PartitionStatusStore,
  RecordedPartitionState,
  RecordedStatusCounts,
  StaleReason,
  StoredStatusSummary,
} from "./partition-status-store.js";
export { PgPauseStore } from "./pg-pause-store.js";
export type { AssetPauseState, PauseStore, PauseTarget } from "./pause-store.js";
// Pools: occupancy for the `pools` query, and setPoolSlots.
export { PgPoolStore } from "./pg-pool-store.js";
export type { PoolRecord, PoolStore, SetPoolSlots } from "./pool-store.js";
export { PgAutomationStore } from "./pg-automation-store.js";
export type {
  AutomationStore,
  AutomationLease,
  EventCursor,
  EventPage,
  PendingTransaction,
  StreamEvent,
  PartitionRef,
  StalePartition,
  PartitionStates,
  PartitionSummary,
  StoredEvaluation,
  EvaluationRow,
  ListEvaluationsOptions,
  TickCommit,
} from "./automation-store.js";
// The event stream's cursor, shared by automation and OpenLineage emission.
export { MAX_PENDING_TRANSACTIONS, STREAM_START, parseEventCursor, readEventStream } from "./event-stream.js";
export type { ReadStreamOptions, StreamEntry, StreamPage, StreamRow } from "./event-stream.js";
// OpenLineage emission: a leased cursor over step outcomes.
export { PgOpenLineageStore } from "./pg-openlineage-store.js";
export type {
  LineageCursor,
  LineageDatasetRecord,
  LineageEventRecord,
  LineageLease,
  LineageLiveStep,
  LineagePage,
  LineagePartial,
  LineageStepRecord,
  LineageStreamEntry,
  LineageTry,
  LineageTryMark,
  OpenLineageStore,
} from "./openlineage-store.js";
export { PgTriggerStore } from "./triggers/pg-trigger-store.js";
export { TRIGGER_MAX_BACKOFF_MS, triggerBackoffMs } from "./triggers/trigger-backoff.js";
export { TRIGGERS_CHANNEL } from "./runs/channels.js";
export type {
  TriggerStore,
  NewTrigger,
  CreatedTrigger,
  ClaimedTrigger,
  TriggerCheckResult,
  RecordChecksResult,
  ExpireResult,
  TriggerRecord,
  TriggerWindow,
} from "./trigger-store.js";
export { PgTriggerQueryStore } from "./pg-trigger-query-store.js";
// Lineage: run-level lineage walks and erasure impact.
export { PgLineageStore } from "./pg-lineage-store.js";
export { PgPartitionWipeStore } from "./pg-partition-wipe-store.js";
export type { PartitionWipe, PartitionWipeRequest, PartitionWipeStore, QueuedObjectDeletion } from "./partition-wipe-store.js";
export { PgOutputDeletionStore } from "./pg-output-deletion-store.js";
export type { ClaimedObjectDeletion, OutputDeletionStore } from "./output-deletion-store.js";
export { deleteQueuedObjects, type ObjectDeletionOutcome } from "./output-deletions.js";
export { PgOutputRetentionStore } from "./pg-output-retention-store.js";
export { PgHistoryArchiveStore } from "./pg-history-archive-store.js";
export { PgErasureStore } from "./pg-erasure-store.js";
export { PgLogRetentionStore } from "./pg-log-retention-store.js";
export type { EndedTry, LogRetentionStore, TryLogKey } from "./log-retention-store.js";
export { ERASURE_STATES } from "./erasure-store.js";
export type {
  ErasureBatch,
  ErasureDeletionKind,
  ErasureDeletionRecord,
  ErasureHookCallRecord,
  ErasureItemInput,
  ErasureItemRecord,
  ErasureRelease,
  ErasureReport,
  ErasureRequestRecord,
  ErasureState,
  ErasureStore,
  ErasureTryLog,
  NewErasureRequest,
} from "./erasure-store.js";
export type { OutputRetentionStore, PrunedOutputs } from "./output-retention-store.js";
export { HISTORY_TABLES } from "./history-archive-store.js";
export type {
  HistoryArchiveDay,
  HistoryArchiveObject,
  HistoryArchiveStore,
  HistoryBatch,
  HistoryRetentionPolicy,
  HistoryTable,
  RestoredHistory,
  ScrubbedLog,
  WrittenArchive,
} from "./history-archive-store.js";
export {
  decodeArchive,
  encodeArchive,
  HISTORY_ARCHIVE_CONTENT_TYPE,
  historyArchiveKey,
  readRunLogs,
  removeRunLogs,
  writeRunLogs,
  type ArchiveContent,
  type ArchivedLog,
} from "./history-archive-format.js";
export { LINEAGE_EVENT_KINDS } from "./lineage-store.js";
export type {
  LineageStore,
  LineageDirection,
  LineageEvent,
  LineageEdge,
  RunLineage,
  RunLineageQuery,
  ImpactedPartition,
  StoredOutputLocation,
  ErasureQuery,
  ErasureRows,
} from "./lineage-store.js";
export { TRIGGER_STATUSES, MAX_TRIGGER_PAGE } from "./trigger-query-store.js";
export type {
  TriggerQueryStore,
  TriggerView,
  TriggerFilter,
  ListTriggersOptions,
  TriggerPage,
  TriggerCounts,
} from "./trigger-query-store.js";
// One step try's state, read by log followers.
export { PgStepTryStateStore } from "./pg-step-try-state-store.js";
export type { StepTryState, StepTryStateStore } from "./step-try-state-store.js";
// Bounded queries behind /metrics.
export { PgMetricsQueryStore } from "./pg-metrics-query-store.js";
export type {
  MetricsQueryStore,
  MetricsSnapshot,
  DispatchLatencies,
  DispatchLatencyOptions,
  UnfinishedStepState,
  ActiveRunStatus,
  TriggerStatusCounts,
} from "./metrics-query-store.js";
// Airflow-compatible REST API reads (REST /api/v1).
export { PgAirflowQueryStore } from "./pg-airflow-query-store.js";
export { MAX_AIRFLOW_PAGE } from "./airflow-query-store.js";
export type {
  AirflowQueryStore,
  JobRunRow,
  AirflowPage,
  StepOutputRow,
  JobRunFilter,
  JobRunOrder,
  InstantRange,
  StepAttributesRow,
  PartitionRunRow,
} from "./airflow-query-store.js";
// Materialisation history and run pages.
export { PgMaterializationQueryStore } from "./pg-materialization-query-store.js";
export { MAX_READ_PAGE, MATERIALIZATION_KINDS } from "./materialization-query-store.js";
export type {
  MaterializationQueryStore,
  MaterializationView,
  MaterializationKind,
  MaterializationQuery,
  ReadPage,
  RunFilter,
  RunPageQuery,
  RunAssetSummary,
} from "./materialization-query-store.js";
// Asset check results: Asset.checks, Run.checkResults and `tributary check-run`.
export { PgCheckResultStore } from "./pg-check-result-store.js";
export type { CheckResultStore, CheckResultView, CheckResultQuery } from "./check-result-store.js";
// Execution API: bearer tokens scoped to one step try.
export { PgTryTokenStore, hashTryToken, DEFAULT_TRY_TOKEN_TTL_MS } from "./pg-try-token-store.js";
export type { TryTokenStore, TokenTry, TokenCheck, IssuedTryToken } from "./pg-try-token-store.js";
export type { RunDecisions } from "./run-decisions.js";
// Access control: identities, credentials, teams, grants, and the audit trail.
export { PgAccessStore } from "./pg-access-store.js";
export type { AccessStore, CredentialOwner, Grant, PrincipalRecord, TeamRecord, TokenRecord } from "./access-store.js";
export type { PrincipalKind, Role, AuditOutcome, AuditPrincipalKind } from "./access-tables.js";
export { recordAudit } from "./audit-trail.js";
export type { AuditEntry, AuditEvent, AuditQuery, AuditToken } from "./audit-trail.js";

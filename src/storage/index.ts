// Public surface of storage: database handles, migrations, schema types and repositories.
export { openDatabase } from "./open-database.js";
export { openPostgres, type PostgresHandle } from "./open-postgres.js";
export { openPglite, type PgliteHandle } from "./open-pglite.js";
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
export { lockDataDir, readLockHolder, LOCK_FILE_NAME, type DataDirLock, type LockHolder } from "./data-dir-lock.js";
export { migrate, type MigrateOptions, type MigrateResult } from "./migrate.js";
export { readMigrationFiles, migrationsHash, DEFAULT_MIGRATIONS_DIR, type MigrationFile } from "./migration-files.js";
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
export { PgRunStore, WAKE_CHANNEL } from "./pg-run-store.js";
export { removedAssetCompletion } from "./run-store.js";
export type {
  RunStore,
  NewRun,
  StepSettings,
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
  RunDetail,
  StepRecord,
  StepTryRecord,
  OutputRecord,
} from "./run-store.js";
export { GraphCache, type CurrentGraph } from "./graph-cache.js";
export { LocalDirOutputStore, INLINE_OUTPUT_LIMIT_BYTES, type OutputStore } from "./output-store.js";
export { PgEventStore } from "./pg-event-store.js";
export type { EventStore, EventRecord, ListEventsOptions, ReportedEvent, ReportedEventKind } from "./event-store.js";

import { sql, type Kysely } from "kysely";
import { StorageError } from "../errors/index.js";
import type { Database } from "./database.js";
import { readMigrationFiles, type MigrationFile } from "./migration-files.js";

export interface MigrateOptions {
  /** Directory of NNNN_name.sql files (default: the repository's migrations/). */
  dir?: string;
}

export interface MigrateResult {
  /** Migrations applied by this call, in order. */
  applied: Array<{ version: number; name: string; durationMs: number }>;
  /** The schema version after the call. */
  version: number;
}

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

/**
 * Applies pending forward-only migrations. Safe to call on every start and
 * from many processes at once: each step runs in its own transaction under
 * a transaction-scoped advisory lock, and re-checks what is applied after
 * taking it. Refuses to run when an applied file was edited or the database
 * knows migrations this code does not.
 *
 * @example
 * // given handle: DatabaseHandle
 * const { applied } = await migrate(handle.db);
 */
export async function migrate(db: Kysely<Database>, options: MigrateOptions = {}): Promise<MigrateResult> {
  const files = await readMigrationFiles(options.dir);
  // Most starts find the schema current: one read says so, without the lock and the table check.
  if (await isCurrent(db, files)) return { applied: [], version: files.at(-1)?.version ?? 0 };
  const appliedBefore = await db.transaction().execute(async (trx) => {
    await lockMigrations(trx);
    await sql`
      create table if not exists schema_migrations (
        version     integer primary key,
        name        text not null,
        checksum    text not null,
        applied_at  timestamptz not null default now(),
        duration_ms integer not null default 0
      )`.execute(trx);
    return readApplied(trx);
  });
  verifyApplied(files, appliedBefore);

  const applied: MigrateResult["applied"] = [];
  const done = new Set(appliedBefore.map((row) => row.version));
  for (const file of files) {
    if (done.has(file.version)) continue;
    const durationMs = await db.transaction().execute(async (trx) => {
      await lockMigrations(trx);
      // Another process may have applied it while we waited for the lock.
      const current = await readApplied(trx);
      verifyApplied(files, current);
      if (current.some((row) => row.version === file.version)) return undefined;
      const started = performance.now();
      await applyFile(trx, file);
      const elapsed = Math.round(performance.now() - started);
      await trx
        .insertInto("schema_migrations")
        .values({ version: file.version, name: file.name, checksum: file.checksum, duration_ms: elapsed })
        .execute();
      return elapsed;
    });
    if (durationMs !== undefined) applied.push({ version: file.version, name: file.name, durationMs });
  }
  return { applied, version: files.at(-1)?.version ?? 0 };
}

/**
 * Whether every file is applied, unchanged, and nothing else is. False when the table is not there yet, or on any
 * error: the full path then checks again under the lock, and reports what is wrong.
 */
async function isCurrent(db: Kysely<Database>, files: readonly MigrationFile[]): Promise<boolean> {
  const applied = await readApplied(db).catch(() => undefined);
  return (
    applied !== undefined &&
    applied.length === files.length &&
    applied.every((row, i) => row.version === files[i]!.version && row.checksum === files[i]!.checksum)
  );
}

async function lockMigrations(trx: Kysely<Database>): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended('tributary.migrate', 0))`.execute(trx);
}

async function readApplied(trx: Kysely<Database>): Promise<AppliedRow[]> {
  return trx.selectFrom("schema_migrations").select(["version", "name", "checksum"]).orderBy("version").execute();
}

async function applyFile(trx: Kysely<Database>, file: MigrationFile): Promise<void> {
  try {
    await sql.raw(file.sql).execute(trx);
  } catch (cause) {
    throw new StorageError(
      "MIGRATION_FAILED",
      `migration ${file.name}.sql failed (nothing of it was applied): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, location: { file: `migrations/${file.name}.sql` } },
    );
  }
}

function verifyApplied(files: readonly MigrationFile[], applied: readonly AppliedRow[]): void {
  const byVersion = new Map(files.map((file) => [file.version, file]));
  for (const row of applied) {
    const file = byVersion.get(row.version);
    if (!file) {
      throw new StorageError(
        "MIGRATION_UNKNOWN",
        `the database has migration ${row.name} (version ${row.version}), which this version of Tributary does not ` +
          "have: it was migrated by a newer Tributary. Upgrade, or use a database of this version.",
      );
    }
    if (file.checksum !== row.checksum) {
      throw new StorageError(
        "MIGRATION_CHECKSUM_MISMATCH",
        `migrations/${file.name}.sql was changed after it was applied to this database ` +
          `(checksum ${row.checksum.slice(0, 12)}… applied, ${file.checksum.slice(0, 12)}… on disk). ` +
          "Migrations are forward-only: restore the applied file and put the change in a new numbered migration.",
        { location: { file: `migrations/${file.name}.sql` } },
      );
    }
  }
}

import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import type { MigrationFile } from "./migration-files.js";

/** How a database's applied migrations compare with the migration files of this code. */
export interface MigrationStatus {
  /** True when every file is applied, unchanged, and nothing else is. */
  readonly current: boolean;
  /** Files not applied yet (`tributary migrate` applies them). */
  readonly pending: readonly string[];
  /** Applied migrations this code has no file for (a newer Tributary migrated the database). */
  readonly unknown: readonly string[];
  /** Applied files whose content changed since (forward-only migrations must not be edited). */
  readonly changed: readonly string[];
}

/**
 * Compares the applied migrations with `files` without changing anything (what
 * a readiness probe asks). Two statements; a database never migrated has every
 * file pending.
 *
 * @example
 * // given handle: DatabaseHandle
 * const status = await migrationStatus(handle.db, await readMigrationFiles());
 * if (!status.current) console.log(status.pending);
 */
export async function migrationStatus(db: Kysely<Database>, files: readonly MigrationFile[]): Promise<MigrationStatus> {
  const { rows } = await sql<{ present: boolean }>`select to_regclass('schema_migrations') is not null as present`.execute(db);
  const applied = rows[0]?.present
    ? await db.selectFrom("schema_migrations").select(["version", "name", "checksum"]).orderBy("version").execute()
    : [];
  const appliedByVersion = new Map(applied.map((row) => [row.version, row]));
  const known = new Set(files.map((file) => file.version));
  const pending = files.filter((file) => !appliedByVersion.has(file.version)).map((file) => file.name);
  const changed = files.filter((file) => {
    const row = appliedByVersion.get(file.version);
    return row !== undefined && row.checksum !== file.checksum;
  });
  const unknown = applied.filter((row) => !known.has(row.version)).map((row) => row.name);
  return {
    current: pending.length === 0 && unknown.length === 0 && changed.length === 0,
    pending,
    unknown,
    changed: changed.map((file) => file.name),
  };
}

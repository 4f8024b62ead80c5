import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { StorageError } from "../errors/index.js";

/** migrations/ at the repository root. */
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));

export interface MigrationFile {
  version: number;
  /** The file name without the .sql extension, e.g. `0001_initial`. */
  name: string;
  sql: string;
  /** sha256 of the SQL with line endings normalised (a CRLF checkout is not a change). */
  checksum: string;
}

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Reads `NNNN_name.sql` files in version order; other files (README.md) are ignored. */
export async function readMigrationFiles(dir: string = DEFAULT_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((name) => name.endsWith(".sql")).sort();
  const files: MigrationFile[] = [];
  for (const fileName of names) {
    const match = FILE_NAME.exec(fileName);
    if (!match) {
      throw new StorageError("MIGRATION_FILE_INVALID", `migration file ${join(dir, fileName)} must be named NNNN_lower_snake_name.sql`, {
        location: { file: join(dir, fileName) },
      });
    }
    const version = Number(match[1]);
    const previous = files.at(-1);
    if (previous?.version === version) {
      throw new StorageError("MIGRATION_FILE_INVALID", `migrations ${previous.name}.sql and ${fileName} share version ${version}`, {
        location: { file: join(dir, fileName) },
      });
    }
    const sql = (await readFile(join(dir, fileName), "utf8")).replaceAll("\r\n", "\n");
    files.push({ version, name: fileName.slice(0, -".sql".length), sql, checksum: sha256(sql) });
  }
  return files;
}

/** A short hash of all migrations (names and contents): identifies a schema, e.g. for test templates. */
export function migrationsHash(files: readonly MigrationFile[]): string {
  return sha256(files.map((f) => `${f.name}:${f.checksum}`).join("\n"));
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

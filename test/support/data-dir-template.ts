// A migrated embedded database, built once per PGlite version and migrations, that tests copy into a data directory
// before `tributary` opens it. Initialising a new PGlite takes 3–8 s on a quiet machine and far longer on a loaded one,
// and every CLI command or server started on a fresh data directory would pay it; a copy takes a fraction of a second.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate, migrationsHash, openPglite, readMigrationFiles } from "../../src/storage/index.js";
import { migratedTemplate, pgliteVersion } from "./pglite.js";

/** Where `tributary` keeps the embedded database inside its data directory. */
const EMBEDDED_DB = "db";

/**
 * The template's directory (a data directory whose `db/` holds the migrated database), building it if needed.
 * Built under a temporary name and renamed when complete: a reader never sees half of one.
 */
export async function ensureDataDirTemplate(): Promise<string> {
  const hash = migrationsHash(await readMigrationFiles()).slice(0, 12);
  const template = path.join(tmpdir(), `tributary-data-dir-${pgliteVersion()}-${hash}`);
  if (existsSync(path.join(template, EMBEDDED_DB, "PG_VERSION"))) return template;
  const building = `${template}.${randomBytes(4).toString("hex")}.partial`;
  try {
    const handle = await openPglite({ kind: "pglite", dataDir: path.join(building, EMBEDDED_DB), initialData: await migratedTemplate() });
    try {
      await migrate(handle.db);
    } finally {
      await handle.close();
    }
    await rename(building, template).catch((error: NodeJS.ErrnoException) => {
      // Another run finished the same template first.
      if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
    });
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  return template;
}

/**
 * A new temp directory holding a copy of the migrated embedded database, for `--data-dir`: the database is as a
 * first start would leave it, without the wait. `remove()` deletes it.
 */
export async function seededDataDir(prefix = "tributary-data-"): Promise<{ path: string; remove(): Promise<void> }> {
  const template = await ensureDataDirTemplate();
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await seedDataDir(dir, template);
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Copies the migrated embedded database into `dataDir` (created if missing), which must not hold one yet. */
export async function seedDataDir(dataDir: string, template?: string): Promise<void> {
  const target = path.join(dataDir, EMBEDDED_DB);
  if (existsSync(target)) throw new Error(`seedDataDir: ${target} already exists; seed only a new data directory`);
  await mkdir(dataDir, { recursive: true });
  await cp(path.join(template ?? (await ensureDataDirTemplate()), EMBEDDED_DB), target, { recursive: true });
}

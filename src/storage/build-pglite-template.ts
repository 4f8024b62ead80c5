import { randomBytes } from "node:crypto";
import { readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { migrate } from "./migrate.js";
import { DEFAULT_MIGRATIONS_DIR, migrationsHash, readMigrationFiles } from "./migration-files.js";
import { openPglite } from "./open-pglite.js";
import { pgliteVersion, TEMPLATE_DB, TEMPLATE_FORMAT, TEMPLATE_MANIFEST, type TemplateManifest } from "./pglite-template.js";

/**
 * Builds a template in `dir` (replacing what is there): a new database with every migration of `migrationsDir`
 * applied. Built beside it under a temporary name and renamed when complete, so a reader never sees half of one;
 * when another build finished the same template first, that one stays.
 *
 * @example
 * await buildPgliteTemplate("dist/db-template");
 */
export async function buildPgliteTemplate(dir: string, options: { migrationsDir?: string } = {}): Promise<void> {
  const target = path.resolve(dir);
  const migrationsDir = options.migrationsDir ?? DEFAULT_MIGRATIONS_DIR;
  const files = await readMigrationFiles(migrationsDir);
  const building = `${target}.${randomBytes(4).toString("hex")}.partial`;
  try {
    const handle = await openPglite({ kind: "pglite", dataDir: path.join(building, TEMPLATE_DB) });
    try {
      await migrate(handle.db, { dir: migrationsDir });
      // Everything in the data files, so the copy starts without replaying the log.
      await sql`checkpoint`.execute(handle.db);
    } finally {
      await handle.close(); // also removes the lock file, which is no part of the template
    }
    const manifest: TemplateManifest = {
      format: TEMPLATE_FORMAT,
      pglite: pgliteVersion(),
      migrations: migrationsHash(files),
      version: files.at(-1)?.version ?? 0,
      ...(await listContents(path.join(building, TEMPLATE_DB))),
    };
    await writeFile(path.join(building, TEMPLATE_MANIFEST), `${JSON.stringify(manifest, null, 1)}\n`);
    await rm(target, { recursive: true, force: true });
    await rename(building, target).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
    });
  } finally {
    await rm(building, { recursive: true, force: true });
  }
}

async function listContents(dir: string): Promise<Pick<TemplateManifest, "dirs" | "files">> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const rel = (e: { parentPath: string; name: string }): string =>
    path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/");
  const dirs = entries
    .filter((e) => e.isDirectory())
    .map(rel)
    .sort();
  const files: Record<string, number> = {};
  for (const e of entries.filter((e) => e.isFile()).sort((a, b) => (rel(a) < rel(b) ? -1 : 1))) {
    files[rel(e)] = (await stat(path.join(e.parentPath, e.name))).size;
  }
  return { dirs, files };
}

// The migrated embedded database that tests copy into a data directory before `tributary` opens it: the package's
// template (dist/db-template), which `npm ci` and `npm test` build and the CLI seeds new data directories from, built
// here when it is missing or out of date (a checkout whose migrations changed since). Initialising a new PGlite takes
// 3–8 s on a quiet machine and far longer on a loaded one; a copy takes a fraction of a second.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  buildPgliteTemplate,
  checkPgliteTemplate,
  PACKAGE_PGLITE_TEMPLATE,
  seedFromTemplate,
  type UsablePgliteTemplate,
} from "../../src/storage/index.js";

/** Where `tributary` keeps the embedded database inside its data directory. */
const EMBEDDED_DB = "db";

let ensured: Promise<UsablePgliteTemplate> | undefined;

/** The package's template, current (see buildPgliteTemplate): built when it is not. */
export function ensureDataDirTemplate(): Promise<UsablePgliteTemplate> {
  ensured ??= (async () => {
    const current = await checkPgliteTemplate(PACKAGE_PGLITE_TEMPLATE);
    if (current.usable) return current;
    await buildPgliteTemplate(PACKAGE_PGLITE_TEMPLATE);
    const built = await checkPgliteTemplate(PACKAGE_PGLITE_TEMPLATE);
    if (!built.usable) throw new Error(`the database template was just built, but ${built.reason}`);
    return built;
  })();
  ensured.catch(() => (ensured = undefined));
  return ensured;
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
export async function seedDataDir(dataDir: string, template?: UsablePgliteTemplate): Promise<void> {
  const target = path.join(dataDir, EMBEDDED_DB);
  if (existsSync(target)) throw new Error(`seedDataDir: ${target} already exists; seed only a new data directory`);
  await seedFromTemplate(target, template ?? (await ensureDataDirTemplate()), new Set());
}

// PGlite for test files: a migrated database in memory or in a temp directory.
// A fresh PGlite takes ~3 s to initialise; loading a dumped, already migrated
// data directory takes under 1 s, so the first use builds that tarball and
// caches it in the OS temp dir, keyed by the PGlite version and migrations.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { migrate, migrationsHash, openPglite, pgliteVersion, readMigrationFiles, type PgliteHandle } from "../../src/storage/index.js";

export interface TestPgliteOptions {
  /** A directory (created and locked) or `memory://` (default). */
  dataDir?: string;
  /** Start from the migrated template (default true); false gives an empty database. */
  migrated?: boolean;
  sessionWaitTimeoutMs?: number;
  /**
   * The buffer pool (default 16MB; null: the database's own, 128MB). A test database holds little, and PGlite zeroes the
   * whole pool as it starts: the default pool cost a third of a second of every open.
   */
  sharedBuffers?: string | null;
}

/** Opens a PGlite database for a test; close it with `handle.close()`. */
export async function openTestPglite(options: TestPgliteOptions = {}): Promise<PgliteHandle> {
  const migrated = options.migrated ?? true;
  const handle = await openPglite({
    kind: "pglite",
    dataDir: options.dataDir ?? "memory://",
    ...(migrated ? { initialData: await migratedTemplate() } : {}),
    ...(options.sessionWaitTimeoutMs === undefined ? {} : { sessionWaitTimeoutMs: options.sessionWaitTimeoutMs }),
    ...(options.sharedBuffers === null ? {} : { sharedBuffers: options.sharedBuffers ?? "16MB" }),
  });
  if (migrated) await migrate(handle.db); // a no-op that proves the template is current
  return handle;
}

/**
 * A migrated in-memory PGlite for the enclosing suite: opened in beforeAll, closed in afterAll. The returned object's
 * `db` is valid from beforeAll on (as with useTestDatabase).
 */
export function useTestPglite(): { readonly db: PgliteHandle["db"] } {
  let handle: PgliteHandle | undefined;
  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle?.close();
  });
  return {
    get db() {
      if (!handle) throw new Error("useTestPglite(): the database exists only from beforeAll to afterAll");
      return handle.db;
    },
  };
}

/** A new empty temp directory; `remove()` deletes it. */
export async function makeTempDir(prefix = "tributary-test-"): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

let template: Promise<Blob> | undefined;

/** The migrated database as a tarball (built once, cached in the OS temp dir). */
export function migratedTemplate(): Promise<Blob> {
  template ??= loadOrBuildTemplate();
  return template;
}

async function loadOrBuildTemplate(): Promise<Blob> {
  const file = join(tmpdir(), `tributary-pglite-${pgliteVersion()}-${migrationsHash(await readMigrationFiles()).slice(0, 12)}.tar`);
  try {
    return new Blob([await readFile(file)]);
  } catch {
    // not cached yet
  }
  const handle = await openPglite({ kind: "pglite", dataDir: "memory://" });
  let tarball: Blob;
  try {
    await migrate(handle.db);
    tarball = await handle.dumpDataDir();
  } finally {
    await handle.close();
  }
  // Write-then-rename: parallel test files never read a half-written cache.
  const partial = `${file}.${randomBytes(4).toString("hex")}.partial`;
  await writeFile(partial, new Uint8Array(await tarball.arrayBuffer()));
  await rename(partial, file);
  return tarball;
}

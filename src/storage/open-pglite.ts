import { existsSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import type { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { StorageError } from "../errors/index.js";
import { lockDataDir, type DataDirLock } from "./data-dir-lock.js";
import type { Database } from "./database.js";
import { assertChannel, notifyIn, type DatabaseHandle, type PgliteConfig } from "./database-handle.js";
import { Mutex } from "./mutex.js";
import { PgliteDialect } from "./pglite-dialect.js";
import { assertSeeded, checkPgliteTemplate, removeSeeded, seedFromTemplate, type UnusablePgliteTemplate } from "./pglite-template.js";
import { pgliteParsers } from "./type-parsers.js";

export interface PgliteHandle extends DatabaseHandle {
  readonly kind: "pglite";
  readonly dataDir: string;
  /** A tarball of the whole database (backups; test templates). */
  dumpDataDir(): Promise<Blob>;
  /**
   * How the database came to be: it was there (`existing`), copied from the template (`template`), loaded from
   * `initialData` (`initialData`), or initialised by PGlite (`initialised`).
   */
  readonly origin: "existing" | "template" | "initialData" | "initialised";
  /** Why the template was not used, when one was given for a new database. */
  readonly templateUnused?: UnusablePgliteTemplate;
}

const IN_MEMORY = "memory://";

const SHARED_BUFFERS = /^\d+(?:kB|MB|GB)$/;

/** PGlite's options for `config`: our type parsers, and its start parameters with the settings the config asks for. */
function startOptions(
  config: PgliteConfig,
  defaultStartParams: readonly string[],
): { parsers: typeof pgliteParsers; startParams?: string[] } {
  if (config.sharedBuffers === undefined) return { parsers: pgliteParsers };
  if (!SHARED_BUFFERS.test(config.sharedBuffers)) {
    throw new StorageError("PGLITE_OPEN_FAILED", `sharedBuffers: "${config.sharedBuffers}" is not a size; write e.g. 16MB`);
  }
  return { parsers: pgliteParsers, startParams: [...defaultStartParams, "-c", `shared_buffers=${config.sharedBuffers}`] };
}

/**
 * Opens (creating if needed) an embedded PGlite database. A directory is
 * locked for this handle's lifetime; see lockDataDir.
 *
 * NOTIFY uses PGlite's own LISTEN: delivery follows commit, like Postgres.
 */
export async function openPglite(config: PgliteConfig): Promise<PgliteHandle> {
  // Before PGlite compiles its WebAssembly, which reads the flag.
  if (config.baselineCodeOnly) setFlagsFromString("--liftoff-only");
  // Imported here, not with this module: a command on Postgres never loads PGlite.
  const { PGlite } = await import("@electric-sql/pglite");
  const options = startOptions(config, PGlite.defaultStartParams);
  const inMemory = config.dataDir.startsWith(IN_MEMORY);
  const lock: DataDirLock | undefined = inMemory ? undefined : lockDataDir(config.dataDir);
  const dataDir = lock?.dataDir ?? config.dataDir;
  // PGlite refuses a tarball for a directory that already holds a database.
  const isNew = inMemory || !existsSync(join(dataDir, "PG_VERSION"));
  const seed = isNew ? config.initialData : undefined;
  let origin: PgliteHandle["origin"] = !isNew ? "existing" : seed ? "initialData" : "initialised";
  let templateUnused: UnusablePgliteTemplate | undefined;
  let pglite: PGlite | undefined;
  if (isNew && !seed && !inMemory && config.template !== undefined) {
    // The template only saves time: whatever is wrong with it, the database is initialised as without one.
    const template = await checkPgliteTemplate(config.template).catch((error: unknown): UnusablePgliteTemplate => ({
      usable: false,
      reason: `the database template at ${config.template} cannot be read: ${error instanceof Error ? error.message : String(error)}`,
      damaged: true,
    }));
    if (template.usable) {
      const written = new Set<string>();
      try {
        await seedFromTemplate(dataDir, template, written);
        pglite = await PGlite.create(dataDir, options);
        await assertSeeded(pglite, template);
        origin = "template";
      } catch (cause) {
        await pglite?.close().catch(() => undefined);
        pglite = undefined;
        await removeSeeded(dataDir, written).catch(() => undefined);
        const why = cause instanceof Error ? cause.message : String(cause);
        const reason = why.startsWith("the database template") ? why : `the database template at ${config.template} does not open: ${why}`;
        templateUnused = { usable: false, reason, damaged: true };
      }
    } else {
      templateUnused = template;
    }
  }
  try {
    pglite ??= await PGlite.create(dataDir, { ...options, ...(seed ? { loadDataDir: seed } : {}) });
  } catch (cause) {
    lock?.release();
    throw new StorageError(
      "PGLITE_OPEN_FAILED",
      `cannot open the embedded database in ${dataDir}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, location: { file: dataDir } },
    );
  }
  const opened = pglite;

  const mutex = new Mutex();
  const exclusive = async <T>(fn: () => Promise<T>): Promise<T> => {
    const release = await mutex.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  };
  const dialectConfig = {
    pglite: opened,
    mutex,
    ...(config.sessionWaitTimeoutMs === undefined ? {} : { sessionWaitTimeoutMs: config.sessionWaitTimeoutMs }),
  };
  const db = new Kysely<Database>({ dialect: new PgliteDialect(dialectConfig) });

  let closing: Promise<void> | undefined;
  return {
    kind: "pglite",
    db,
    dataDir,
    origin,
    ...(templateUnused ? { templateUnused } : {}),
    async listen(channel, handler) {
      assertChannel(channel);
      const unlisten = await exclusive(() =>
        opened.listen(channel, (payload) => {
          try {
            handler(payload);
          } catch (error) {
            console.warn(`tributary: notification handler for "${channel}" threw: ${String(error)}`);
          }
        }),
      );
      return () => (opened.closed ? Promise.resolve() : exclusive(() => unlisten()));
    },
    notify: (channel, payload) => notifyIn(db, channel, payload),
    dumpDataDir: () => exclusive(() => opened.dumpDataDir("none")),
    close() {
      closing ??= (async () => {
        await db.destroy();
        // Waits for the connection in use, if any; later waiters fail with DATABASE_CLOSED.
        const release = await mutex.acquire();
        try {
          await opened.close();
        } finally {
          release();
          lock?.release();
        }
      })();
      return closing;
    },
  };
}

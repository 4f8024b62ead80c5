import { existsSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { StorageError } from "../errors/index.js";
import { lockDataDir, type DataDirLock } from "./data-dir-lock.js";
import type { Database } from "./database.js";
import { assertChannel, notifyIn, type DatabaseHandle, type PgliteConfig } from "./database-handle.js";
import { Mutex } from "./mutex.js";
import { PgliteDialect } from "./pglite-dialect.js";
import { pgliteParsers } from "./type-parsers.js";

export interface PgliteHandle extends DatabaseHandle {
  readonly kind: "pglite";
  readonly dataDir: string;
  /** A tarball of the whole database (backups; test templates). */
  dumpDataDir(): Promise<Blob>;
}

const IN_MEMORY = "memory://";

/**
 * Opens (creating if needed) an embedded PGlite database. A directory is
 * locked for this handle's lifetime; see lockDataDir.
 *
 * NOTIFY uses PGlite's own LISTEN: delivery follows commit, like Postgres.
 */
export async function openPglite(config: PgliteConfig): Promise<PgliteHandle> {
  const inMemory = config.dataDir.startsWith(IN_MEMORY);
  const lock: DataDirLock | undefined = inMemory ? undefined : lockDataDir(config.dataDir);
  const dataDir = lock?.dataDir ?? config.dataDir;
  // PGlite refuses a tarball for a directory that already holds a database.
  const isNew = inMemory || !existsSync(join(dataDir, "PG_VERSION"));
  const seed = isNew ? config.initialData : undefined;
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(dataDir, { parsers: pgliteParsers, ...(seed ? { loadDataDir: seed } : {}) });
  } catch (cause) {
    lock?.release();
    throw new StorageError(
      "PGLITE_OPEN_FAILED",
      `cannot open the embedded database in ${dataDir}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, location: { file: dataDir } },
    );
  }

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
    pglite,
    mutex,
    ...(config.sessionWaitTimeoutMs === undefined ? {} : { sessionWaitTimeoutMs: config.sessionWaitTimeoutMs }),
  };
  const db = new Kysely<Database>({ dialect: new PgliteDialect(dialectConfig) });

  let closing: Promise<void> | undefined;
  return {
    kind: "pglite",
    db,
    dataDir,
    async listen(channel, handler) {
      assertChannel(channel);
      const unlisten = await exclusive(() =>
        pglite.listen(channel, (payload) => {
          try {
            handler(payload);
          } catch (error) {
            console.warn(`tributary: notification handler for "${channel}" threw: ${String(error)}`);
          }
        }),
      );
      return () => (pglite.closed ? Promise.resolve() : exclusive(() => unlisten()));
    },
    notify: (channel, payload) => notifyIn(db, channel, payload),
    dumpDataDir: () => exclusive(() => pglite.dumpDataDir("none")),
    close() {
      closing ??= (async () => {
        await db.destroy();
        // Waits for the connection in use, if any; later waiters fail with DATABASE_CLOSED.
        const release = await mutex.acquire();
        try {
          await pglite.close();
        } finally {
          release();
          lock?.release();
        }
      })();
      return closing;
    },
  };
}

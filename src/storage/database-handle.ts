import { sql, type Kysely } from "kysely";
import { StorageError } from "../errors/index.js";
import type { Database } from "./database.js";

export type DatabaseKind = "postgres" | "pglite";

export interface PostgresConfig {
  kind: "postgres";
  /** postgres://user:password@host:port/database */
  url: string;
  /** Pool size (default 10). */
  maxConnections?: number;
  /** Shown in pg_stat_activity (default "tributary"). */
  applicationName?: string;
  /** Errors of idle pooled connections and of the LISTEN connection (default: console.warn). */
  onConnectionError?: (error: Error) => void;
  /** The LISTEN connection was lost and is back (notifications sent meanwhile were missed). */
  onListenerReconnect?: () => void;
}

export interface PgliteConfig {
  kind: "pglite";
  /** A directory (locked while open), or `memory://` for a throwaway database. */
  dataDir: string;
  /** Seeds a new data directory from a `dumpDataDir()` tarball; ignored if it already holds a database. */
  initialData?: Blob;
  /**
   * A template directory (buildPgliteTemplate) that a new data directory is copied from, when it was built by this
   * PGlite version with these migrations; otherwise, or if the copy does not open, the database is initialised as
   * without it. Ignored with `initialData`, for `memory://`, and for a directory that already holds a database.
   */
  template?: string;
  /** See PgliteDialectConfig.sessionWaitTimeoutMs (default 60 s). */
  sessionWaitTimeoutMs?: number;
  /**
   * Postgres's `shared_buffers` for this session (e.g. "16MB"); default the data directory's own (128MB). PGlite zeroes
   * the whole pool when it starts, a third of a second for the default: a command that opens the database for a few
   * queries and exits asks for less.
   */
  sharedBuffers?: string;
  /**
   * For a process that opens the database for a few queries and exits: the database's WebAssembly runs as V8's baseline
   * compiler makes it, never optimised. Optimising the functions a start-up runs hot costs more processor time than a
   * command saves by them (about a second on a 2-core machine, twice what the command needs without it). Process-wide:
   * WebAssembly compiled later in the process is not optimised either.
   */
  baselineCodeOnly?: boolean;
}

export type DatabaseConfig = PostgresConfig | PgliteConfig;

export type NotificationHandler = (payload: string) => void;
export type Unlisten = () => Promise<void>;

/** An open database: Kysely plus LISTEN/NOTIFY, the same on both dialects. */
export interface DatabaseHandle {
  readonly kind: DatabaseKind;
  readonly db: Kysely<Database>;
  /**
   * Calls `handler` for every notification on `channel` committed after the
   * returned promise resolves. Notifications sent while a Postgres listener
   * reconnects are lost: pair listening with a periodic poll.
   */
  listen(channel: string, handler: NotificationHandler): Promise<Unlisten>;
  /** NOTIFY outside any transaction. Inside one, use {@link notifyIn}. */
  notify(channel: string, payload: string): Promise<void>;
  /** Closes the pool or PGlite (and releases its data directory); idempotent. */
  close(): Promise<void>;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

/** Channel names are plain lower-case identifiers, so they mean the same to LISTEN and pg_notify on both dialects. */
export function assertChannel(channel: string): void {
  if (!CHANNEL.test(channel)) {
    throw new StorageError(
      "INVALID_CHANNEL",
      `invalid notification channel "${channel}": use lower-case letters, digits and _ (at most 63 characters)`,
    );
  }
}

/**
 * Sends a notification through `executor`; inside a transaction it is
 * delivered only if and when that transaction commits.
 *
 * @example
 * import type { Kysely } from "kysely";
 * // given db: Kysely<Database>
 * await db.transaction().execute(async (trx) => {
 *   await trx.updateTable("steps").set({ state: "success" }).where("id", "=", 1).execute();
 *   await notifyIn(trx, "steps_changed", "1");
 * });
 */
export async function notifyIn(executor: Kysely<Database>, channel: string, payload: string): Promise<void> {
  assertChannel(channel);
  await sql`select pg_notify(${channel}, ${payload})`.execute(executor);
}

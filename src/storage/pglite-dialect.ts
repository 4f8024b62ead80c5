import type { PGlite } from "@electric-sql/pglite";
import {
  AbortedTransactionError,
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type TransactionSettings,
} from "kysely";
import { StorageError } from "../errors/index.js";
import type { Mutex, Release } from "./mutex.js";
import { quoteIdent } from "./quote-ident.js";
import { PgliteConnection } from "./pglite-connection.js";

export interface PgliteDialectConfig {
  pglite: PGlite;
  /** Serialises every use of the single PGlite session (shared with listen/notify). */
  mutex: Mutex;
  /**
   * How long to wait for the session before failing. A transaction that
   * queries through `db` instead of its `trx` waits for itself: this turns
   * that deadlock into an error. Default 60 s.
   */
  sessionWaitTimeoutMs?: number;
}

/**
 * Kysely dialect for PGlite. Unlike kysely-pglite it gives each connection,
 * and so each transaction, PGlite's single session to itself: without that,
 * two overlapping transactions share one session and one's COMMIT commits the
 * other's writes.
 */
export class PgliteDialect implements Dialect {
  readonly #config: PgliteDialectConfig;

  constructor(config: PgliteDialectConfig) {
    this.#config = config;
  }

  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PgliteDriver(this.#config);
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }
}

class PgliteDriver implements Driver {
  readonly #config: PgliteDialectConfig;
  readonly #held = new WeakMap<DatabaseConnection, Release>();
  #destroyed = false;

  constructor(config: PgliteDialectConfig) {
    this.#config = config;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    this.#assertOpen();
    const timeoutMs = this.#config.sessionWaitTimeoutMs ?? 60_000;
    const release = await this.#config.mutex.acquire({
      timeoutMs,
      onTimeout: () =>
        new StorageError(
          "PGLITE_SESSION_TIMEOUT",
          `waited ${timeoutMs} ms for PGlite's single session. A transaction or connection is holding it: ` +
            "if code inside db.transaction() queries through `db` instead of `trx`, it waits for itself.",
        ),
    });
    if (this.#destroyed) {
      release();
      this.#assertOpen();
    }
    const connection = new PgliteConnection(this.#config.pglite);
    this.#held.set(connection, release);
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    let statement = "begin";
    if (settings.isolationLevel || settings.accessMode) {
      statement = "start transaction";
      if (settings.isolationLevel) statement += ` isolation level ${settings.isolationLevel}`;
      if (settings.accessMode) statement += ` ${settings.accessMode}`;
    }
    await connection.executeQuery(CompiledQuery.raw(statement));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const { rows } = await connection.executeQuery<{ command?: string }>(CompiledQuery.raw("commit"));
    // Postgres answers COMMIT with ROLLBACK when an earlier error aborted the transaction.
    if (rows[0]?.command === "ROLLBACK") throw new AbortedTransactionError();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("rollback"));
  }

  async savepoint(connection: DatabaseConnection, savepointName: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdent(savepointName)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, savepointName: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteIdent(savepointName)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, savepointName: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteIdent(savepointName)}`));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const release = this.#held.get(connection);
    if (!release) return;
    this.#held.delete(connection);
    try {
      // Never hand the next user a session still inside someone's transaction
      // (e.g. a db.connection() callback that ran BEGIN and then threw).
      if (!this.#config.pglite.closed && this.#config.pglite.isInTransaction()) {
        await this.#config.pglite.exec("rollback");
      }
    } finally {
      if (connection instanceof PgliteConnection) connection.markReleased();
      release();
    }
  }

  async destroy(): Promise<void> {
    this.#destroyed = true;
  }

  #assertOpen(): void {
    if (this.#destroyed) throw new StorageError("DATABASE_CLOSED", "the PGlite database has been closed");
  }
}

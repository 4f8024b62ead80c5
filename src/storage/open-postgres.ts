import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { StorageError } from "../errors/index.js";
import type { Database } from "./database.js";
import { notifyIn, type DatabaseHandle, type PostgresConfig } from "./database-handle.js";
import { PgListener } from "./pg-listener.js";
import { redactDatabaseUrl } from "./pg-url.js";
import { pgTypeParsers } from "./type-parsers.js";

/** A Postgres handle whose listener can be inspected (tests kill its session). */
export interface PostgresHandle extends DatabaseHandle {
  readonly kind: "postgres";
  readonly listener: PgListener;
}

/**
 * Opens a pg Pool behind Kysely and checks that the server answers.
 *
 * Reconnect-friendly: a broken pooled connection is dropped (the pool's error
 * handler keeps the process alive) and the next query opens a fresh one; TCP
 * keepalive notices dead peers; LISTEN has its own reconnecting connection.
 */
export async function openPostgres(config: PostgresConfig): Promise<PostgresHandle> {
  const onError = config.onConnectionError ?? ((error: Error) => console.warn(`tributary: postgres connection error: ${error.message}`));
  const clientConfig: pg.ClientConfig = {
    connectionString: config.url,
    application_name: config.applicationName ?? "tributary",
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    types: pgTypeParsers,
  };
  const pool = new pg.Pool({ ...clientConfig, max: config.maxConnections ?? 10, idleTimeoutMillis: 30_000 });
  pool.on("error", onError);
  // The pool listens for errors only on idle clients. A checked-out client
  // whose connection drops between queries (inside a transaction, say)
  // emits "error" with nobody listening, which would crash the process.
  // The failure reaches its user anyway (the next query on it fails and
  // the pool drops it on release), so this listener only keeps it from
  // becoming an uncaught exception.
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });

  try {
    await sql`select 1`.execute(db);
  } catch (cause) {
    await db.destroy().catch(() => undefined);
    throw new StorageError(
      "DATABASE_UNREACHABLE",
      `cannot connect to Postgres at ${redactDatabaseUrl(config.url)}: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        "Check DATABASE_URL and that the server is running.",
      { cause },
    );
  }

  const listener = new PgListener({
    clientConfig: { ...clientConfig, application_name: `${clientConfig.application_name}-listener` },
    onError,
    ...(config.onListenerReconnect ? { onReconnect: config.onListenerReconnect } : {}),
  });
  let closing: Promise<void> | undefined;
  return {
    kind: "postgres",
    db,
    listener,
    listen: (channel, handler) => listener.listen(channel, handler),
    notify: (channel, payload) => notifyIn(db, channel, payload),
    close() {
      closing ??= Promise.all([listener.close(), db.destroy()]).then(() => undefined);
      return closing;
    },
  };
}

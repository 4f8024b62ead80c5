import pg from "pg";
import { StorageError } from "../errors/index.js";
import { quoteIdent } from "./quote-ident.js";
import { redactDatabaseUrl } from "./pg-url.js";

/**
 * Runs `fn` with a single short-lived connection to the database in `url`
 * (CREATE/DROP DATABASE cannot run in a pool's transaction-wrapped helpers).
 */
export async function withAdminClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, application_name: "tributary-admin" });
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (cause) {
    await client.end().catch(() => undefined);
    throw new StorageError(
      "DATABASE_UNREACHABLE",
      `cannot connect to Postgres at ${redactDatabaseUrl(url)}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** CREATE DATABASE, optionally as a copy of `template` (which must have no open connections). */
export async function createDatabase(adminUrl: string, name: string, options: { template?: string } = {}): Promise<void> {
  const template = options.template ? ` TEMPLATE ${quoteIdent(options.template)}` : "";
  await withAdminClient(adminUrl, (client) => client.query(`CREATE DATABASE ${quoteIdent(name)}${template}`));
}

/** DROP DATABASE IF EXISTS, disconnecting its sessions first. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withAdminClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`));
}

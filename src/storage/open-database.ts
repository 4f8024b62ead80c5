import type { DatabaseConfig, DatabaseHandle } from "./database-handle.js";
import { openPglite } from "./open-pglite.js";
import { openPostgres } from "./open-postgres.js";

/**
 * Opens Tributary's metadata database: server Postgres, or embedded PGlite.
 * Does not migrate; call migrate(handle.db) (the CLI does so on start).
 *
 * @example
 * const handle = await openDatabase({ kind: "pglite", dataDir: ".tributary/db" });
 * await migrate(handle.db);
 * const unlisten = await handle.listen("events", (payload) => console.log(payload));
 * await handle.close();
 */
export function openDatabase(config: DatabaseConfig): Promise<DatabaseHandle> {
  return config.kind === "postgres" ? openPostgres(config) : openPglite(config);
}

import pg from "pg";
import type { SqlConnections, SqlQueryable } from "./checks/sql-returns-rows-check.js";

/** The environment variable that holds a sqlReturnsRows connection's URL: "warehouse" → TRIBUTARY_CONNECTION_WAREHOUSE. */
export function connectionEnvName(name: string): string {
  return `TRIBUTARY_CONNECTION_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** A check may not hold a connection's query longer than this on the server. */
const STATEMENT_TIMEOUT_MS = 30_000;

/**
 * sqlReturnsRows connections configured in the environment: a Postgres URL
 * in TRIBUTARY_CONNECTION_<NAME> per connection name, opened on first use
 * as a small pool (statement_timeout 30 s, so a slow query cannot pile up).
 * `close()` ends the pools.
 *
 * @example
 * // TRIBUTARY_CONNECTION_WAREHOUSE=postgres://reader@db/warehouse
 * builtInTriggers({ connections: envSqlConnections(process.env).connections })
 */
export function envSqlConnections(env: NodeJS.ProcessEnv): { connections: SqlConnections; close(): Promise<void> } {
  const pools = new Map<string, pg.Pool>();
  return {
    connections(name: string): SqlQueryable | undefined {
      const url = env[connectionEnvName(name)];
      if (!url) return undefined;
      let pool = pools.get(name);
      if (!pool) {
        pool = new pg.Pool({ connectionString: url, max: 2, statement_timeout: STATEMENT_TIMEOUT_MS, idleTimeoutMillis: 30_000 });
        // An idle connection dropped by the server must not crash the process; the next query reconnects.
        pool.on("error", () => undefined);
        pools.set(name, pool);
      }
      return pool;
    },
    async close() {
      await Promise.all([...pools.values()].map((p) => p.end().catch(() => undefined)));
      pools.clear();
    },
  };
}

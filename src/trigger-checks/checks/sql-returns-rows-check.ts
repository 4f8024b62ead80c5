import { z } from "zod";
import type { JsonValue } from "../../sdk/index.js";
import { defineTriggerCheck, type TriggerCheck } from "../trigger-check.js";
import { connectionEnvName } from "../env-sql-connections.js";
import { TriggerError } from "../trigger-error.js";

/** What sqlReturnsRows needs of a connection: pg's Pool and Client fit. */
export interface SqlQueryable {
  query(sql: string): Promise<{ rows: unknown[] }>;
}

/** Resolves a configured connection name; undefined for a name that is not configured. */
export type SqlConnections = (name: string) => SqlQueryable | undefined;

/** Rows copied into the payload; the rest are only counted. */
export const SQL_PAYLOAD_ROWS = 10;

/**
 * `sqlReturnsRows(connection, sql)`: fires when the query returns at least
 * one row; the payload holds the row count and the first
 * {@link SQL_PAYLOAD_ROWS} rows as JSON. The SQL is not a template (values in
 * SQL text would be an injection risk) and is run as given, so it should
 * carry its own LIMIT.
 *
 * A timeout does not cancel the query on the server (pg has no abort): give
 * the connection a statement_timeout.
 */
export function sqlReturnsRowsCheck(connections: SqlConnections): TriggerCheck<never> {
  return defineTriggerCheck({
    schema: z.object({ connection: z.string().min(1), sql: z.string().min(1) }),
    async check(args, { signal }) {
      const conn = connections(args.connection);
      if (!conn) {
        throw new TriggerError(
          "TRIGGER_CONNECTION_UNKNOWN",
          `trigger sqlReturnsRows names the connection "${args.connection}", which is not configured: set ` +
            `${connectionEnvName(args.connection)} to its Postgres URL in the environment of the triggerer (and of the workers, for poke ` +
            `and reschedule waits), or fix the name`,
          { location: { field: "args.connection" } },
        );
      }
      signal.throwIfAborted();
      const { rows } = await conn.query(args.sql);
      if (rows.length === 0) return { fired: false, detail: "the query returned no rows" };
      // Dates become ISO strings and bigints would throw: JSON is what can be stored as payload.
      const firstRows = JSON.parse(
        JSON.stringify(rows.slice(0, SQL_PAYLOAD_ROWS), (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)),
      ) as JsonValue;
      return { fired: true, payload: { rowCount: rows.length, rows: firstRows } };
    },
  });
}

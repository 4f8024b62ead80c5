import type { PGlite, Results } from "@electric-sql/pglite";
import type { CompiledQuery, DatabaseConnection, QueryResult } from "kysely";
import { StorageError } from "../errors/index.js";

const ROW_COUNT_COMMANDS = new Set(["INSERT", "UPDATE", "DELETE", "MERGE"]);

/**
 * One Kysely connection = PGlite's single session, held exclusively between
 * the driver's acquireConnection and releaseConnection.
 */
export class PgliteConnection implements DatabaseConnection {
  readonly #pglite: PGlite;
  #released = false;

  constructor(pglite: PGlite) {
    this.#pglite = pglite;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#released) {
      throw new StorageError("CONNECTION_RELEASED", "query on a PGlite connection that was already released");
    }
    const parameters = compiledQuery.parameters.map(toParameter);
    // Like pg, parameterless SQL goes through the simple protocol, which
    // accepts several statements (migration files); exec returns one result
    // per statement and the last one is the answer.
    const result: Results | undefined =
      parameters.length === 0
        ? (await this.#pglite.exec(compiledQuery.sql)).at(-1)
        : await this.#pglite.query(compiledQuery.sql, parameters);
    if (!result) return { rows: [] };
    const command = result.command?.toUpperCase();
    if (command === "COMMIT" || command === "ROLLBACK") {
      return { rows: [{ command } as R] };
    }
    if (command !== undefined && ROW_COUNT_COMMANDS.has(command)) {
      return { numAffectedRows: BigInt(result.rowCount ?? result.affectedRows ?? 0), rows: result.rows as R[] };
    }
    return { rows: result.rows as R[] };
  }

  /** PGlite has no server-side cursors here: runs the query, then yields it in chunks. */
  async *streamQuery<R>(compiledQuery: CompiledQuery, chunkSize = 1000): AsyncIterableIterator<QueryResult<R>> {
    if (!Number.isInteger(chunkSize) || chunkSize <= 0) {
      throw new StorageError("INVALID_ARGUMENT", "chunkSize must be a positive integer");
    }
    const { rows } = await this.executeQuery<R>(compiledQuery);
    for (let i = 0; i < rows.length; i += chunkSize) {
      yield { rows: rows.slice(i, i + chunkSize) };
    }
  }

  markReleased(): void {
    this.#released = true;
  }
}

/**
 * Serialise the values whose text form depends on the inferred parameter
 * type the same way pg does, so a Date compared with a text column or a
 * plain object bound to jsonb behave alike on both dialects.
 */
function toParameter(value: unknown): unknown {
  if (value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (value !== null && typeof value === "object" && !Array.isArray(value) && !ArrayBuffer.isView(value)) {
    return JSON.stringify(value);
  }
  return value;
}

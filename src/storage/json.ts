import { StorageError } from "../errors/index.js";

/** A value that survives a JSON round trip. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

declare const jsonTextBrand: unique symbol;

/**
 * JSON text for a `json`/`jsonb` parameter. Both drivers are given text, never
 * objects: `pg` turns a JS array into a Postgres array literal, which a jsonb
 * column rejects, so every JSON write goes through {@link toJson}.
 */
export type JsonText = string & { readonly [jsonTextBrand]: true };

/**
 * Serialises a value for a json/jsonb column.
 *
 * @example
 * import type { Kysely } from "kysely";
 * // given db: Kysely<Database>
 * await db.insertInto("cursors").values({ name: "events", value: toJson({ id: 42 }) }).execute();
 */
export function toJson(value: unknown): JsonText {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new StorageError("JSON_INVALID", `cannot store value as JSON: ${String(cause)}`, { cause });
  }
  if (text === undefined) {
    throw new StorageError("JSON_INVALID", `cannot store ${typeof value} as JSON`);
  }
  return text as JsonText;
}

/**
 * Postgres array literals for parameters cast to `text[]` or `int[]`. node-postgres builds the same literal from a JS
 * array, but escapes each element with two regular expressions and grows the literal one element at a time: for the
 * tens of thousands of asset keys a status request sends, that was tens of megabytes of garbage per request. These
 * escape only the elements that need it and join once; a literal built once can also be sent twice.
 */
export function textArray(values: readonly (string | null)[]): string {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    // Quoted always: an unquoted element could read as NULL or be trimmed.
    parts[i] = value === null ? "NULL" : NEEDS_ESCAPE.test(value) ? `"${value.replace(ESCAPED, "\\$&")}"` : `"${value}"`;
  }
  return `{${parts.join(",")}}`;
}

/** {@link textArray} of integers. */
export function intArray(values: readonly number[]): string {
  for (const value of values) {
    if (!Number.isSafeInteger(value)) throw new TypeError(`intArray: ${String(value)} is not an integer`);
  }
  return `{${values.join(",")}}`;
}

const NEEDS_ESCAPE = /[\\"]/;
const ESCAPED = /[\\"]/g;

import pg from "pg";

/**
 * Both dialects must hand back the same JS values for the same row, or code
 * that passes its tests on PGlite breaks on Postgres. Defaults differ for
 * int8 (pg: string, PGlite: number|bigint) and date (pg: local-midnight Date,
 * PGlite: UTC Date), so we pin them:
 * - int8 → number (ids and counts), or bigint beyond ±2^53 rather than losing digits;
 * - date → the 'YYYY-MM-DD' text; timestamptz → Date (both defaults agree);
 * - numeric stays a string; json/jsonb are parsed.
 */
const OID = { INT8: 20, DATE: 1082, INT8_ARRAY: 1016, DATE_ARRAY: 1182, TEXT_ARRAY: 1009 } as const;

export function parseInt8(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
}

const keepText = (text: string): string => text;

// pg-types knows 1009 (text[]) although its TypeId enum does not list array types.
const getBuiltinParser = pg.types.getTypeParser as (oid: number, format?: "text" | "binary") => unknown;
const parseTextArray = getBuiltinParser(OID.TEXT_ARRAY) as (text: string) => Array<string | null>;

function parseInt8Array(text: string): Array<number | bigint | null> {
  return parseTextArray(text).map((item) => (item === null ? null : parseInt8(item)));
}

/** `types` option for pg's Pool and Client. */
export const pgTypeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (format === undefined || format === "text") {
      switch (oid) {
        case OID.INT8:
          return parseInt8;
        case OID.INT8_ARRAY:
          return parseInt8Array;
        case OID.DATE:
          return keepText;
        case OID.DATE_ARRAY:
          return parseTextArray;
      }
    }
    return getBuiltinParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/** `parsers` option for PGlite (array types are derived from these). */
export const pgliteParsers: Record<number, (text: string) => unknown> = {
  [OID.INT8]: parseInt8,
  [OID.DATE]: keepText,
};

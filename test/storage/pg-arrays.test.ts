// Array literals built for `text[]` and `int[]` parameters read back in Postgres as the values they were built from,
// whatever the characters of the values.
import { sql, type Kysely } from "kysely";
import { describe, expect, it } from "vitest";
import type { Database } from "../../src/storage/index.js";
import { intArray, textArray } from "../../src/storage/pg-arrays.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { useTestPglite } from "../support/pglite.js";

const tricky = [
  "plain",
  "",
  " padded ",
  "NULL",
  "null",
  'a "quoted" key',
  "back\\slash",
  '\\"',
  "comma,brace{}",
  "multi|dimension|key",
  "ünïcødé ✓",
  "line\nbreak\ttab",
  "{1,2}",
];

function arraysSuite(database: { readonly db: Kysely<Database> }): void {
  it("a text array reads back element for element, nulls included", async () => {
    const values = [...tricky, null, "after null"];
    const { rows } = await sql<{ v: string | null; i: string }>`
      select v, i from unnest(${textArray(values)}::text[]) with ordinality as x(v, i) order by i`.execute(database.db);
    expect(rows.map((r) => r.v)).toEqual(values);
  });

  it("an empty array is empty; integers read back as integers", async () => {
    const { rows } = await sql<{ n: number; total: number }>`
      select (select count(*)::int from unnest(${textArray([])}::text[])) as n,
             (select sum(x)::int from unnest(${intArray([1, -2, 40])}::int[]) as x) as total`.execute(database.db);
    expect(rows[0]).toEqual({ n: 0, total: 39 });
  });
}

it("refuses a number that is not an integer", () => {
  expect(() => intArray([1, 2.5])).toThrow("intArray: 2.5 is not an integer");
  expect(() => intArray([Number.NaN])).toThrow("is not an integer");
});

describePostgres("array literals (Postgres)", () => {
  arraysSuite(useTestDatabase());
});

describe("array literals (PGlite)", () => {
  arraysSuite(useTestPglite());
});

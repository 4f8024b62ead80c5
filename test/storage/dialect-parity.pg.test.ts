import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { toJson, type Database, type PgliteHandle } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { openTestPglite } from "../support/pglite.js";

// Code tested on PGlite must read the same values on Postgres.
describePostgres("the same rows on Postgres and PGlite", () => {
  const database = useTestDatabase();
  let pglite: PgliteHandle;
  beforeAll(async () => {
    pglite = await openTestPglite();
  });
  afterAll(async () => {
    await pglite?.close();
  });

  const both = async <R>(query: (db: Kysely<Database>) => Promise<R>): Promise<R> => {
    const [onPostgres, onPglite] = await Promise.all([query(database.db), query(pglite.db)]);
    expect(onPglite).toEqual(onPostgres);
    return onPostgres;
  };

  it("parses column types alike", async () => {
    const row = await both(async (db) => {
      const { rows } = await sql<Record<string, unknown>>`
        select 42::int8 as int8, 9007199254740993::int8 as huge, 7::int4 as int4, 1.50::numeric as numeric,
               2.5::float8 as float8, true as bool, 'x'::text as text, '2025-03-15'::date as date,
               '2025-03-15T10:00:00.123Z'::timestamptz as timestamptz, '{"a":[1,{"b":null}]}'::jsonb as jsonb,
               array[1, 2]::int8[] as int8s, array['a', 'b,c', null]::text[] as texts,
               '00000000-0000-0000-0000-000000000001'::uuid as uuid, null::text as nothing,
               count(*) as count`.execute(db);
      return rows[0];
    });
    expect(row).toEqual({
      int8: 42,
      huge: 9007199254740993n,
      int4: 7,
      numeric: "1.50",
      float8: 2.5,
      bool: true,
      text: "x",
      date: "2025-03-15",
      timestamptz: new Date("2025-03-15T10:00:00.123Z"),
      jsonb: { a: [1, { b: null }] },
      int8s: [1, 2],
      texts: ["a", "b,c", null],
      uuid: "00000000-0000-0000-0000-000000000001",
      nothing: null,
      count: 1,
    });
  });

  it("binds parameters alike", async () => {
    const when = new Date("2025-03-15T10:00:00.123Z");
    const row = await both(async (db) => {
      const { rows } = await sql<Record<string, unknown>>`
        select ${when}::timestamptz as ts, ${when} = ${when}::timestamptz as same_instant,
               ${12n}::int8 as big, ${[1, 2, 3]}::int8[] as arr, ${true}::bool as flag,
               ${toJson([1, "two", { three: 3 }])}::jsonb as json, ${"it's"} as text`.execute(db);
      return rows[0];
    });
    expect(row).toEqual({
      ts: when,
      same_instant: true,
      big: 12,
      arr: [1, 2, 3],
      flag: true,
      json: [1, "two", { three: 3 }],
      text: "it's",
    });
  });

  it("reports the same SQLSTATE codes", async () => {
    const code = (db: Kysely<Database>) =>
      db
        .insertInto("pools")
        .values({ name: "default_pool", slots: 1 })
        .execute()
        .then(
          () => "inserted",
          (error: { code?: string }) => error.code,
        );
    expect(await both(code)).toBe("23505");
  });
});

import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dumpSchema, SCHEMA_DUMP_COMMAND, type PgliteHandle } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { openTestPglite } from "../support/pglite.js";

const committedFile = fileURLToPath(new URL("../../docs/schema.sql", import.meta.url));
const staleMessage = `docs/schema.sql is out of date with migrations/: regenerate it with \`${SCHEMA_DUMP_COMMAND}\` and review the diff`;

describe("docs/schema.sql", () => {
  let pglite: PgliteHandle;
  beforeAll(async () => {
    pglite = await openTestPglite();
  });
  afterAll(async () => {
    await pglite?.close();
  });

  it("matches the schema migrated on PGlite", async () => {
    expect(await dumpSchema(pglite.db), staleMessage).toBe(await readFile(committedFile, "utf8"));
  });

  describePostgres("on Postgres", () => {
    const database = useTestDatabase();

    it("matches the schema migrated on Postgres", async () => {
      expect(await dumpSchema(database.db), staleMessage).toBe(await readFile(committedFile, "utf8"));
    });

    it("is the same on PGlite as on Postgres", async () => {
      const [onPostgres, onPglite] = await Promise.all([dumpSchema(database.db), dumpSchema(pglite.db)]);
      expect(onPglite, "the migrations produce a different schema on PGlite than on Postgres").toBe(onPostgres);
    });
  });
});

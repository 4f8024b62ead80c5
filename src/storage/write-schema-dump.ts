// Regenerates docs/schema.sql from a freshly migrated database:
//   npx tsx src/storage/write-schema-dump.ts              (embedded PGlite, needs no server)
//   npx tsx src/storage/write-schema-dump.ts --postgres   (a scratch database on DATABASE_URL's server)
// The storage tests check that Postgres and PGlite produce the same text.
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { DatabaseHandle } from "./database-handle.js";
import { migrate } from "./migrate.js";
import { openDatabase } from "./open-database.js";
import { createDatabase, dropDatabase } from "./pg-admin.js";
import { databaseUrlWithName } from "./pg-url.js";
import { dumpSchema } from "./schema-dump.js";

const target = fileURLToPath(new URL("../../docs/schema.sql", import.meta.url));

async function dumpFrom(handle: DatabaseHandle): Promise<string> {
  try {
    await migrate(handle.db);
    return await dumpSchema(handle.db);
  } finally {
    await handle.close();
  }
}

async function main(): Promise<void> {
  let text: string;
  if (process.argv.includes("--postgres")) {
    const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
    const name = `tributary_schema_dump_${randomBytes(4).toString("hex")}`;
    await createDatabase(adminUrl, name);
    try {
      text = await dumpFrom(await openDatabase({ kind: "postgres", url: databaseUrlWithName(adminUrl, name) }));
    } finally {
      await dropDatabase(adminUrl, name);
    }
  } else {
    text = await dumpFrom(await openDatabase({ kind: "pglite", dataDir: "memory://" }));
  }
  await writeFile(target, text);
  console.log(`wrote ${target}`);
}

await main();

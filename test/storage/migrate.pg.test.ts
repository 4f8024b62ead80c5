import { cp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { DEFAULT_MIGRATIONS_DIR, migrate, openPostgres, readMigrationFiles, type PostgresHandle } from "../../src/storage/index.js";
import { createScratchDatabase, describePostgres } from "../support/pg.js";
import { makeTempDir } from "../support/pglite.js";

describePostgres("migrate on Postgres", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function freshDatabase(): Promise<{ url: string; open(): Promise<PostgresHandle> }> {
    const scratch = await createScratchDatabase();
    cleanups.push(scratch.drop);
    return {
      url: scratch.url,
      async open() {
        const handle = await openPostgres({ kind: "postgres", url: scratch.url });
        cleanups.push(() => handle.close());
        return handle;
      },
    };
  }

  async function appliedVersions(handle: PostgresHandle): Promise<number[]> {
    const rows = await handle.db.selectFrom("schema_migrations").select("version").orderBy("version").execute();
    return rows.map((r) => r.version);
  }

  it("applies every migration once; applying again is harmless", async () => {
    const handle = await (await freshDatabase()).open();
    const files = await readMigrationFiles();
    const first = await migrate(handle.db);
    expect(first.applied.map((m) => m.version)).toEqual(files.map((f) => f.version));
    expect(first.version).toBe(files.at(-1)?.version);
    const second = await migrate(handle.db);
    expect(second).toEqual({ applied: [], version: first.version });
    expect(await appliedVersions(handle)).toEqual(files.map((f) => f.version));
    const pools = await handle.db.selectFrom("pools").select(["name", "slots"]).execute();
    expect(pools).toEqual([{ name: "default_pool", slots: 128 }]);
  });

  it("lets four processes migrate one fresh database at once", async () => {
    const database = await freshDatabase();
    const dir = await makeTempDir("tributary-migrations-");
    cleanups.push(dir.remove);
    await cp(DEFAULT_MIGRATIONS_DIR, dir.path, { recursive: true });
    for (const n of [9001, 9002, 9003]) {
      await writeFile(join(dir.path, `${n}_extra.sql`), `create table extra_${n} (id int); select pg_sleep(0.05);`);
    }
    const handles = await Promise.all(Array.from({ length: 4 }, () => database.open()));
    const results = await Promise.all(handles.map((h) => migrate(h.db, { dir: dir.path })));
    const files = await readMigrationFiles(dir.path);
    expect(files).toHaveLength((await readMigrationFiles()).length + 3);
    // Each migration was applied by exactly one of them.
    expect(results.flatMap((r) => r.applied.map((m) => m.version)).sort((a, b) => a - b)).toEqual(files.map((f) => f.version));
    expect(await appliedVersions(handles[0]!)).toEqual(files.map((f) => f.version));
  });

  it("refuses to run when an applied migration file was edited", async () => {
    const handle = await (await freshDatabase()).open();
    const dir = await makeTempDir("tributary-migrations-");
    cleanups.push(dir.remove);
    await cp(DEFAULT_MIGRATIONS_DIR, dir.path, { recursive: true });
    await migrate(handle.db, { dir: dir.path });
    await writeFile(join(dir.path, "0001_initial.sql"), "-- edited\nselect 1;\n");
    await expect(migrate(handle.db, { dir: dir.path })).rejects.toMatchObject({
      code: "MIGRATION_CHECKSUM_MISMATCH",
      message: expect.stringContaining("0001_initial.sql was changed after it was applied"),
    });
  });

  it("refuses a database migrated by a newer version, and applies nothing of a failing migration", async () => {
    const handle = await (await freshDatabase()).open();
    const dir = await makeTempDir("tributary-migrations-");
    cleanups.push(dir.remove);
    await writeFile(join(dir.path, "0001_a.sql"), "create table a (id int);");
    await writeFile(join(dir.path, "0002_b.sql"), "create table b (id int);\nselect * from no_such_table;");
    await expect(migrate(handle.db, { dir: dir.path })).rejects.toMatchObject({ code: "MIGRATION_FAILED" });
    const tables = await sql<{ t: string }>`select tablename as t from pg_tables where schemaname = 'public' order by 1`.execute(handle.db);
    expect(tables.rows.map((r) => r.t)).toEqual(["a", "schema_migrations"]);
    expect(await appliedVersions(handle)).toEqual([1]);

    await writeFile(join(dir.path, "0002_b.sql"), "create table b (id int);");
    await migrate(handle.db, { dir: dir.path });
    const older = await makeTempDir("tributary-migrations-");
    cleanups.push(older.remove);
    await writeFile(join(older.path, "0001_a.sql"), "create table a (id int);");
    await expect(migrate(handle.db, { dir: older.path })).rejects.toMatchObject({ code: "MIGRATION_UNKNOWN" });
  });
});

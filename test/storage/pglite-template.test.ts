import { cp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { checkPgliteTemplate, migrate, openPglite, type PgliteHandle, type UsablePgliteTemplate } from "../../src/storage/index.js";
import { ensureDataDirTemplate } from "../support/data-dir-template.js";
import { makeTempDir } from "../support/pglite.js";

// A new data directory copied from a template: used when the template is current, and when it is missing, out of
// date or damaged, the database is initialised as without one and works all the same.
let template: UsablePgliteTemplate;
beforeAll(async () => {
  template = await ensureDataDirTemplate();
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await makeTempDir("tributary-template-");
  cleanups.push(dir.remove);
  return dir.path;
}

/** A copy of the template that a test may damage. */
async function templateCopy(): Promise<string> {
  const dir = join(await tempDir(), "template");
  await cp(template.dir, dir, { recursive: true });
  return dir;
}

async function editManifest(dir: string, edit: (manifest: Record<string, unknown>) => void): Promise<void> {
  const file = join(dir, "template.json");
  const manifest = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  edit(manifest);
  await writeFile(file, JSON.stringify(manifest));
}

/** Opens a new database in a new directory with `templateDir`; closed after the test. */
async function openNew(templateDir: string): Promise<PgliteHandle> {
  const handle = await openPglite({ kind: "pglite", dataDir: join(await tempDir(), "db"), template: templateDir });
  cleanups.push(() => handle.close());
  return handle;
}

/**
 * The database opens and answers, and reopens as an existing one. Initialising a database costs seconds: the fallbacks
 * that only need to show the database is usable stop here; expectWorkingDatabase migrates it as well.
 */
async function expectOpenDatabase(handle: PgliteHandle): Promise<void> {
  const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
  expect(rows).toEqual([{ one: 1 }]);
  await handle.close();
  const again = await openPglite({ kind: "pglite", dataDir: handle.dataDir });
  try {
    expect(again.origin).toBe("existing");
  } finally {
    await again.close();
  }
}

/** The database is migrated, keeps what is written, and reopens: whatever it was created from. */
async function expectWorkingDatabase(handle: PgliteHandle): Promise<void> {
  const { version } = await migrate(handle.db);
  expect(version).toBe(template.version);
  await handle.db
    .insertInto("cursors")
    .values({ name: "seeded", value: sql`'1'::jsonb` })
    .execute();
  await handle.close();
  const again = await openPglite({ kind: "pglite", dataDir: handle.dataDir });
  try {
    expect(again.origin).toBe("existing");
    const row = await again.db.selectFrom("cursors").select("name").where("name", "=", "seeded").executeTakeFirst();
    expect(row?.name).toBe("seeded");
    expect((await migrate(again.db)).applied).toEqual([]);
  } finally {
    await again.close();
  }
}

describe("a new PGlite data directory and its template", () => {
  it("is copied from a current template, already migrated", async () => {
    const handle = await openNew(template.dir);
    expect(handle.origin).toBe("template");
    expect(handle.templateUnused).toBeUndefined();
    expect((await migrate(handle.db)).applied).toEqual([]);
    await expectWorkingDatabase(handle);
  });

  it("does not touch a directory that already holds a database", async () => {
    const first = await openNew(template.dir);
    const dataDir = first.dataDir;
    await first.db
      .insertInto("cursors")
      .values({ name: "mine", value: sql`'2'::jsonb` })
      .execute();
    await first.close();
    const again = await openPglite({ kind: "pglite", dataDir, template: template.dir });
    try {
      expect(again.origin).toBe("existing");
      expect(again.templateUnused).toBeUndefined();
      expect(await again.db.selectFrom("cursors").select("name").execute()).toEqual([{ name: "mine" }]);
    } finally {
      await again.close();
    }
  });

  it("says why a template is not usable without opening anything", async () => {
    const missing = await checkPgliteTemplate(join(await tempDir(), "none"));
    expect(missing).toMatchObject({
      usable: false,
      damaged: false,
      reason: expect.stringMatching(/there is no database template at .*none/),
    });

    const otherMigrations = await templateCopy();
    await editManifest(otherMigrations, (m) => (m.migrations = "0".repeat(64)));
    expect(await checkPgliteTemplate(otherMigrations)).toMatchObject({
      usable: false,
      damaged: false,
      reason: expect.stringContaining("out of date: its migrations"),
    });

    const otherPglite = await templateCopy();
    await editManifest(otherPglite, (m) => (m.pglite = "0.0.1"));
    expect(await checkPgliteTemplate(otherPglite)).toMatchObject({
      usable: false,
      damaged: false,
      reason: expect.stringContaining("built by PGlite 0.0.1"),
    });

    const garbled = await templateCopy();
    await writeFile(join(garbled, "template.json"), "{ not json");
    const check = await checkPgliteTemplate(garbled);
    expect(check).toMatchObject({ usable: false, damaged: true });
    expect(!check.usable && check.reason).toContain(join(garbled, "template.json"));

    const escaping = await templateCopy();
    await editManifest(escaping, (m) => (m.files = { "../outside": 1, PG_VERSION: 3 }));
    expect(await checkPgliteTemplate(escaping)).toMatchObject({
      usable: false,
      damaged: true,
      reason: expect.stringContaining("../outside"),
    });
  });

  it("is initialised as without a template when the template is missing or out of date", async () => {
    const stale = await templateCopy();
    await editManifest(stale, (m) => (m.migrations = "0".repeat(64)));
    const handle = await openNew(stale);
    expect(handle.origin).toBe("initialised");
    expect(handle.templateUnused).toMatchObject({ damaged: false, reason: expect.stringContaining("out of date") });
    expect((await migrate(handle.db)).applied).toHaveLength(template.version);
    await expectWorkingDatabase(handle);

    const none = await openNew(join(await tempDir(), "no-template"));
    expect(none.origin).toBe("initialised");
    expect(none.templateUnused).toMatchObject({ damaged: false });
    await expectOpenDatabase(none);
  });

  it("is initialised in place of a copy of a template with a file cut short, naming the file", async () => {
    const damaged = await templateCopy();
    await truncate(join(damaged, "db", "global", "pg_control"), 10);
    const handle = await openNew(damaged);
    expect(handle.origin).toBe("initialised");
    expect(handle.templateUnused).toMatchObject({ damaged: true });
    expect(handle.templateUnused?.reason).toContain(join(damaged, "db", "global", "pg_control"));
    expect(handle.templateUnused?.reason).toContain("10 bytes");
    await expectOpenDatabase(handle);
  });

  it("is initialised in place of a copy that PGlite cannot open", async () => {
    const damaged = await templateCopy();
    const control = join(damaged, "db", "global", "pg_control");
    await writeFile(control, Buffer.alloc((await readFile(control)).length));
    const handle = await openNew(damaged);
    expect(handle.origin).toBe("initialised");
    expect(handle.templateUnused).toMatchObject({
      damaged: true,
      reason: expect.stringContaining(`database template at ${damaged} does not open`),
    });
    await expectOpenDatabase(handle);
  });

  it("is initialised when the template's files are gone, whatever the manifest says", async () => {
    const gutted = await templateCopy();
    await rm(join(gutted, "db", "base"), { recursive: true });
    const handle = await openNew(gutted);
    expect(handle.origin).toBe("initialised");
    expect(handle.templateUnused).toMatchObject({ damaged: true, reason: expect.stringContaining("is missing") });
    await expectOpenDatabase(handle);
  });
});

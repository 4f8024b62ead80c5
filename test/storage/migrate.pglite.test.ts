import { cp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_MIGRATIONS_DIR, migrate, readMigrationFiles } from "../../src/storage/index.js";
import { makeTempDir, openTestPglite } from "../support/pglite.js";

describe("migrate on PGlite", () => {
  it("applies every migration once, harmlessly again, and refuses an edited file", async () => {
    const handle = await openTestPglite({ migrated: false });
    const dir = await makeTempDir("tributary-migrations-");
    try {
      await cp(DEFAULT_MIGRATIONS_DIR, dir.path, { recursive: true });
      const files = await readMigrationFiles(dir.path);
      const first = await migrate(handle.db, { dir: dir.path });
      expect(first.applied.map((m) => m.version)).toEqual(files.map((f) => f.version));
      // Concurrent calls on one handle serialise on PGlite's session.
      const again = await Promise.all([migrate(handle.db, { dir: dir.path }), migrate(handle.db, { dir: dir.path })]);
      expect(again.map((r) => r.applied)).toEqual([[], []]);

      await writeFile(join(dir.path, "0001_initial.sql"), "-- edited\n");
      await expect(migrate(handle.db, { dir: dir.path })).rejects.toMatchObject({ code: "MIGRATION_CHECKSUM_MISMATCH" });
    } finally {
      await handle.close();
      await dir.remove();
    }
  });
});

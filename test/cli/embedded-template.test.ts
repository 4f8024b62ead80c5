import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMigrationFiles } from "../../src/storage/index.js";
import { ensureDataDirTemplate } from "../support/data-dir-template.js";
import { cliBudget, runCli } from "./run-cli.js";

// A command that creates the embedded database copies it from the package's template (dist/db-template): it is
// migrated already. What a missing, outdated or damaged template does is in test/storage/pglite-template.test.ts.
let dir: string;
beforeAll(async () => {
  await ensureDataDirTemplate(); // as `npm ci` and `npm test` leave it
  dir = await mkdtemp(path.join(tmpdir(), "tributary-template-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a new embedded data directory", () => {
  it(
    "is copied from the package's template, with every migration applied",
    async () => {
      const dataDir = path.join(dir, "data");
      const first = await runCli(["--data-dir", dataDir, "migrate", "--json"]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      const files = await readMigrationFiles();
      expect(JSON.parse(first.stdout)).toMatchObject({ ok: true, database: "pglite", applied: [], version: files.at(-1)!.version });

      const again = await runCli(["--data-dir", dataDir, "migrate"]);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("up to date");
    },
    cliBudget(2),
  );
});

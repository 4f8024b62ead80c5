import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchRun } from "../../src/api/index.js";
import { GraphCache, PgDefinitionStore, PgRunStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { eventually, startCli } from "./run-cli.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

// `tributary reconciler --watch` as a definitions file is edited under it: its local worker processes run the
// new version (an edited body, a new asset) without a restart.
describePostgres("tributary reconciler after a definitions file changes", () => {
  const database = useTestDatabase();
  let defsDir: string;
  let dataDir: string;
  const file = (body: string, extra = "") =>
    `import { appendFileSync } from "node:fs";\nimport { asset } from "tributary";\n` +
    `const ran = (what) => { appendFileSync(${JSON.stringify(path.join(dataDir, "ran.txt"))}, what + "\\n"); return what; };\n` +
    `export const a = asset({ key: "rc/a" }, async () => ran(${JSON.stringify(body)}));\n${extra}`;

  beforeAll(async () => {
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-rec-edit-defs-"));
    dataDir = await mkdtemp(path.join(tmpdir(), "tributary-rec-edit-data-"));
    await writeFile(path.join(defsDir, "al.ts"), file("first body"));
  });

  afterAll(async () => {
    await rm(defsDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it("runs the edited function body and a new asset of the edited file", async () => {
    const reconciler = startCli(["reconciler", "--watch", "--definitions", defsDir, "--data-dir", dataDir, "--processes", "1"], {
      env: { DATABASE_URL: database.url },
    });
    try {
      await eventually(
        async () => (reconciler.output().includes("is running") ? true : undefined),
        180_000,
        () => `the reconciler to start\n${reconciler.output()}`,
      );
      const definitions = new PgDefinitionStore(database.db);
      const runs = new PgRunStore(database.db, RUN_DECISIONS);
      const graphs = new GraphCache(definitions, 0);
      const materialize = async (key: string): Promise<void> => {
        const { runId } = await launchRun({ graphs, runs, definitions }, { assetKeys: [key] }, new Date());
        const run = await eventually(
          async () => {
            const r = (await runs.getRun(runId))!;
            return ["success", "failed", "canceled"].includes(r.status) ? r : undefined;
          },
          120_000,
          () => `the run of ${key} to end\n${reconciler.output()}`,
        );
        expect(run.status, JSON.stringify(run.steps.map((s) => s.error))).toBe("success");
      };
      const lastRan = async (): Promise<string | undefined> =>
        (await readFile(path.join(dataDir, "ran.txt"), "utf8")).trim().split("\n").at(-1);

      await materialize("rc/a");
      expect(await lastRan()).toBe("first body");

      const before = (await graphs.current()).version;
      await writeFile(
        path.join(defsDir, "al.ts"),
        file("second body", `export const b = asset({ key: "rc/b" }, async () => ran("b is new"));\n`),
      );
      await eventually(
        async () => {
          const now = await graphs.current();
          return now.version > before && now.graph.get("rc/b") ? true : undefined;
        },
        120_000,
        () => `the edited file to load\n${reconciler.output()}`,
      );
      await materialize("rc/a");
      expect(await lastRan()).toBe("second body");
      await materialize("rc/b");
      expect(await lastRan()).toBe("b is new");
    } finally {
      if (reconciler.exitCode === null) {
        const exited = new Promise((resolve) => reconciler.once("exit", resolve));
        reconciler.kill("SIGKILL");
        await exited;
      }
    }
  }, 600_000);
});

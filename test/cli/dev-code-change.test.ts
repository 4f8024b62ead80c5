import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, graphqlAt, startDev, type DevServer } from "./run-cli.js";

// `tributary dev` as a user edits a definitions file: its worker processes are long-lived, and the next run
// runs the file as it is now (a new function body, a new asset), without a restart.
let dataDir: string;
let defsDir: string;
let dev: DevServer | undefined;

// Each run appends what it ran to a file of the test's.
const file = (body: string, extra = "") =>
  `import { appendFileSync } from "node:fs";\nimport { asset } from "tributary";\n` +
  `const ran = (what) => { appendFileSync(${JSON.stringify(path.join(dataDir, "ran.txt"))}, what + "\\n"); return what; };\n` +
  `export const a = asset({ key: "edit/a" }, async () => ran(${JSON.stringify(body)}));\n${extra}`;
const NEW_ASSET = `export const b = asset({ key: "edit/b" }, async () => ran("b is new"));\n`;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "tributary-dev-edit-data-"));
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-dev-edit-defs-"));
  await writeFile(path.join(defsDir, "al.ts"), file("first body"));
});

afterAll(async () => {
  await dev?.stop();
  await rm(dataDir, { recursive: true, force: true });
  await rm(defsDir, { recursive: true, force: true });
});

describe("tributary dev after a definitions file changes", () => {
  it("runs the edited function body, and a new asset of the edited file, without a restart", async () => {
    dev = await startDev({ dataDir, definitionsDir: defsDir, seed: true });
    const version = async (): Promise<number> =>
      (await graphqlAt<{ definitionsVersion: { version: number } }>(dev!.port, "{ definitionsVersion { version } }")).data!
        .definitionsVersion.version;
    // Through the API (a CLI process per run costs more than the run on a loaded machine).
    const materialize = async (key: string): Promise<{ status: string; steps: { state: string; error: unknown }[] }> => {
      const launched = await graphqlAt<{ launchRun: { id: string } }>(
        dev!.port,
        `mutation ($input: LaunchRunInput!) { launchRun(input: $input) { id } }`,
        {
          input: { assetKeys: [key] },
        },
      );
      expect(launched.errors, JSON.stringify(launched.errors)).toBeUndefined();
      return eventually(
        async () => {
          const r = await graphqlAt<{ run: { status: string; steps: { state: string; error: unknown }[] } }>(
            dev!.port,
            `query ($id: String!) { run(id: $id) { status steps { state error } } }`,
            { id: launched.data!.launchRun.id },
          );
          return ["success", "failed", "canceled"].includes(r.data?.run.status ?? "") ? r.data!.run : undefined;
        },
        120_000,
        () => `the run of ${key} to end\n${dev!.output()}`,
      );
    };
    const lastRan = async (): Promise<string | undefined> =>
      (await readFile(path.join(dataDir, "ran.txt"), "utf8")).trim().split("\n").at(-1);

    expect((await materialize("edit/a")).status).toBe("success");
    expect(await lastRan()).toBe("first body");

    // Only the function body changes: still a new version, and the next run runs it.
    const before = await version();
    await writeFile(path.join(defsDir, "al.ts"), file("second body"));
    await eventually(
      async () => ((await version()) > before ? true : undefined),
      60_000,
      () => `a new definitions version\n${dev?.output()}`,
    );
    expect(dev.output()).not.toMatch(/reloaded \(al\.ts\): \d+ assets, unchanged/);
    expect((await materialize("edit/a")).status).toBe("success");
    expect(await lastRan()).toBe("second body");

    // A new asset in the same file.
    await writeFile(path.join(defsDir, "al.ts"), file("second body", NEW_ASSET));
    await eventually(
      async () => {
        const r = await graphqlAt<{ assets: { key: string }[] }>(dev!.port, "{ assets { key } }");
        return r.data?.assets.some((a) => a.key === "edit/b") ? true : undefined;
      },
      60_000,
      () => `edit/b to appear\n${dev?.output()}`,
    );
    const run = await materialize("edit/b");
    expect(run.status, JSON.stringify(run.steps.map((s) => s.error))).toBe("success");
    expect(await lastRan()).toBe("b is new");
  }, 600_000);
});

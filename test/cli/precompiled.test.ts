import { execFile } from "node:child_process";
import { statSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { precompiled } from "../../src/precompiled.mjs";
import { ROOT } from "./run-cli.js";

const run = promisify(execFile);

/** A package directory (URL) whose dist/cli/inputs.json records `files` as they are now. */
async function builtRoot(files: Record<string, string>): Promise<URL> {
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-precompiled-"));
  const recorded: Record<string, { size: number; mtimeMs: number }> = {};
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(dir, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
    const info = statSync(file);
    recorded[name] = { size: info.size, mtimeMs: info.mtimeMs };
  }
  await mkdir(path.join(dir, "dist/cli"), { recursive: true });
  await writeFile(path.join(dir, "dist/cli/inputs.json"), JSON.stringify({ files: recorded }));
  return pathToFileURL(`${dir}/`);
}

describe("whether the precompiled CLI matches the sources", () => {
  const roots: URL[] = [];
  afterAll(async () => {
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });
  const root = async (): Promise<URL> => {
    const r = await builtRoot({ "src/a.ts": "export const a = 1;\n", "package.json": "{}\n" });
    roots.push(r);
    return r;
  };

  it("is current while every recorded file has its size and modification time", async () => {
    const r = await root();
    expect(precompiled(r)).toEqual({ dir: new URL("dist/cli/", r) });
  });

  it("is stale once a file is edited, even to the same size, or removed", async () => {
    const edited = await root();
    await writeFile(new URL("src/a.ts", edited), "export const a = 22;\n");
    expect(precompiled(edited)).toEqual({ stale: "src/a.ts changed since dist/cli was built" });

    const touched = await root();
    const later = new Date(Date.now() + 5_000);
    await utimes(new URL("src/a.ts", touched), later, later);
    expect(precompiled(touched)).toEqual({ stale: "src/a.ts changed since dist/cli was built" });

    const removed = await root();
    await rm(new URL("src/a.ts", removed));
    expect(precompiled(removed)).toEqual({ stale: "src/a.ts is gone since dist/cli was built" });
  });

  it("is not there without a build, and not used under TRIBUTARY_RUN_SOURCES=1", async () => {
    const r = await root();
    await rm(new URL("dist/cli/inputs.json", r));
    expect(precompiled(r)).toEqual({ stale: "dist/cli is not built (npm run build:cli builds it)" });

    const current = await root();
    const before = process.env.TRIBUTARY_RUN_SOURCES;
    process.env.TRIBUTARY_RUN_SOURCES = "1";
    try {
      expect(precompiled(current)).toEqual({ stale: "TRIBUTARY_RUN_SOURCES=1" });
    } finally {
      if (before === undefined) delete process.env.TRIBUTARY_RUN_SOURCES;
      else process.env.TRIBUTARY_RUN_SOURCES = before;
    }
  });
});

// The build and the executable in a copy of the checkout with its own dist/cli, as a clone gets them. Under this
// checkout's tmp/, so that packages resolve from its node_modules as they would from the copy's own.
describe("a copy of the checkout, built", () => {
  let copy: string;
  let defs: string;
  const tributary = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    run(process.execPath, [path.join(copy, "bin/tributary.mjs"), ...args], {
      cwd: copy,
      env: { ...process.env, NO_COLOR: "1", DATABASE_URL: "", TRIBUTARY_DEBUG_START: "1", TRIBUTARY_RUN_SOURCES: "", ...env },
    });

  beforeAll(async () => {
    await mkdir(path.join(ROOT, "tmp"), { recursive: true });
    copy = await mkdtemp(path.join(ROOT, "tmp", "precompiled-copy-"));
    for (const entry of ["src", "bin", "scripts", "migrations", "package.json", "tsconfig.json"]) {
      await cp(path.join(ROOT, entry), path.join(copy, entry), { recursive: true });
    }
    defs = path.join(copy, "defs");
    await mkdir(defs);
    await writeFile(
      path.join(defs, "one.ts"),
      `import { asset } from "tributary";\nexport const one = asset({ key: "pre/one" }, async () => 1);\n`,
    );
    await run(process.execPath, [path.join(copy, "scripts/build-cli.mjs")], { cwd: copy });
  }, 120_000);
  afterAll(async () => {
    if (copy) await rm(copy, { recursive: true, force: true });
  });

  it("records every source file the CLI is built from, with its size and modification time", async () => {
    const { files } = JSON.parse(await readFile(path.join(copy, "dist/cli/inputs.json"), "utf8")) as {
      files: Record<string, { size: number; mtimeMs: number }>;
    };
    for (const file of ["src/cli/main.ts", "src/executor/worker-child.ts", "src/index.ts", "src/storage/index.ts", "package.json"]) {
      expect(files[file], file).toMatchObject({ size: expect.any(Number) as number, mtimeMs: expect.any(Number) as number });
    }
    expect(Object.keys(files).some((f) => f.includes("node_modules"))).toBe(false);
    expect(precompiled(pathToFileURL(`${copy}/`))).toEqual({ dir: pathToFileURL(`${copy}/dist/cli/`) });
  });

  it("runs precompiled while the sources match, loading definitions as ever; the sources through tsx once one changes", async () => {
    const version = (JSON.parse(await readFile(path.join(copy, "package.json"), "utf8")) as { version: string }).version;
    const fast = await tributary(["--version"]);
    expect(fast.stderr).toContain("tributary: running the precompiled CLI (dist/cli)");
    expect(fast.stdout.trim()).toBe(version);

    const checked = await tributary(["check", "--json", "--definitions", defs]);
    expect(checked.stderr).toContain("running the precompiled CLI");
    expect(JSON.parse(checked.stdout)).toMatchObject({ ok: true, assets: [expect.objectContaining({ key: "pre/one" })] });

    const forced = await tributary(["--version"], { TRIBUTARY_RUN_SOURCES: "1" });
    expect(forced.stderr).toContain("tributary: running the sources through tsx: TRIBUTARY_RUN_SOURCES=1");
    expect(forced.stdout.trim()).toBe(version);

    // An edit (here one that changes what the command prints) is what runs next.
    const versionFile = path.join(copy, "src/cli/version.ts");
    const source = await readFile(versionFile, "utf8");
    expect(source).toContain(".version;");
    await writeFile(versionFile, source.replace(".version;", '.version + "-edited";'));
    const edited = await tributary(["--version"]);
    expect(edited.stderr).toContain("tributary: running the sources through tsx: src/cli/version.ts changed since dist/cli was built");
    expect(edited.stdout.trim()).toBe(`${version}-edited`);
  }, 180_000);
});

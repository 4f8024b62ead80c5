import { spawn } from "node:child_process";
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cliBudget, CLI_COMMAND_BUDGET_MS, eventually, graphqlAt, listeningPort, ROOT, runCli, type CliResult } from "./run-cli.js";

const temps: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), "tributary-init-")));
  temps.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Every file under `dir`, relative, sorted; `node_modules` left out. */
async function filesUnder(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name === "node_modules") continue;
    const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) out.push(...(await filesUnder(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

/** The environment of npm in the project, as a user runs it: without the variables of the npm that runs this suite. */
function npmEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_(package|lifecycle|config_(global|prefix|workspace))/i.test(k)),
  );
  return { ...env, NO_COLOR: "1", DATABASE_URL: "" };
}

/** npm in the project, as a user runs it. */
function npm(args: string[], cwd: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", args, { cwd, env: npmEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), CLI_COMMAND_BUDGET_MS);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const PROJECT_FILES = [
  ".gitignore",
  "README.md",
  "asset-definitions/_source.ts",
  "asset-definitions/shop.ts",
  "package.json",
  "tests/shop.test.ts",
  "tsconfig.json",
];

describe("tributary init", () => {
  it(
    "writes a project that installs from this checkout, passes npm test, serves its assets with npm start, and fails its tests when an asset is wrong",
    async () => {
      const dir = path.join(await tempDir(), "new", "analytics project");
      const init = await runCli(["init", dir]);
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain(`Created a Tributary project in ${dir}`);
      expect(init.stdout).toMatch(/Next:\n {2}cd .*\n {2}npm install\n {2}npm test\n {2}npm start\n/);
      expect(await filesUnder(dir)).toEqual(PROJECT_FILES);
      const pkg = JSON.parse(await readFile(path.join(dir, "package.json"), "utf8")) as {
        name: string;
        dependencies: Record<string, string>;
        scripts: Record<string, string>;
      };
      expect(pkg.name).toBe("analytics-project");
      expect(pkg.dependencies).toEqual({ tributary: `file:${ROOT}` });
      expect(pkg.scripts.start).toBe("tributary dev");
      expect(await readFile(path.join(dir, "README.md"), "utf8")).toMatch(/^# analytics-project\n/);

      const install = await npm(["install", "--prefer-offline", "--no-audit", "--no-fund"], dir);
      expect(install.code, install.stderr).toBe(0);
      expect((await lstat(path.join(dir, "node_modules/tributary"))).isSymbolicLink()).toBe(true);

      const test = await npm(["test"], dir);
      expect(test.code, `${test.stdout}\n${test.stderr}`).toBe(0);
      // The definitions load and type-check, then Node's test runner runs the tests through tributary/testing.
      expect(test.stdout).toMatch(/✓ 2 assets from 1 files/);
      expect(test.stdout).toMatch(/✓ types: 0 errors in 2 files/);
      expect(test.stdout).toMatch(/^# pass 3$/m);
      expect(test.stdout).toMatch(/^# fail 0$/m);

      // npm start serves the project's assets, and its automation fills the last days.
      const start = Object.assign(
        spawn("npm", ["start", "--", "--port", "0"], { cwd: dir, env: npmEnv(), stdio: ["ignore", "pipe", "pipe"], detached: true }),
        { output: () => started },
      );
      let started = "";
      start.stdout.on("data", (d: Buffer) => (started += d.toString()));
      start.stderr.on("data", (d: Buffer) => (started += d.toString()));
      try {
        const port = await listeningPort(start);
        const assets = await graphqlAt<{ assets: { key: string }[] }>(port, "{ assets { key } }");
        expect(assets.data?.assets.map((a) => a.key).sort()).toEqual(["shop/daily_orders", "shop/weekly_revenue"]);
        await eventually(
          async () => {
            const runs = await graphqlAt<{ runs: { status: string }[] }>(port, "{ runs { status } }");
            return runs.data?.runs.some((r) => r.status === "success") ? true : undefined;
          },
          CLI_COMMAND_BUDGET_MS,
          () => `a run of the project's automation to succeed:\n${started}`,
        );
      } finally {
        const exited = new Promise((resolve) => start.once("close", resolve));
        process.kill(-start.pid!, "SIGTERM");
        await exited;
      }

      // The whole project type-checks with its own tsconfig.json, the SDK's sources as it sees them included.
      const typecheck = await npm(["run", "typecheck"], dir);
      expect(typecheck.code, `${typecheck.stdout}\n${typecheck.stderr}`).toBe(0);

      // The tests test something: an asset that answers for the wrong day fails them.
      const shop = path.join(dir, "asset-definitions/shop.ts");
      const source = await readFile(shop, "utf8");
      expect(source).toContain("return { day: ctx.partition.key,");
      await writeFile(shop, source.replace("return { day: ctx.partition.key,", 'return { day: "2026-01-01",'));
      const failing = await npm(["test"], dir);
      expect(failing.code).not.toBe(0);
      expect(failing.stdout).toMatch(/^not ok 1 - a day's summary adds up its orders$/m);
    },
    cliBudget(7),
  );

  it("refuses an existing project, with or without --force, and writes nothing", async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, "package.json"), '{ "name": "mine" }\n');
    const [human, forced] = await Promise.all([runCli(["init", dir]), runCli(["init", dir, "--force", "--json"])]);
    expect(human.code).toBe(1);
    expect(human.stderr).toContain(`error [INIT_EXISTING_PROJECT] ${dir} already holds a package.json: it is a project`);
    expect(human.stderr).toContain("npm install file:");
    expect(forced.code).toBe(1);
    expect((JSON.parse(forced.stdout) as { error: { code: string } }).error.code).toBe("INIT_EXISTING_PROJECT");
    expect(await filesUnder(dir)).toEqual(["package.json"]);

    const defsOnly = await tempDir();
    await mkdir(path.join(defsOnly, "asset-definitions"));
    const r = await runCli(["init", defsOnly]);
    expect(r.stderr).toContain("already holds an asset-definitions directory");
  });

  it("refuses a directory that is not empty unless --force, and then keeps every file that was there", async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, "README.md"), "my notes\n");
    await writeFile(path.join(dir, "data.csv"), "a,b\n");
    const refused = await runCli(["init", dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error [INIT_DIRECTORY_NOT_EMPTY] ${dir} is not empty (README.md, data.csv)`);
    expect(refused.stderr).toContain("--force");
    expect(await filesUnder(dir)).toEqual(["README.md", "data.csv"]);

    const forced = await runCli(["init", dir, "--force", "--json"]);
    expect(forced.code, forced.stdout).toBe(0);
    const out = JSON.parse(forced.stdout) as { ok: boolean; written: string[]; kept: string[] };
    expect(out.kept).toEqual(["README.md"]);
    expect(out.written).not.toContain("README.md");
    expect(await readFile(path.join(dir, "README.md"), "utf8")).toBe("my notes\n");
    expect(await filesUnder(dir)).toEqual([...PROJECT_FILES, "data.csv"].sort());
  });

  it("initialises the current directory when it holds only a repository, and answers as JSON", async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, ".git"));
    const r = await runCli(["init", "--json"], { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; dir: string; written: string[]; kept: string[]; next: string[] };
    expect(out).toEqual({ ok: true, dir, written: expect.any(Array), kept: [], next: ["npm install", "npm test", "npm start"] });
    expect([...out.written].sort()).toEqual(PROJECT_FILES);
  });

  it("leaves nothing behind when a file cannot be written part-way", async () => {
    const dir = await tempDir();
    // A file where the project's tests/ directory goes: everything before it was written, then it fails.
    await writeFile(path.join(dir, "tests"), "not a directory\n");
    const r = await runCli(["init", dir, "--force"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error \[INIT_WRITE_FAILED\] could not write tests\/shop\.test\.ts in .* \(EEXIST: .*\); the files written before it were removed again/,
    );
    expect(await filesUnder(dir)).toEqual(["tests"]);
  });

  it("names what is wrong with a path that is a file, and an empty --tributary", async () => {
    const dir = await tempDir();
    const file = path.join(dir, "file.txt");
    await writeFile(file, "x\n");
    const [notDir, emptySpec] = await Promise.all([runCli(["init", file]), runCli(["init", path.join(dir, "p"), "--tributary", " "])]);
    expect(notDir.code).toBe(1);
    expect(notDir.stderr).toContain(`error [INIT_NOT_A_DIRECTORY] ${file} exists and is not a directory`);
    expect(emptySpec.code).toBe(1);
    expect(emptySpec.stderr).toContain("error [INIT_OPTIONS_INVALID] --tributary: give a dependency spec");
    expect(await filesUnder(dir)).toEqual(["file.txt"]);
  });
});

import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliBudget, ROOT, runCli } from "./run-cli.js";

interface CheckJson {
  ok: boolean;
  files: { file: string; status: string; error: { code: string; message: string } | null }[];
  types: { typescript: string; tsconfig: string | null; checked: boolean; files: number };
  typeErrors: {
    file: string | null;
    line: number | null;
    column: number | null;
    assetKey: string | null;
    check: string | null;
    code: string;
    message: string;
  }[];
}

// Definitions with type errors in an asset, in a check, outside any definition and in a helper they import; they
// load (types are not checked when loading), except boom.ts, which throws at import.
const SHOP = `import { asset, check, daily } from "tributary";
import { double } from "./_lib/double.js";

const days = daily({ start: "2025-01-01" });

export const orders = asset({ key: "shop/orders", partitions: days }, async () => {
  const rows: number = "many";
  return { rows: double(rows) };
});

export const revenue = asset({ key: "shop/revenue", partitions: days, deps: { orders } }, async (_ctx, { orders }) =>
  orders?.rows.toUpperCase(),
);

export const notEmpty = check(orders, { name: "not_empty" }, (_ctx, value) => ({ passed: value?.rows }));

export const label: string = 42;
`;

const temps: string[] = [];

/** A project in the OS temp directory (so nothing above it has TypeScript), with TypeScript installed if asked. */
async function project(files: Record<string, string>, options: { typescript: boolean }): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), "tributary-check-types-")));
  temps.push(dir);
  if (options.typescript) {
    await mkdir(path.join(dir, "node_modules"));
    await symlink(path.join(ROOT, "node_modules/typescript"), path.join(dir, "node_modules/typescript"), "dir");
  }
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  return dir;
}

let broken: string;

beforeAll(async () => {
  broken = await project(
    {
      "defs/shop.ts": SHOP,
      "defs/_lib/double.ts": `export const double = (n: number): number => n * "2";\n`,
      "defs/boom.ts": `throw new Error("boom at import");\n`,
    },
    { typescript: true },
  );
});

afterAll(async () => {
  await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("tributary check --types", () => {
  it(
    "reports each type error with its file, line, column and asset, exits 1, and still reports a file that fails to load",
    async () => {
      const defs = path.join(broken, "defs");
      const [json, human] = await Promise.all([
        runCli(["check", "--types", "--json", "--definitions", defs]),
        runCli(["check", "--types", "--definitions", defs]),
      ]);

      expect(json.code, json.stderr).toBe(1);
      const out = JSON.parse(json.stdout) as CheckJson;
      expect(out.ok).toBe(false);
      expect(out.types).toMatchObject({ tsconfig: null, checked: true, files: 3 });
      expect(out.files.find((f) => f.file === "boom.ts")?.error?.message).toMatch(/boom at import/);
      const at = (e: CheckJson["typeErrors"][number]) => `${e.file}:${e.line}:${e.column}`;
      expect(out.typeErrors.map(at)).toEqual(["_lib/double.ts:1:50", "shop.ts:7:9", "shop.ts:12:16", "shop.ts:15:82", "shop.ts:17:14"]);
      expect(out.typeErrors[0]).toMatchObject({ assetKey: null, check: null, code: "TS2363" });
      expect(out.typeErrors[1]).toEqual({
        file: "shop.ts",
        line: 7,
        column: 9,
        assetKey: "shop/orders",
        check: null,
        code: "TS2322",
        message: "Type 'string' is not assignable to type 'number'.",
      });
      // The SDK's real types: the dependency's output is the upstream function's return type.
      expect(out.typeErrors[2]).toMatchObject({ assetKey: "shop/revenue", code: "TS2339", message: expect.stringMatching(/toUpperCase/) });
      expect(out.typeErrors[3]).toMatchObject({ assetKey: "shop/orders", check: "not_empty", code: "TS2322" });
      expect(out.typeErrors[4]).toMatchObject({ assetKey: null, check: null, code: "TS2322" });

      expect(human.code).toBe(1);
      expect(human.stdout).toMatch(/boom\.ts\s+error/);
      expect(human.stdout).toMatch(/error \[LOAD_IMPORT_ERROR\] boom\.ts:1:\d+: importing the file threw Error: boom at import/);
      expect(human.stdout).toContain(`error [TS2322] shop.ts:7:9 asset "shop/orders": Type 'string' is not assignable to type 'number'.\n`);
      expect(human.stdout).toContain(`error [TS2322] shop.ts:15:82 check "not_empty" of asset "shop/orders": `);
      expect(human.stdout).toContain(`error [TS2322] shop.ts:17:14: Type 'number' is not assignable to type 'string'.\n`);
      expect(human.stdout).toMatch(/✗ types: 5 errors in 3 files in \d+ ms \(TypeScript [\d.]+, no tsconfig\.json: defaults\)/);
    },
    cliBudget(2),
  );

  it("passes the demo definitions, checked with the repository's tsconfig.json", async () => {
    const r = await runCli(["check", "--types"]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/✓ types: 0 errors in \d+ files in \d+ ms \(TypeScript [\d.]+, tsconfig\.json\)/);
  });

  it(
    "fails naming the directory and how to add TypeScript when the project has none; check alone needs none",
    async () => {
      const dir = await project(
        { "defs/hello.ts": `import { asset } from "tributary";\nexport const hello = asset({ key: "t/hello" }, async () => 1);\n` },
        { typescript: false },
      );
      const defs = path.join(dir, "defs");
      const [json, human, plain] = await Promise.all([
        runCli(["check", "--types", "--json", "--definitions", defs]),
        runCli(["check", "--types", "--definitions", defs]),
        runCli(["check", "--definitions", defs]),
      ]);
      expect(json.code).toBe(1);
      const out = JSON.parse(json.stdout) as { ok: boolean; error: { code: string; message: string } };
      expect(out.ok).toBe(false);
      expect(out.error.code).toBe("CHECK_TYPES_NO_TYPESCRIPT");
      expect(out.error.message).toContain(defs);
      expect(out.error.message).toContain("npm install --save-dev typescript");
      expect(human.code).toBe(1);
      expect(human.stderr).toMatch(/error \[CHECK_TYPES_NO_TYPESCRIPT\] .*npm install --save-dev typescript/);
      expect(plain.code, plain.stdout).toBe(0);
    },
    cliBudget(3),
  );

  it.each([
    [
      "is not valid JSON",
      `{\n  "compilerOptions": {\n    "strict": true\n`,
      { line: 4, column: 1, code: "TS1005", message: "'}' expected." },
    ],
    [
      "has an unknown option",
      `{\n  "compilerOptions": {\n    "strictt": true\n  }\n}\n`,
      { line: 3, column: 5, code: "TS5025", message: "Unknown compiler option 'strictt'. Did you mean 'strict'?" },
    ],
  ])(
    "reports a tsconfig.json that %s by its path and line, and checks nothing",
    async (_what, tsconfig, expected) => {
      const dir = await project(
        { "tsconfig.json": tsconfig, "defs/hello.ts": `export const hello: number = "not checked";\n` },
        { typescript: true },
      );
      const defs = path.join(dir, "defs");
      const [json, human] = await Promise.all([
        runCli(["check", "--types", "--json", "--definitions", defs]),
        runCli(["check", "--types", "--definitions", defs]),
      ]);
      expect(json.code).toBe(1);
      const out = JSON.parse(json.stdout) as CheckJson;
      expect(out.ok).toBe(false);
      expect(out.types).toMatchObject({ tsconfig: path.join(dir, "tsconfig.json"), checked: false, files: 0 });
      expect(out.typeErrors).toEqual([{ file: "../tsconfig.json", assetKey: null, check: null, ...expected }]);
      expect(human.code).toBe(1);
      expect(human.stdout).toContain(
        `error [${expected.code}] ../tsconfig.json:${expected.line}:${expected.column}: ${expected.message}\n`,
      );
      expect(human.stdout).toContain(`✗ types: not checked, 1 error in ${path.join(dir, "tsconfig.json")}\n`);
    },
    cliBudget(2),
  );
});

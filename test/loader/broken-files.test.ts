import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDefinitions, type LoadDefinitionsResult } from "../../src/loader/index.js";
import { dailyAsset, definitionsDir, fileResult, removeDefinitionsDirs } from "./helpers.js";

// One directory holding every kind of broken file next to good ones, loaded
// once: each broken file gets its own clear error, and every other file loads.
const TIMEOUT_MS = 3_000;
let result: LoadDefinitionsResult;
let elapsedMs: number;

beforeAll(async () => {
  const dir = await definitionsDir({
    "good/a.ts": dailyAsset("good/a"),
    "good/b.ts": `import { asset, daily } from "tributary";
import { a } from "./a.js";
export const b = asset({ key: "good/b", partitions: daily({ start: "2025-01-01" }), deps: { a } }, async (_ctx, { a }) => a + 1);
`,
    "syntax.ts": `import { asset } from "tributary";
export const x = asset({ key: "syntax/x" }, async () => (1;
`,
    "syntax-js.mjs": `import { asset } from "tributary";

export const x = asset({ key: "syntax/js" }, async () => 1));
`,
    "throws.ts": `import { asset } from "tributary";
export const x = asset({ key: "throws/x" }, async () => 1);
const config: Record<string, string> = {};
if (!config.warehouseUrl) throw new Error("WAREHOUSE_URL is not set");
`,
    "spin.ts": `import { asset } from "tributary";
export const x = asset({ key: "spin/x" }, async () => 1);
while (true) {}
`,
    "slow.ts": `import { asset } from "tributary";
await new Promise((resolve) => setTimeout(resolve, 30_000));
export const x = asset({ key: "slow/x" }, async () => 1);
`,
    "cycle-a.ts": `import { asset, dep } from "tributary";
export const a = asset({ key: "cycle/a", deps: { b: dep("cycle/b") } }, async () => 1);
`,
    "cycle-b.ts": `import { asset, dep } from "tributary";
export const b = asset({ key: "cycle/b", deps: { a: dep("cycle/a") } }, async () => 1);
`,
    "dup-1.ts": `import { asset } from "tributary";
export const orders = asset({ key: "dup/orders" }, async () => 1);
`,
    "dup-2.ts": `import { asset } from "tributary";
export const ordersAgain = asset({ key: "dup/orders" }, async () => 2);
`,
    "unknown-dep.ts": dailyAsset("unknown/reader", `a: dep("good/aa")`),
    "start-after-end.ts": `import { asset, daily } from "tributary";

export const w = asset(
  {
    key: "bad/window",
    partitions: daily({ start: "2025-03-01", end: "2025-01-01" }),
  },
  async () => 1,
);
`,
    "bad-timezone.ts": `import { asset, daily } from "tributary";

export const tz = asset(
  { key: "bad/timezone", partitions: daily({ start: "2025-01-01", timezone: "Mars/Olympus_Mons" }) },
  async () => 1,
);
`,
    "bad-cron.ts": `import { asset, onCron } from "tributary";

export const c = asset({ key: "bad/cron", automation: onCron("61 * * * *") }, async () => 1);
`,
    "function-metadata.ts": `import { asset } from "tributary";
export const f = asset({ key: "bad/fn_metadata", metadata: { transform: (() => 1) as never } }, async () => 1);
`,
    "date-metadata.ts": `import { asset } from "tributary";
export const d = asset({ key: "bad/date_metadata", metadata: { owner: "x", since: new Date(0) as never } }, async () => 1);
`,
    "nothing.ts": `export const answer = 42;
`,
    "exits.ts": `process.exit(3);
`,
  });
  const started = performance.now();
  result = await loadDefinitions({ dir, timeoutMs: TIMEOUT_MS, concurrency: 4 });
  elapsedMs = performance.now() - started;
}, 120_000);

afterAll(removeDefinitionsDirs);

describe("a directory with broken files", () => {
  it("still loads every good file", () => {
    expect(fileResult(result, "good/a.ts")).toMatchObject({ status: "ok", warnings: [] });
    expect(fileResult(result, "good/b.ts")).toMatchObject({ status: "ok", warnings: [] });
    expect(result.snapshot.assets.map((a) => a.key)).toEqual(["good/a", "good/b"]);
  });

  it("does not make good files wait for a stuck one", () => {
    expect(fileResult(result, "good/a.ts").loadMs).toBeLessThan(TIMEOUT_MS);
    // Both stuck files are stopped at the limit, concurrently, not one after the other.
    expect(elapsedMs).toBeLessThan(30_000);
  });

  it("reports a TypeScript syntax error with file:line:col", () => {
    const { status, error } = fileResult(result, "syntax.ts");
    expect(status).toBe("error");
    expect(error?.code).toBe("LOAD_SYNTAX_ERROR");
    expect(error?.message).toMatch(/^syntax\.ts:2:\d+: syntax error: /);
    expect(error?.message).toContain("2 | export const x");
    expect(error?.location).toEqual({ file: "syntax.ts" });
  });

  it("reports a JavaScript syntax error with file:line:col", () => {
    const { error } = fileResult(result, "syntax-js.mjs");
    expect(error?.code).toBe("LOAD_SYNTAX_ERROR");
    expect(error?.message).toMatch(/^syntax-js\.mjs:3:\d+: syntax error: Unexpected token/);
  });

  it("reports an exception at import with the original message and stack", () => {
    const { error } = fileResult(result, "throws.ts");
    expect(error?.code).toBe("LOAD_IMPORT_ERROR");
    expect(error?.message).toMatch(/^throws\.ts:4:\d+: importing the file threw Error: WAREHOUSE_URL is not set/);
    expect(error?.stack).toContain("throws.ts:4");
    expect(error?.cause?.message).toBe("WAREHOUSE_URL is not set");
  });

  it("stops an import that never finishes, naming the file, the limit and the flag", () => {
    for (const file of ["spin.ts", "slow.ts"]) {
      const { status, error, loadMs } = fileResult(result, file);
      expect(status).toBe("error");
      expect(error?.code).toBe("LOAD_TIMEOUT");
      expect(error?.message).toContain(`${file}: importing the file took longer than the load time limit of 3 s`);
      expect(error?.message).toContain("--load-timeout");
      expect(loadMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    }
  });

  it("reports a cycle across two files with its path", () => {
    expect(fileResult(result, "cycle-a.ts").status).toBe("ok");
    const cycle = result.problems.filter((p) => p.code === "GRAPH_CYCLE");
    expect(cycle.map((p) => [p.file, p.assetKey])).toEqual([
      ["cycle-a.ts", "cycle/a"],
      ["cycle-b.ts", "cycle/b"],
    ]);
    expect(cycle[0]!.message).toContain('"cycle/a" (cycle-a.ts) → "cycle/b" (cycle-b.ts) → "cycle/a" (cycle-a.ts)');
  });

  it("reports the same key in two files, naming both", () => {
    const dup = result.problems.filter((p) => p.code === "GRAPH_DUPLICATE_KEY");
    expect(dup.map((p) => p.file)).toEqual(["dup-1.ts", "dup-2.ts"]);
    expect(dup[0]!.message).toContain("dup-1.ts (export orders) and dup-2.ts (export ordersAgain)");
  });

  it("reports an unknown dependency with the nearest key", () => {
    const p = result.problems.find((x) => x.code === "GRAPH_UNKNOWN_DEPENDENCY");
    expect(p).toMatchObject({ file: "unknown-dep.ts", assetKey: "unknown/reader", field: "deps.a" });
    expect(p?.message).toContain('did you mean "good/a"?');
  });

  it("reports start after end, naming the file, the asset and the field", () => {
    const { error } = fileResult(result, "start-after-end.ts");
    expect(error?.code).toMatch(/^(DEFINITION|PARTITION)_/);
    expect(error?.message).toMatch(/^start-after-end\.ts:6:\d+: asset "bad\/window": /);
    expect(error?.message).toMatch(/end/);
    expect(error?.location).toMatchObject({ file: "start-after-end.ts", assetKey: "bad/window" });
  });

  it("reports an unknown timezone, naming the file and the asset", () => {
    const { error } = fileResult(result, "bad-timezone.ts");
    expect(error?.code).toMatch(/^(DEFINITION|PARTITION)_/);
    expect(error?.message).toMatch(/^bad-timezone\.ts:4:\d+: asset "bad\/timezone": /);
    expect(error?.message).toContain("Mars/Olympus_Mons");
  });

  it("reports an invalid cron, naming the file and the asset", () => {
    const { error } = fileResult(result, "bad-cron.ts");
    expect(error?.code).toBe("DEFINITION_INVALID_CRON");
    expect(error?.message).toMatch(/^bad-cron\.ts:3:\d+: asset "bad\/cron": field "automation.cron": /);
    expect(error?.location).toMatchObject({ file: "bad-cron.ts", assetKey: "bad/cron", field: "automation.cron" });
  });

  it("reports a value that cannot be stored, naming the field", () => {
    const fn = fileResult(result, "function-metadata.ts").error;
    expect(fn?.code).toBe("DEFINITION_NOT_SERIALIZABLE");
    expect(fn?.message).toMatch(/^function-metadata\.ts:2:\d+: asset "bad\/fn_metadata": .*metadata\.transform \(a function\)/);
    expect(fn?.location).toMatchObject({ file: "function-metadata.ts", assetKey: "bad/fn_metadata" });
    const date = fileResult(result, "date-metadata.ts").error;
    expect(date?.code).toBe("DEFINITION_NOT_SERIALIZABLE");
    expect(date?.message).toContain("metadata.since (a Date");
  });

  it("only warns about a file that exports no definitions", () => {
    const r = fileResult(result, "nothing.ts");
    expect(r.status).toBe("ok");
    expect(r.error).toBeUndefined();
    expect(r.warnings).toEqual([expect.stringContaining("exports no assets")]);
  });

  it("reports a file that ends the process at import", () => {
    const { error } = fileResult(result, "exits.ts");
    expect(error?.code).toBe("LOAD_CRASHED");
    expect(error?.message).toContain("exits.ts: the loader process exited with code 3");
  });
});

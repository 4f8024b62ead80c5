import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSnapshot } from "../../src/graph/index.js";
import { discoverDefinitionFiles, loadDefinitions, type LoadDefinitionsResult } from "../../src/loader/index.js";
import { dailyAsset, definitionsDir, fileResult, removeDefinitionsDirs } from "./helpers.js";

const BASIC = fileURLToPath(new URL("../fixtures/definitions/basic", import.meta.url));

afterAll(removeDefinitionsDirs);

describe("loadDefinitions on a definitions directory inside the package", () => {
  let result: LoadDefinitionsResult;
  beforeAll(async () => {
    result = await loadDefinitions({ dir: BASIC });
  }, 60_000);

  it("loads every file and assembles the snapshot", () => {
    expect(result.files.map((f) => [f.file, f.status])).toEqual([
      ["lib/calendar.ts", "ok"],
      ["reports/summary.mjs", "ok"],
      ["sales/orders.ts", "ok"],
      ["sales/raw.ts", "ok"],
      ["sales/revenue.ts", "ok"],
    ]);
    expect(result.problems).toEqual([]);
    expect(result.snapshot.assets.map((a) => [a.key, a.file, a.exportName])).toEqual([
      ["raw/feed", "sales/raw.ts", "feed"],
      ["reports/summary", "reports/summary.mjs", "summary"],
      ["sales/orders", "sales/orders.ts", "orders"],
      ["sales/revenue_7d", "sales/revenue.ts", "revenue7d"],
    ]);
    expect(result.snapshot.checks).toEqual([
      expect.objectContaining({
        assetKey: "sales/orders",
        name: "not_empty",
        blocking: true,
        file: "sales/orders.ts",
        exportName: "ordersNotEmpty",
      }),
    ]);
    expect(result.contentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(fileResult(result, "sales/orders.ts").sourceHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("counts a re-exported asset once, in the file that defines it, with a warning", () => {
    const revenue = fileResult(result, "sales/revenue.ts");
    expect(revenue.assets.map((a) => a.key)).toEqual(["sales/revenue_7d"]);
    expect(revenue.warnings).toEqual([
      'export "orders" re-exports asset "sales/orders" defined in sales/orders.ts; it is loaded from there, not counted here',
    ]);
    const orders = fileResult(result, "sales/orders.ts");
    expect(orders.assets.map((a) => a.exportName)).toEqual(["orders"]);
    expect(orders.warnings).toEqual(['export "default" is the same asset "sales/orders" as export "orders"; it is counted once']);
  });

  it("warns about a helper file that exports no definitions", () => {
    const calendar = fileResult(result, "lib/calendar.ts");
    expect(calendar.status).toBe("ok");
    expect(calendar.warnings).toEqual([expect.stringContaining("exports no assets")]);
  });

  it("records which local files each file imported", () => {
    expect(fileResult(result, "sales/revenue.ts").imports).toEqual(["lib/calendar.ts", "sales/orders.ts"]);
    expect(fileResult(result, "sales/raw.ts").imports).toEqual([]);
  });

  it("hashes the same definitions the same across loads and load orders", async () => {
    const again = await loadDefinitions({ dir: BASIC, concurrency: 1 });
    expect(again.contentHash).toBe(result.contentHash);
    expect(buildSnapshot([...again.files].reverse()).contentHash).toBe(result.contentHash);
  }, 60_000);
});

describe("loadDefinitions", () => {
  it("finds definitions files recursively and skips the rest", async () => {
    const dir = await definitionsDir({
      "a.ts": "",
      "b.mts": "",
      "c.js": "",
      "d.mjs": "",
      "sub/e.ts": "",
      "types.d.ts": "",
      "a.test.ts": "",
      "notes.md": "",
      "data.json": "{}",
      ".hidden.ts": "",
      ".cache/x.ts": "",
      "node_modules/pkg/index.js": "",
    });
    expect(await discoverDefinitionFiles(dir)).toEqual(["a.ts", "b.mts", "c.js", "d.mjs", "sub/e.ts"]);
  });

  it("says so when the directory does not exist", async () => {
    await expect(loadDefinitions({ dir: "/nonexistent/defs" })).rejects.toMatchObject({
      code: "LOAD_DIR_NOT_FOUND",
      message: expect.stringContaining("--definitions"),
    });
  });

  it("keeps a failing file's last good assets in the snapshot", async () => {
    const dir = await definitionsDir({
      "orders.ts": dailyAsset("sales/orders"),
      "revenue.ts": dailyAsset("sales/revenue", `orders: dep("sales/orders")`),
    });
    const first = await loadDefinitions({ dir });
    expect(first.snapshot.assets.map((a) => a.key)).toEqual(["sales/orders", "sales/revenue"]);
    const previousGood = new Map(first.files.map((f) => [f.file, { assets: f.assets, checks: f.checks }]));

    await writeFile(path.join(dir, "orders.ts"), `throw new Error("half-edited");\n`);
    const second = await loadDefinitions({ dir, previousGood });
    expect(fileResult(second, "orders.ts")).toMatchObject({ status: "error", assets: [] });
    expect(second.snapshot.assets.map((a) => a.key)).toEqual(["sales/orders", "sales/revenue"]);
    expect(second.fallbackFiles).toEqual(["orders.ts"]);
    expect(second.contentHash).toBe(first.contentHash);

    // Without the last good load the dependent is excluded, with the cause.
    const third = await loadDefinitions({ dir });
    expect(third.snapshot.assets).toEqual([]);
    expect(third.problems[0]).toMatchObject({ code: "GRAPH_UNKNOWN_DEPENDENCY", assetKey: "sales/revenue" });
  }, 60_000);

  it("reloads only the files asked for and takes the rest from the last good load", async () => {
    const dir = await definitionsDir({ "a.ts": dailyAsset("a"), "b.ts": dailyAsset("b", `a: dep("a")`) });
    const first = await loadDefinitions({ dir });
    const previousGood = new Map(first.files.map((f) => [f.file, f.assets]));
    await writeFile(path.join(dir, "b.ts"), dailyAsset("b2", `a: dep("a")`));
    const partial = await loadDefinitions({ dir, only: ["b.ts"], previousGood });
    expect(partial.files.map((f) => f.file)).toEqual(["b.ts"]);
    expect(partial.snapshot.assets.map((a) => a.key)).toEqual(["a", "b2"]);
  }, 60_000);

  it("does not let a slow file hold up the others, even with one lane", async () => {
    const marker = (name: string) => `import { writeFileSync } from "node:fs";
import { asset } from "tributary";
writeFileSync(new URL("./${name}.done", import.meta.url), String(Date.now()));
export const a = asset({ key: "${name}" }, async () => 1);
`;
    const dir = await definitionsDir({
      "a-slow.ts": `await new Promise((resolve) => setTimeout(resolve, 60_000));\n`,
      "b.ts": marker("b"),
      "c.ts": marker("c"),
      "d.ts": marker("d"),
    });
    const started = Date.now();
    const result = await loadDefinitions({ dir, concurrency: 1, timeoutMs: 9_000 });
    expect(fileResult(result, "a-slow.ts").error?.code).toBe("LOAD_TIMEOUT");
    expect(result.snapshot.assets.map((a) => a.key)).toEqual(["b", "c", "d"]);
    for (const name of ["b", "c", "d"]) {
      const doneAt = Number(await readFile(path.join(dir, `${name}.done`), "utf8"));
      expect(doneAt - started).toBeLessThan(8_000);
    }
  }, 60_000);

  it("stops a file that needs more memory than the limit", async () => {
    const dir = await definitionsDir({
      "hog.ts": `const hoard: number[][] = [];
while (true) hoard.push(new Array(100_000).fill(1));
`,
      "fine.ts": dailyAsset("fine"),
    });
    const result = await loadDefinitions({ dir, memoryMb: 96, timeoutMs: 50_000 });
    const hog = fileResult(result, "hog.ts");
    expect(hog.error?.code).toBe("LOAD_OUT_OF_MEMORY");
    expect(hog.error?.message).toContain("hog.ts: importing the file needed more than the 96 MB memory limit");
    expect(fileResult(result, "fine.ts").status).toBe("ok");
  }, 60_000);

  /** A file whose asset's metadata names the process that imported it. */
  const pidAsset = (key: string, extra = ""): string => `import { asset } from "tributary";
${extra}
export const a = asset({ key: "${key}", metadata: { pid: process.pid } }, async () => 1);
`;
  const pidOf = (result: LoadDefinitionsResult, key: string): unknown => result.snapshot.assets.find((a) => a.key === key)?.metadata?.pid;

  it("imports file after file in one process per lane", async () => {
    const dir = await definitionsDir(Object.fromEntries(["a", "b", "c", "d", "e"].map((k) => [`${k}.ts`, pidAsset(k)])));
    const result = await loadDefinitions({ dir, concurrency: 1 });
    expect(result.files.map((f) => f.status)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(new Set(["a", "b", "c", "d", "e"].map((k) => pidOf(result, k))).size).toBe(1);
    expect(pidOf(result, "a")).not.toBe(process.pid);
  }, 60_000);

  it("never blames a file for what an earlier file in its process left running", async () => {
    const dir = await definitionsDir({
      // Imports cleanly, then throws from a timer and rejects a promise while the next file is importing.
      "a-leaves-trouble.ts": pidAsset(
        "a",
        `setTimeout(() => { throw new Error("thrown by a's timer"); }, 300);
setTimeout(() => void Promise.reject(new Error("rejected by a's timer")), 300);`,
      ),
      "b-takes-a-second.ts": pidAsset("b", `await new Promise((resolve) => setTimeout(resolve, 1_000));`),
      "c-exits.ts": `process.exit(3);
`,
      "d.ts": pidAsset("d"),
    });
    const result = await loadDefinitions({ dir, concurrency: 1 });
    expect(fileResult(result, "a-leaves-trouble.ts").status).toBe("ok");
    // b failed where a's timer went off, so it was imported again in a process of its own.
    expect(fileResult(result, "b-takes-a-second.ts")).toMatchObject({ status: "ok", warnings: [] });
    expect(pidOf(result, "b")).not.toBe(pidOf(result, "a"));
    // A file that ends its process is named whatever ran there before it, and the next file gets a new process.
    expect(fileResult(result, "c-exits.ts").error?.message).toContain("c-exits.ts: the loader process exited with code 3");
    expect(fileResult(result, "d.ts").status).toBe("ok");
    expect(pidOf(result, "d")).not.toBe(pidOf(result, "b"));
  }, 60_000);

  it("imports no more files in a process once the files before them hold half of its heap", async () => {
    const dir = await definitionsDir({
      "a-hoards.ts": pidAsset(
        "a",
        `(globalThis as Record<string, unknown>).hoard = Array.from({ length: 40 }, () => new Array(250_000).fill(1.5));`,
      ),
      "b.ts": pidAsset("b"),
      "c.ts": pidAsset("c"),
    });
    const result = await loadDefinitions({ dir, concurrency: 1, memoryMb: 128 });
    expect(result.files.map((f) => f.status)).toEqual(["ok", "ok", "ok"]);
    expect(pidOf(result, "b")).not.toBe(pidOf(result, "a"));
    expect(pidOf(result, "c")).toBe(pidOf(result, "b"));
  }, 60_000);

  it("ignores files in the previous load that no longer exist", async () => {
    const dir = await definitionsDir({ "a.ts": dailyAsset("a") });
    const first = await loadDefinitions({ dir });
    await rm(path.join(dir, "a.ts"));
    await writeFile(path.join(dir, "b.ts"), dailyAsset("b"));
    const second = await loadDefinitions({ dir, previousGood: new Map(first.files.map((f) => [f.file, f.assets])) });
    expect(second.snapshot.assets.map((a) => a.key)).toEqual(["b"]);
  }, 60_000);
});

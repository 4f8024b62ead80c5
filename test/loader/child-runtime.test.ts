import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import * as sourceSdk from "../../src/index.js";
import { childRuntime } from "../../src/loader/child-runtime.js";
import { loadDefinitions } from "../../src/loader/index.js";
import { definitionsDir, fileResult, removeDefinitionsDirs } from "./helpers.js";

afterAll(removeDefinitionsDirs);

describe("the runtime definitions children run", () => {
  it("is a cached single-file CommonJS bundle", async () => {
    const runtime = await childRuntime();
    expect(runtime.file).toMatch(/\/node_modules\/\.cache\/tributary\/runtime-[0-9a-f]{16}\.cjs$/);
    expect((await childRuntime()).file).toBe(runtime.file);
    const bundled = createRequire(import.meta.url)(runtime.file) as Record<string, unknown>;
    expect(typeof bundled.childMain).toBe("function");
  });

  it("gives definitions files every export of the SDK, in plain node with only the heap limit, and keeps a code cache", async () => {
    const names = Object.keys(sourceSdk);
    const dir = await definitionsDir({
      "probe.ts": `import * as tributary from "tributary";
const missing = ${JSON.stringify(names)}.filter((name) => (tributary as Record<string, unknown>)[name] === undefined);
if (missing.length > 0) throw new Error(\`the SDK lacks \${missing.join(", ")}\`);
if (process.execArgv.join(" ") !== "--max-old-space-size=200") throw new Error(\`node flags: \${process.execArgv.join(" ")}\`);
export const probe = tributary.asset({ key: "probe" }, async () => 1);
`,
    });
    const result = await loadDefinitions({ dir, memoryMb: 200 });
    expect(fileResult(result, "probe.ts")).toMatchObject({ status: "ok", assets: [expect.objectContaining({ key: "probe" })] });
    expect(existsSync((await childRuntime()).codeCacheFile(200))).toBe(true);
  }, 60_000);
});

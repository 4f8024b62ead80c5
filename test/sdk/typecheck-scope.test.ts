import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The demo and the examples are definitions files users copy: `npm run typecheck` (tsc -p .) must compile them,
// so that a change to the SDK's types that breaks them (a dependency that may be null, say) fails the build.
describe("the type-check's scope", () => {
  it("includes the demo definitions and the examples", async () => {
    const root = path.resolve(import.meta.dirname, "../..");
    const tsconfig = JSON.parse(await readFile(path.join(root, "tsconfig.json"), "utf8")) as { include?: string[]; exclude?: string[] };
    expect(tsconfig.include).toEqual(expect.arrayContaining(["asset-definitions", "examples"]));
    expect(tsconfig.exclude ?? []).not.toEqual(expect.arrayContaining([expect.stringMatching(/^(asset-definitions|examples)/)]));
    const pkg = JSON.parse(await readFile(path.join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts["typecheck"]).toContain("tsc --noEmit -p .");
  });
});

import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { watchDefinitions, type DefinitionsChange } from "../../src/loader/index.js";
import { dailyAsset, definitionsDir, removeDefinitionsDirs } from "./helpers.js";

afterAll(removeDefinitionsDirs);

/** Collects onChange calls; `until` waits for the first new change that satisfies a predicate. */
function recorder() {
  const changes: DefinitionsChange[] = [];
  let seen = 0;
  let wake: (() => void) | undefined;
  return {
    changes,
    onChange: (c: DefinitionsChange) => {
      changes.push(c);
      wake?.();
    },
    async until(ok: (c: DefinitionsChange) => boolean): Promise<DefinitionsChange> {
      const deadline = Date.now() + 30_000;
      for (;;) {
        while (seen < changes.length) {
          const c = changes[seen++]!;
          if (ok(c)) return c;
        }
        if (Date.now() > deadline) throw new Error(`no matching change; saw ${changes.length}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1000);
        });
      }
    },
  };
}

const keys = (c: DefinitionsChange): string[] => c.result.snapshot.assets.map((a) => a.key);

describe("watchDefinitions", () => {
  it("reloads a changed file and the files that import it, keeps last good definitions, follows adds and deletes", async () => {
    const dir = await definitionsDir({
      "orders.ts": dailyAsset("sales/orders"),
      "revenue.ts": `import { asset, daily } from "tributary";
import { a as orders } from "./orders.js";
export const revenue = asset({ key: "sales/revenue", partitions: daily({ start: "2025-01-01" }), deps: { orders } }, async () => 1);
`,
      "other.ts": dailyAsset("other"),
    });
    const rec = recorder();
    const errors: unknown[] = [];
    const watcher = watchDefinitions(dir, rec.onChange, { debounceMs: 100, onError: (e) => errors.push(e) });
    try {
      await watcher.ready;
      const initial = await rec.until((c) => c.initial);
      expect(keys(initial)).toEqual(["other", "sales/orders", "sales/revenue"]);

      // An upstream file changes: it and its importer reload, the unrelated file does not.
      await writeFile(path.join(dir, "orders.ts"), dailyAsset("sales/orders2"));
      const second = await rec.until((c) => keys(c).includes("sales/orders2"));
      expect([...second.reloaded].sort()).toEqual(["orders.ts", "revenue.ts"]);
      expect(second.result.files.map((f) => f.file)).toEqual(["orders.ts", "other.ts", "revenue.ts"]);

      // A broken edit keeps the file's last good definitions.
      await writeFile(path.join(dir, "other.ts"), "export const x = (;\n");
      const third = await rec.until((c) => c.result.files.some((f) => f.file === "other.ts" && f.status === "error"));
      expect(third.result.files.find((f) => f.file === "other.ts")?.error?.code).toBe("LOAD_SYNTAX_ERROR");
      expect(keys(third)).toEqual(["other", "sales/orders2", "sales/revenue"]);
      expect(third.result.fallbackFiles).toEqual(["other.ts"]);

      // A new file loads; a deleted one leaves the snapshot.
      await writeFile(path.join(dir, "new.ts"), dailyAsset("new"));
      await rec.until((c) => keys(c).includes("new"));
      await rm(path.join(dir, "new.ts"));
      const removed = await rec.until((c) => c.removed.includes("new.ts"));
      expect(keys(removed)).toEqual(["other", "sales/orders2", "sales/revenue"]);
      expect(errors).toEqual([]);
    } finally {
      await watcher.close();
    }
  }, 90_000);

  it("reloads the files that import a helper when it changes, and retries failing files when one is added", async () => {
    const dir = await definitionsDir({
      "_shared.ts": `export const version = "v1";\n`,
      "uses-shared.ts": `import { asset } from "tributary";
import { version } from "./_shared.js";
export const a = asset({ key: \`shared/\${version}\` }, async () => 1);
`,
      "other.ts": dailyAsset("other"),
      "needs-missing.ts": `import { asset } from "tributary";
import { name } from "./_later.js";
export const a = asset({ key: name }, async () => 1);
`,
    });
    const rec = recorder();
    const errors: unknown[] = [];
    const watcher = watchDefinitions(dir, rec.onChange, { debounceMs: 100, onError: (e) => errors.push(e) });
    try {
      await watcher.ready;
      const initial = await rec.until((c) => c.initial);
      expect(initial.result.files.map((f) => [f.file, f.status])).toEqual([
        ["needs-missing.ts", "error"],
        ["other.ts", "ok"],
        ["uses-shared.ts", "ok"],
      ]);

      await writeFile(path.join(dir, "_shared.ts"), `export const version = "v2";\n`);
      const changed = await rec.until((c) => keys(c).includes("shared/v2"));
      expect(changed.reloaded).toEqual(["uses-shared.ts"]);

      await writeFile(path.join(dir, "_later.ts"), `export const name = "later";\n`);
      const added = await rec.until((c) => keys(c).includes("later"));
      expect(added.reloaded).toEqual(["needs-missing.ts"]);
      expect(errors).toEqual([]);
    } finally {
      await watcher.close();
    }
  }, 90_000);

  it("keeps a loaded key's definition when a new file defines the key again, and lets it go with the file", async () => {
    const dir = await definitionsDir({
      "orders.ts": dailyAsset("sales/orders"),
      "revenue.ts": dailyAsset("sales/revenue", `orders: dep("sales/orders")`),
    });
    const rec = recorder();
    const errors: unknown[] = [];
    const watcher = watchDefinitions(dir, rec.onChange, { debounceMs: 100, onError: (e) => errors.push(e) });
    try {
      await watcher.ready;
      await rec.until((c) => c.initial);

      // The copy is unpartitioned: had it won, the daily reader would have been left out too.
      await writeFile(
        path.join(dir, "zz-copy.ts"),
        `import { asset } from "tributary";\nexport const copy = asset({ key: "sales/orders" }, async () => 1);\n`,
      );
      const dup = await rec.until((c) => c.reloaded.includes("zz-copy.ts"));
      expect(dup.result.snapshot.assets.map((a) => [a.key, a.file])).toEqual([
        ["sales/orders", "orders.ts"],
        ["sales/revenue", "revenue.ts"],
      ]);
      expect(dup.result.problems).toHaveLength(1);
      expect(dup.result.problems[0]).toMatchObject({ code: "GRAPH_DUPLICATE_KEY", file: "zz-copy.ts", assetKey: "sales/orders" });
      expect(dup.result.problems[0]!.message).toContain("orders.ts (export a) and zz-copy.ts (export copy)");

      // Another reload (of an unrelated edit) does not change the outcome.
      await writeFile(path.join(dir, "revenue.ts"), `${dailyAsset("sales/revenue", `orders: dep("sales/orders")`)}// edited\n`);
      const again = await rec.until((c) => c.reloaded.includes("revenue.ts"));
      expect(again.result.snapshot.assets.find((a) => a.key === "sales/orders")?.file).toBe("orders.ts");

      await rm(path.join(dir, "zz-copy.ts"));
      const gone = await rec.until((c) => c.removed.includes("zz-copy.ts"));
      expect(gone.result.problems).toEqual([]);
      expect(keys(gone)).toEqual(["sales/orders", "sales/revenue"]);
      expect(errors).toEqual([]);
    } finally {
      await watcher.close();
    }
  }, 90_000);
});

// The DefinitionStore contract: every implementation runs these cases.
import type { Kysely } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import { InputError, LoadError } from "../../src/errors/index.js";
import type { AssetSyncInput, Database, DefinitionStore } from "../../src/storage/index.js";

export interface DefinitionStoreSubject {
  /** A store over an empty (migrated) database. */
  store: DefinitionStore;
  db: Kysely<Database>;
}

const asset = (key: string, extra: Partial<AssetSyncInput> = {}): AssetSyncInput => ({
  key,
  file: `asset-definitions/${key.split("/")[0]}.ts`,
  spec: { key, deps: [] },
  ...extra,
});

export function definitionStoreContract(name: string, open: () => Promise<DefinitionStoreSubject>): void {
  describe(`DefinitionStore contract: ${name}`, () => {
    let store: DefinitionStore;
    let db: Kysely<Database>;

    beforeEach(async () => {
      ({ store, db } = await open());
    });

    describe("snapshots", () => {
      it("has no snapshot in an empty database", async () => {
        expect(await store.latestSnapshot()).toBeUndefined();
      });

      it("writes a version only when the hash differs from the latest", async () => {
        expect(await store.saveSnapshot({ contentHash: "h1", graph: { assets: ["a"] } })).toEqual({ version: 1, changed: true });
        expect(await store.saveSnapshot({ contentHash: "h1", graph: { assets: ["ignored"] } })).toEqual({
          version: 1,
          changed: false,
        });
        expect(await store.saveSnapshot({ contentHash: "h2", graph: { assets: ["a", "b"] } })).toEqual({
          version: 2,
          changed: true,
        });
        const latest = await store.latestSnapshot();
        expect(latest).toMatchObject({ version: 2, contentHash: "h2", graph: { assets: ["a", "b"] } });
        expect(latest?.createdAt).toBeInstanceOf(Date);
        expect((await store.getSnapshot(1))?.graph).toEqual({ assets: ["a"] });
        expect(await store.getSnapshot(3)).toBeUndefined();
        expect(await db.selectFrom("definition_snapshots").select("version").execute()).toHaveLength(2);
      });

      it("gives a graph that returns to an earlier hash a new version", async () => {
        await store.saveSnapshot({ contentHash: "a", graph: 1 });
        await store.saveSnapshot({ contentHash: "b", graph: 2 });
        expect(await store.saveSnapshot({ contentHash: "a", graph: 1 })).toEqual({ version: 3, changed: true });
      });

      it("round-trips arbitrary JSON graphs", async () => {
        const graph = { s: 'ünïcødé ✓ "quoted" \\ back', n: [1, 2.5, -3e20, null], t: true, nested: { a: [{ b: [] }] } };
        await store.saveSnapshot({ contentHash: "json", graph });
        expect((await store.latestSnapshot())?.graph).toEqual(graph);
      });

      it("creates one version when racing savers store the same hash", async () => {
        const results = await Promise.all(Array.from({ length: 8 }, () => store.saveSnapshot({ contentHash: "same", graph: { x: 1 } })));
        expect(results.filter((r) => r.changed)).toHaveLength(1);
        expect(new Set(results.map((r) => r.version))).toEqual(new Set([1]));
      });

      it("gives racing savers of different hashes dense, distinct versions", async () => {
        const results = await Promise.all(Array.from({ length: 6 }, (_, i) => store.saveSnapshot({ contentHash: `h${i}`, graph: i })));
        expect(results.every((r) => r.changed)).toBe(true);
        expect(results.map((r) => r.version).sort()).toEqual([1, 2, 3, 4, 5, 6]);
      });
    });

    describe("definition files", () => {
      const good = { path: "asset-definitions/sales.ts", sourceHash: "s1", status: "ok" as const, loadMs: 12 };

      it("records a good load with its assets", async () => {
        const file = await store.recordFileLoad({
          ...good,
          assets: [{ key: "sales/orders" }],
          checks: [{ name: "orders_not_empty" }],
          warnings: ["w1"],
          problems: [{ code: "UNKNOWN_DEP", message: "no asset sales/x" }],
        });
        expect(file).toMatchObject({
          path: good.path,
          sourceHash: "s1",
          status: "ok",
          error: null,
          warnings: ["w1"],
          problems: [{ code: "UNKNOWN_DEP", message: "no asset sales/x" }],
          assets: [{ key: "sales/orders" }],
          checks: [{ name: "orders_not_empty" }],
          loadMs: 12,
        });
        expect(file.loadedAt).toBeInstanceOf(Date);
        expect(file.lastSuccessAt).toBeInstanceOf(Date);
        expect(await store.listFiles()).toEqual([file]);
        expect(await store.listFileErrors()).toEqual([]);
      });

      it("keeps the last good assets and checks when a load fails, and clears the error on the next success", async () => {
        const ok = await store.recordFileLoad({ ...good, assets: [{ key: "sales/orders" }], checks: [{ name: "c" }] });
        const failed = await store.recordFileLoad({
          ...good,
          sourceHash: "s2",
          status: "error",
          error: { code: "LOAD_SYNTAX", message: "Unexpected token" },
          assets: [{ key: "must-be-ignored" }],
          checks: [],
          loadMs: 3,
        });
        expect(failed).toMatchObject({
          status: "error",
          sourceHash: "s2",
          error: { code: "LOAD_SYNTAX", message: "Unexpected token" },
          assets: [{ key: "sales/orders" }],
          checks: [{ name: "c" }],
          loadMs: 3,
        });
        expect(failed.lastSuccessAt).toEqual(ok.lastSuccessAt);
        expect((await store.listFileErrors()).map((f) => f.path)).toEqual([good.path]);

        const fixed = await store.recordFileLoad({ ...good, sourceHash: "s3", assets: [{ key: "sales/refunds" }] });
        expect(fixed).toMatchObject({ status: "ok", error: null, assets: [{ key: "sales/refunds" }] });
        expect(await store.listFileErrors()).toEqual([]);
      });

      it("records a first load that fails with no assets and no last success", async () => {
        const file = await store.recordFileLoad({
          path: "asset-definitions/broken.ts",
          sourceHash: "x",
          status: "error",
          error: new LoadError("LOAD_TIMEOUT", "import took longer than 60 s"),
          loadMs: 60_000,
        });
        expect(file).toMatchObject({ assets: [], checks: [], warnings: [], problems: [], lastSuccessAt: null });
        expect(file.error).toMatchObject({ name: "LoadError", code: "LOAD_TIMEOUT", message: "import took longer than 60 s" });
      });

      it("rejects a failed load without an error", async () => {
        await expect(store.recordFileLoad({ ...good, status: "error" })).rejects.toBeInstanceOf(InputError);
      });

      it("lists files by path and forgets deleted ones", async () => {
        for (const path of ["b.ts", "a.ts", "c.ts"]) await store.recordFileLoad({ ...good, path });
        expect((await store.listFiles()).map((f) => f.path)).toEqual(["a.ts", "b.ts", "c.ts"]);
        expect(await store.deleteFiles(["a.ts", "c.ts", "missing.ts"])).toBe(2);
        expect(await store.deleteFiles([])).toBe(0);
        expect((await store.listFiles()).map((f) => f.path)).toEqual(["b.ts"]);
      });

      it("replaces every file's problems from one load, clearing those of files not listed", async () => {
        const dup = { code: "GRAPH_DUPLICATE_KEY", message: "b.ts: the key is defined more than once" };
        for (const path of ["a.ts", "b.ts", "c.ts"]) await store.recordFileLoad({ ...good, path, problems: [dup] });
        const before = new Map((await store.listFiles()).map((f) => [f.path, f]));
        await store.replaceProblems(
          new Map([
            ["b.ts", [dup]],
            ["gone.ts", [dup]],
          ]),
        );
        const after = await store.listFiles();
        expect(after.map((f) => [f.path, f.problems])).toEqual([
          ["a.ts", []],
          ["b.ts", [dup]],
          ["c.ts", []],
        ]);
        // Nothing but the problems changes.
        for (const f of after) expect({ ...f, problems: [] }).toEqual({ ...before.get(f.path)!, problems: [] });
        await store.replaceProblems(new Map());
        expect((await store.listFiles()).every((f) => f.problems.length === 0)).toBe(true);
      });

      it("commits a transaction's writes together, and none of them when it throws", async () => {
        await expect(
          store.transaction(async (tx) => {
            await tx.recordFileLoad({ ...good, path: "half.ts" });
            await tx.saveSnapshot({ contentHash: "half", graph: {} });
            throw new Error("failed after two writes");
          }),
        ).rejects.toThrow("failed after two writes");
        expect(await store.listFiles()).toEqual([]);
        expect(await store.latestSnapshot()).toBeUndefined();

        const saved = await store.transaction(async (tx) => {
          await tx.recordFileLoad({ ...good, path: "whole.ts" });
          // A nested transaction joins the outer one.
          return tx.transaction((inner) => inner.saveSnapshot({ contentHash: "whole", graph: {} }));
        });
        expect(saved).toEqual({ version: 1, changed: true });
        expect((await store.listFiles()).map((f) => f.path)).toEqual(["whole.ts"]);
      });
    });

    describe("assets", () => {
      it("upserts assets and marks the missing ones removed", async () => {
        expect(
          await store.syncAssets(1, [
            asset("sales/orders", { groupName: "sales", owner: "team:sales", partitionsHash: "daily" }),
            asset("sales/refunds"),
            asset("raw/events", { isSource: true }),
          ]),
        ).toEqual({ upserted: 3, removed: [] });

        const result = await store.syncAssets(2, [
          asset("sales/orders", { spec: { key: "sales/orders", v: 2 }, owner: "team:finance" }),
          asset("raw/events", { isSource: true }),
        ]);
        expect(result).toEqual({ upserted: 2, removed: ["sales/refunds"] });

        const active = await store.listAssets();
        expect(active.map((a) => a.key)).toEqual(["raw/events", "sales/orders"]);
        expect(active[1]).toMatchObject({
          key: "sales/orders",
          file: "asset-definitions/sales.ts",
          spec: { key: "sales/orders", v: 2 },
          groupName: null,
          owner: "team:finance",
          isSource: false,
          partitionsHash: null,
          firstSeenVersion: 1,
          lastSeenVersion: 2,
          removedAt: null,
          paused: false,
          pausedAt: null,
        });
        expect(active[0]?.isSource).toBe(true);
        const all = await store.listAssets({ includeRemoved: true });
        expect(all.find((a) => a.key === "sales/refunds")?.removedAt).toBeInstanceOf(Date);
      });

      it("revives a removed asset and keeps its first-seen version and pause", async () => {
        await store.syncAssets(1, [asset("a"), asset("b")]);
        await db.updateTable("assets").set({ paused: true, paused_at: new Date() }).where("key", "=", "b").execute();
        await store.syncAssets(2, [asset("a")]);
        expect(await store.syncAssets(3, [asset("a"), asset("b")])).toEqual({ upserted: 2, removed: [] });
        const b = (await store.listAssets()).find((x) => x.key === "b");
        expect(b).toMatchObject({ firstSeenVersion: 1, lastSeenVersion: 3, removedAt: null, paused: true });
      });

      it("ignores a sync for an older version than the table has seen", async () => {
        await store.syncAssets(5, [asset("a", { owner: "new" })]);
        expect(await store.syncAssets(4, [asset("b"), asset("a", { owner: "old" })])).toMatchObject({ removed: [] });
        const assets = await store.listAssets();
        expect(assets.find((x) => x.key === "a")).toMatchObject({ owner: "new", lastSeenVersion: 5 });
      });

      it("syncs thousands of assets in one call", async () => {
        const many = Array.from({ length: 3000 }, (_, i) => asset(`bulk/a${String(i).padStart(4, "0")}`));
        expect((await store.syncAssets(1, many)).upserted).toBe(3000);
        expect(await store.syncAssets(2, many.slice(0, 2990))).toMatchObject({ upserted: 2990 });
        expect(await store.listAssets()).toHaveLength(2990);
      });

      it("removes everything when synced with no assets, and rejects duplicate keys", async () => {
        await store.syncAssets(1, [asset("a")]);
        expect(await store.syncAssets(2, [])).toEqual({ upserted: 0, removed: ["a"] });
        await expect(store.syncAssets(3, [asset("x"), asset("x")])).rejects.toBeInstanceOf(InputError);
      });
    });

    describe("dynamic partitions", () => {
      it("adds keys idempotently and lists them in insertion order", async () => {
        expect(await store.listDynamicPartitions("customers")).toEqual([]);
        expect(await store.addDynamicPartitions("customers", ["c-3", "c-1", "c-2"])).toEqual(["c-3", "c-1", "c-2"]);
        expect(await store.addDynamicPartitions("customers", ["c-2", "c-9", "c-9", "c-3", "c-4"])).toEqual(["c-9", "c-4"]);
        expect(await store.addDynamicPartitions("customers", [])).toEqual([]);
        expect(await store.listDynamicPartitions("customers")).toEqual(["c-3", "c-1", "c-2", "c-9", "c-4"]);
        expect(await store.addDynamicPartitions("regions", ["c-1"])).toEqual(["c-1"]);
        expect(await store.listDynamicPartitions("regions")).toEqual(["c-1"]);
      });

      it("reports each key as new exactly once under concurrency", async () => {
        const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
        const results = await Promise.all(Array.from({ length: 4 }, () => store.addDynamicPartitions("d", keys)));
        expect(results.flat().sort()).toEqual([...keys].sort());
        expect(await store.listDynamicPartitions("d")).toHaveLength(50);
      });

      it("rejects empty keys", async () => {
        await expect(store.addDynamicPartitions("d", ["ok", ""])).rejects.toBeInstanceOf(InputError);
        expect(await store.listDynamicPartitions("d")).toEqual([]);
      });
    });
  });
}

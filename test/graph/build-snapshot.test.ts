import { describe, expect, it } from "vitest";
import { buildSnapshot, canonicalJson, hashSnapshot, type FileDefinitions, type SnapshotAsset } from "../../src/graph/index.js";
import { asset, check, daily, dep } from "../../src/index.js";
import { noop, snap, snapCheck } from "./helpers.js";

const days = daily({ start: "2025-01-01" });
const orders = asset({ key: "sales/orders", partitions: days }, noop);
const revenue = asset({ key: "sales/revenue", partitions: days, deps: { orders } }, noop);
const notEmpty = check(orders, { name: "not_empty" }, () => ({ passed: true }));

const files: FileDefinitions[] = [
  { file: "orders.ts", status: "ok", assets: [snap(orders, "orders.ts", "orders")], checks: [snapCheck(notEmpty, "orders.ts")] },
  { file: "revenue.ts", status: "ok", assets: [snap(revenue, "revenue.ts", "revenue")], checks: [] },
];

/** The same value with every object's keys in reverse order. */
function reorderKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(reorderKeys) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reorderKeys(v)]),
    ) as T;
  }
  return value;
}

describe("canonicalJson", () => {
  it("sorts keys at every level and drops undefined", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: undefined }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"z":1}]},"b":1}');
  });
});

describe("buildSnapshot", () => {
  it("sorts the snapshot and hashes it the same whatever the load order", () => {
    const built = buildSnapshot(files);
    expect(built.graph.assets.map((a) => a.key)).toEqual(["sales/orders", "sales/revenue"]);
    expect(built.graph.checks.map((c) => c.name)).toEqual(["not_empty"]);
    expect(built.contentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(built.problems).toEqual([]);
    const shuffled = buildSnapshot(reorderKeys([...files].reverse()));
    expect(shuffled.contentHash).toBe(built.contentHash);
    expect(hashSnapshot(built.graph)).toBe(built.contentHash);
  });

  it("changes the hash when a definition changes", () => {
    const changed = asset({ key: "sales/revenue", partitions: days, deps: { orders }, priority: 5 }, noop);
    const built = buildSnapshot([files[0]!, { ...files[1]!, assets: [snap(changed, "revenue.ts", "revenue")] }]);
    expect(built.contentHash).not.toBe(buildSnapshot(files).contentHash);
  });

  it("uses the last good definitions of a file that failed to load", () => {
    const failed: FileDefinitions[] = [files[0]!, { file: "revenue.ts", status: "error", assets: [], checks: [] }];
    const previousGood = new Map([["revenue.ts", files[1]!.assets]]);
    const built = buildSnapshot(failed, previousGood);
    expect(built.graph.assets.map((a) => a.key)).toEqual(["sales/orders", "sales/revenue"]);
    expect(built.fallbackFiles).toEqual(["revenue.ts"]);
    expect(built.contentHash).toBe(buildSnapshot(files).contentHash);
    // Without a last good load, the file contributes nothing.
    expect(buildSnapshot(failed).graph.assets.map((a) => a.key)).toEqual(["sales/orders"]);
  });

  it("takes checks from the last good load too, and ignores entries of files that are gone", () => {
    const failed: FileDefinitions[] = [{ file: "orders.ts", status: "error", assets: [], checks: [] }, files[1]!];
    const gone: SnapshotAsset = snap(asset({ key: "old/thing" }, noop), "deleted.ts");
    const previousGood = new Map<string, FileDefinitions | readonly SnapshotAsset[]>([
      ["orders.ts", files[0]!],
      ["deleted.ts", [gone]],
    ]);
    const built = buildSnapshot(failed, previousGood);
    expect(built.graph.assets.map((a) => a.key)).toEqual(["sales/orders", "sales/revenue"]);
    expect(built.graph.checks.map((c) => c.name)).toEqual(["not_empty"]);
  });

  it("prefers a freshly loaded definition to a stand-in from the last good load", () => {
    // orders moved from orders.ts to moved.ts, and orders.ts now fails to load.
    const failed: FileDefinitions[] = [
      { file: "orders.ts", status: "error", assets: [], checks: [] },
      { file: "moved.ts", status: "ok", assets: [snap(orders, "moved.ts", "orders")], checks: [] },
      files[1]!,
    ];
    const built = buildSnapshot(failed, new Map([["orders.ts", files[0]!]]));
    expect(built.graph.assets.find((a) => a.key === "sales/orders")?.file).toBe("moved.ts");
    expect(built.problems).toHaveLength(1);
    expect(built.problems[0]).toMatchObject({ code: "GRAPH_DUPLICATE_KEY", file: "orders.ts" });
    expect(built.problems[0]!.message).toContain("orders.ts failed to load");
  });

  it("keeps a duplicated key's definition in the file it was loaded from, whatever the last good loads hold", () => {
    const copy = asset({ key: "sales/orders" }, noop);
    const withCopy: FileDefinitions[] = [
      ...files,
      { file: "zz/copy.ts", status: "ok", assets: [snap(copy, "zz/copy.ts", "copy")], checks: [] },
    ];
    // Every file's last good load holds its key, the copy's too: only where the key was loaded from decides.
    const previousGood = new Map(withCopy.map((f) => [f.file, { assets: f.assets, checks: f.checks }]));
    const built = buildSnapshot(
      withCopy,
      previousGood,
      new Map([
        ["sales/orders", "orders.ts"],
        ["sales/revenue", "revenue.ts"],
      ]),
    );
    expect(built.graph.assets.map((a) => [a.key, a.file])).toEqual([
      ["sales/orders", "orders.ts"],
      ["sales/revenue", "revenue.ts"],
    ]);
    expect(built.problems.map((p) => [p.code, p.file, p.files])).toEqual([
      ["GRAPH_DUPLICATE_KEY", "zz/copy.ts", ["orders.ts", "zz/copy.ts"]],
    ]);
    expect(built.problems[0]!.message).toContain(
      'zz/copy.ts: asset "sales/orders": the key is defined more than once, in orders.ts (export orders) and zz/copy.ts (export copy)',
    );
    expect(built.problems[0]!.message).toContain(
      "The definition in orders.ts (export orders) is kept because the key was loaded from there before",
    );
    expect(built.contentHash).toBe(buildSnapshot(files).contentHash);

    // With no previous load, neither definition is loaded, nor anything reading the key.
    const fresh = buildSnapshot(withCopy, previousGood);
    expect(fresh.graph.assets).toEqual([]);
    expect(fresh.problems.map((p) => [p.code, p.file])).toEqual([
      ["GRAPH_DUPLICATE_KEY", "orders.ts"],
      ["GRAPH_UPSTREAM_EXCLUDED", "orders.ts"], // its check
      ["GRAPH_UPSTREAM_EXCLUDED", "revenue.ts"],
      ["GRAPH_DUPLICATE_KEY", "zz/copy.ts"],
    ]);
  });

  it("keeps the stand-in of a failing file against a new copy of its key when the key was loaded from it", () => {
    const copy = asset({ key: "sales/orders" }, noop);
    const failed: FileDefinitions[] = [
      { file: "orders.ts", status: "error", assets: [], checks: [] },
      { file: "zz/copy.ts", status: "ok", assets: [snap(copy, "zz/copy.ts", "copy")], checks: [] },
      files[1]!,
    ];
    const built = buildSnapshot(failed, new Map([["orders.ts", files[0]!]]), new Map([["sales/orders", "orders.ts"]]));
    expect(built.graph.assets.map((a) => [a.key, a.file])).toEqual([
      ["sales/orders", "orders.ts"],
      ["sales/revenue", "revenue.ts"],
    ]);
    expect(built.problems).toHaveLength(1);
    expect(built.problems[0]).toMatchObject({ code: "GRAPH_DUPLICATE_KEY", file: "zz/copy.ts" });
    expect(built.problems[0]!.message).toContain("orders.ts fails to load now, so its last good definitions stand in");
  });

  it("excludes invalid assets and their dependents and keeps everything else", () => {
    const broken = asset({ key: "broken", deps: { nope: dep("sales/ordrs") } }, noop);
    const downstream = asset({ key: "downstream", deps: { broken } }, noop);
    const built = buildSnapshot([
      ...files,
      { file: "broken.ts", status: "ok", assets: [snap(broken, "broken.ts"), snap(downstream, "broken.ts")], checks: [] },
    ]);
    expect(built.graph.assets.map((a) => a.key)).toEqual(["sales/orders", "sales/revenue"]);
    expect(built.problems.map((p) => [p.code, p.assetKey])).toEqual([
      ["GRAPH_UNKNOWN_DEPENDENCY", "broken"],
      ["GRAPH_UPSTREAM_EXCLUDED", "downstream"],
    ]);
    expect(built.contentHash).toBe(buildSnapshot(files).contentHash);
  });
});

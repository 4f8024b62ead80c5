import { describe, expect, it } from "vitest";
import { analyzeGraph, validateGraph, type GraphProblem } from "../../src/graph/index.js";
import { allPartitions, asset, check, daily, dep, hourly, lastPartition, timeWindow } from "../../src/index.js";
import { noop, snap, snapCheck } from "./helpers.js";

const days = daily({ start: "2025-01-01" });
const hours = hourly({ start: "2025-01-01" });

function only(problems: GraphProblem[], code: string): GraphProblem[] {
  return problems.filter((p) => p.code === code);
}

describe("validateGraph", () => {
  it("accepts a valid graph", () => {
    const orders = asset({ key: "sales/orders", partitions: days }, noop);
    const revenue = asset({ key: "sales/revenue", partitions: days, deps: { orders } }, noop);
    expect(validateGraph([snap(orders, "orders.ts"), snap(revenue, "revenue.ts")])).toEqual([]);
  });

  it("finds a cycle across two files and prints its path and files", () => {
    const a = asset({ key: "a", deps: { b: dep("b") } }, noop);
    const b = asset({ key: "b", deps: { a: dep("a") } }, noop);
    const problems = validateGraph([snap(a, "one.ts"), snap(b, "two.ts")]);
    expect(problems.map((p) => [p.code, p.assetKey, p.file, p.field])).toEqual([
      ["GRAPH_CYCLE", "a", "one.ts", "deps.b"],
      ["GRAPH_CYCLE", "b", "two.ts", "deps.a"],
    ]);
    expect(problems[0]!.message).toContain('"a" (one.ts) → "b" (two.ts) → "a" (one.ts)');
    expect(problems[1]!.message).toContain('"b" (two.ts) → "a" (one.ts) → "b" (two.ts)');
    expect(problems[0]!.files).toEqual(["one.ts", "two.ts"]);
  });

  it("finds longer cycles and leaves the rest of the graph alone", () => {
    const a = asset({ key: "a", deps: { c: dep("c") } }, noop);
    const b = asset({ key: "b", deps: { a: dep("a") } }, noop);
    const c = asset({ key: "c", deps: { b: dep("b") } }, noop);
    const ok = asset({ key: "ok" }, noop);
    const analysis = analyzeGraph([snap(a, "a.ts"), snap(b, "b.ts"), snap(c, "c.ts"), snap(ok, "ok.ts")]);
    expect(only(analysis.problems, "GRAPH_CYCLE")).toHaveLength(3);
    expect(analysis.problems[0]!.message).toContain('"a" (a.ts) → "b" (b.ts) → "c" (c.ts) → "a" (a.ts)');
    expect(analysis.assets.map((x) => x.key)).toEqual(["ok"]);
  });

  it("names both files and exports of a duplicate key, and loads neither", () => {
    const one = asset({ key: "sales/orders" }, noop);
    const two = asset({ key: "sales/orders" }, noop);
    const analysis = analyzeGraph([snap(one, "a.ts", "orders"), snap(two, "b.ts", "ordersCopy")]);
    const problems = only(analysis.problems, "GRAPH_DUPLICATE_KEY");
    expect(problems).toHaveLength(2);
    for (const p of problems) {
      expect(p.message).toContain("a.ts (export orders) and b.ts (export ordersCopy)");
      expect(p.files).toEqual(["a.ts", "b.ts"]);
    }
    expect(analysis.assets).toEqual([]);
  });

  it("keeps the definition of a duplicate key that was there at the last good load", () => {
    const one = asset({ key: "sales/orders" }, noop);
    const analysis = analyzeGraph([snap(one, "a.ts"), snap(one, "copy.ts")], [], {
      previousFileOf: new Map([["sales/orders", "a.ts"]]),
    });
    expect(analysis.assets.map((a) => a.file)).toEqual(["a.ts"]);
    expect(analysis.problems).toHaveLength(1);
    expect(analysis.problems[0]).toMatchObject({ code: "GRAPH_DUPLICATE_KEY", file: "copy.ts", assetKey: "sales/orders" });
    expect(analysis.problems[0]!.message).toContain(
      "The definition in a.ts (export sales_orders) is kept because the key was loaded from there before",
    );
  });

  it("names the asset, the dep field and the nearest key of an unknown dependency", () => {
    const orders = asset({ key: "sales/orders" }, noop);
    const summary = asset({ key: "sales/summary", deps: { orders: dep("sales/ordrs") } }, noop);
    const report = asset({ key: "report", deps: { orders: dep("orders") } }, noop);
    const problems = validateGraph([snap(orders, "orders.ts"), snap(summary, "summary.ts"), snap(report, "report.ts")]);
    expect(problems.map((p) => [p.code, p.assetKey, p.field])).toEqual([
      ["GRAPH_UNKNOWN_DEPENDENCY", "report", "deps.orders"],
      ["GRAPH_UNKNOWN_DEPENDENCY", "sales/summary", "deps.orders"],
    ]);
    expect(problems[1]!.message).toBe(
      'summary.ts: asset "sales/summary": field "deps.orders": depends on "sales/ordrs", which no definitions file defines; did you mean "sales/orders"?',
    );
    expect(problems[0]!.message).toContain('did you mean "sales/orders"?');
  });

  it("does not suggest a key that is nothing like the unknown one", () => {
    const a = asset({ key: "sales/orders" }, noop);
    const b = asset({ key: "b", deps: { x: dep("marketing/campaigns") } }, noop);
    const [p] = validateGraph([snap(a, "a.ts"), snap(b, "b.ts")]);
    expect(p!.message).not.toContain("did you mean");
  });

  it("requires a stated mapping when a daily asset would read many hourly partitions", () => {
    const feed = asset({ key: "raw/feed", partitions: hours }, noop);
    const daily_ = asset({ key: "daily", partitions: days, deps: { feed } }, noop);
    const [p] = validateGraph([snap(feed, "feed.ts"), snap(daily_, "daily.ts")]);
    expect(p).toMatchObject({ code: "GRAPH_MAPPING_REQUIRED", assetKey: "daily", field: "deps.feed", file: "daily.ts" });
    expect(p!.message).toContain("dep(feed, timeWindow())");
    const stated = asset({ key: "daily", partitions: days, deps: { feed: dep(feed, timeWindow()) } }, noop);
    expect(validateGraph([snap(feed, "feed.ts"), snap(stated, "daily.ts")])).toEqual([]);
  });

  it("lets an hourly asset read its daily upstream without a mapping", () => {
    const day = asset({ key: "day", partitions: days }, noop);
    const hour = asset({ key: "hour", partitions: hours, deps: { day } }, noop);
    expect(validateGraph([snap(day, "day.ts"), snap(hour, "hour.ts")])).toEqual([]);
  });

  it("requires a stated mapping when an unpartitioned asset reads a partitioned one", () => {
    const orders = asset({ key: "orders", partitions: days }, noop);
    const total = asset({ key: "total", deps: { orders } }, noop);
    const [p] = validateGraph([snap(orders, "orders.ts"), snap(total, "total.ts")]);
    expect(p).toMatchObject({ code: "GRAPH_MAPPING_REQUIRED", assetKey: "total", field: "deps.orders" });
    expect(p!.message).toContain("dep(orders, allPartitions())");
    expect(p!.message).toContain("lastPartition()");
    const all = asset({ key: "total", deps: { orders: dep(orders, allPartitions()) } }, noop);
    expect(validateGraph([snap(orders, "orders.ts"), snap(all, "total.ts")])).toEqual([]);
    const last = asset({ key: "total", deps: { orders: dep(orders, lastPartition()) } }, noop);
    expect(validateGraph([snap(orders, "orders.ts"), snap(last, "total.ts")])).toEqual([]);
  });

  it("rejects a mapping between windows in different time zones", () => {
    const berlin = asset({ key: "berlin", partitions: daily({ start: "2025-01-01", timezone: "Europe/Berlin" }) }, noop);
    const utc = asset({ key: "utc", partitions: days, deps: { berlin } }, noop);
    const [p] = validateGraph([snap(berlin, "berlin.ts"), snap(utc, "utc.ts")]);
    expect(p).toMatchObject({ code: "GRAPH_INCOMPATIBLE_MAPPING", assetKey: "utc", field: "deps.berlin", files: ["berlin.ts", "utc.ts"] });
    expect(p!.message).toMatch(/Europe\/Berlin/);
  });

  it("names the check and the asset of a check on an unknown asset", () => {
    const orders = asset({ key: "sales/orders" }, noop);
    const c = check("sales/order", { name: "not_empty" }, () => ({ passed: true }));
    const [p] = validateGraph([snap(orders, "orders.ts")], [snapCheck(c, "checks.ts")]);
    expect(p).toMatchObject({ code: "GRAPH_UNKNOWN_CHECK_ASSET", checkName: "not_empty", assetKey: "sales/order", file: "checks.ts" });
    expect(p!.message).toBe(
      'checks.ts: asset "sales/order": check "not_empty" is attached to this asset, which no definitions file defines; did you mean "sales/orders"?',
    );
  });

  it("excludes everything downstream of an excluded asset, naming the cause", () => {
    const a = asset({ key: "a", deps: { gone: dep("gone") } }, noop);
    const b = asset({ key: "b", deps: { a: dep("a") } }, noop);
    const c = asset({ key: "c", deps: { b: dep("b") } }, noop);
    const fine = asset({ key: "fine" }, noop);
    const checkOfC = check("c", { name: "c_ok" }, () => ({ passed: true }));
    const analysis = analyzeGraph(
      [snap(c, "c.ts"), snap(b, "b.ts"), snap(a, "a.ts"), snap(fine, "fine.ts")],
      [snapCheck(checkOfC, "c.ts")],
    );
    expect(analysis.assets.map((x) => x.key)).toEqual(["fine"]);
    expect(analysis.checks).toEqual([]);
    const byKey = Object.fromEntries(analysis.problems.filter((p) => !p.checkName).map((p) => [p.assetKey, p]));
    expect(byKey.a!.code).toBe("GRAPH_UNKNOWN_DEPENDENCY");
    expect(byKey.b!.code).toBe("GRAPH_UPSTREAM_EXCLUDED");
    expect(byKey.b!.message).toContain('"a", is excluded (GRAPH_UNKNOWN_DEPENDENCY in a.ts)');
    expect(byKey.c!.message).toContain('"b", is excluded (GRAPH_UNKNOWN_DEPENDENCY at asset "a" in a.ts)');
    expect(analysis.problems.find((p) => p.checkName === "c_ok")?.code).toBe("GRAPH_UPSTREAM_EXCLUDED");
  });

  it("excludes dependents of a duplicated key", () => {
    const one = asset({ key: "x" }, noop);
    const reader = asset({ key: "reader", deps: { x: dep("x") } }, noop);
    const analysis = analyzeGraph([snap(one, "a.ts"), snap(one, "b.ts"), snap(reader, "r.ts")]);
    expect(analysis.assets).toEqual([]);
    expect(analysis.problems.find((p) => p.assetKey === "reader")?.code).toBe("GRAPH_UPSTREAM_EXCLUDED");
  });

  it("gives the same problems whatever the input order", () => {
    const a = asset({ key: "a", deps: { b: dep("b") } }, noop);
    const b = asset({ key: "b", deps: { a: dep("a") } }, noop);
    const d1 = asset({ key: "d" }, noop);
    const input = [snap(a, "a.ts"), snap(b, "b.ts"), snap(d1, "d1.ts"), snap(d1, "d2.ts")];
    expect(validateGraph([...input].reverse())).toEqual(validateGraph(input));
  });

  it("handles a long chain without deep recursion", () => {
    const assets = Array.from({ length: 20_000 }, (_, i) =>
      snap(asset({ key: `k${i}`, ...(i > 0 ? { deps: { up: dep(`k${i - 1}`) } } : {}) }, noop), `f${i}.ts`),
    );
    expect(validateGraph(assets)).toEqual([]);
  });
});

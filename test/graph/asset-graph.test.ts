import { describe, expect, it } from "vitest";
import { AssetGraph } from "../../src/graph/index.js";
import { asset, check, dep, GraphError } from "../../src/index.js";
import { noop, snap, snapCheck } from "./helpers.js";

//   raw/a ──► sales/b ──► sales/d ──► report/e
//   raw/c ──────────────────┘
const a = asset({ key: "raw/a" }, noop);
const c = asset({ key: "raw/c" }, noop);
const b = asset({ key: "sales/b", deps: { a } }, noop);
const d = asset({ key: "sales/d", deps: { b, c } }, noop);
const e = asset({ key: "report/e", group: "finance", deps: { d: dep("sales/d") } }, noop);
const graph = new AssetGraph(
  [snap(e, "e.ts"), snap(d, "d.ts"), snap(c, "c.ts"), snap(b, "b.ts"), snap(a, "a.ts")],
  [
    snapCheck(
      check(b, { name: "not_empty" }, () => ({ passed: true })),
      "b.ts",
    ),
  ],
);

describe("AssetGraph", () => {
  it("looks assets up by key and keeps them sorted", () => {
    expect(graph.keys()).toEqual(["raw/a", "raw/c", "report/e", "sales/b", "sales/d"]);
    expect(graph.get("sales/b")?.file).toBe("b.ts");
    expect(graph.get("nope")).toBeUndefined();
    expect(graph.has("raw/a")).toBe(true);
    expect(graph.size).toBe(5);
  });

  it("suggests the nearest key for an unknown one", () => {
    expect(() => graph.require("sales/dd")).toThrowError(/no asset has the key "sales\/dd"; did you mean "sales\/d"\?/);
    try {
      graph.require("b");
    } catch (err) {
      expect(err).toBeInstanceOf(GraphError);
      expect((err as GraphError).code).toBe("GRAPH_UNKNOWN_ASSET");
      expect((err as GraphError).message).toContain('did you mean "sales/b"?');
    }
  });

  it("gives direct upstream and downstream", () => {
    expect(graph.upstreamKeys("sales/d")).toEqual(["raw/c", "sales/b"]);
    expect(graph.downstreamKeys("sales/d")).toEqual(["report/e"]);
    expect(graph.upstreamOf("sales/b").map((x) => x.key)).toEqual(["raw/a"]);
    expect(graph.downstreamOf("raw/a").map((x) => x.key)).toEqual(["sales/b"]);
    expect(graph.downstreamEdges("sales/d")).toEqual([
      { downstreamKey: "report/e", dep: { name: "d", assetKey: "sales/d", mapping: null } },
    ]);
  });

  it("gives transitive closures, optionally limited in depth", () => {
    expect([...graph.ancestors("report/e")].sort()).toEqual(["raw/a", "raw/c", "sales/b", "sales/d"]);
    expect([...graph.ancestors("report/e", { depth: 1 })]).toEqual(["sales/d"]);
    expect([...graph.descendants("raw/a")].sort()).toEqual(["report/e", "sales/b", "sales/d"]);
    expect(graph.descendants("report/e").size).toBe(0);
  });

  it("orders topologically, the same way every time", () => {
    expect(graph.topologicalOrder()).toEqual(["raw/a", "raw/c", "sales/b", "sales/d", "report/e"]);
    expect(graph.topologicalOrder(["report/e", "raw/a"])).toEqual(["raw/a", "report/e"]);
    const reversed = new AssetGraph([...graph.assets].reverse(), graph.checks);
    expect(reversed.topologicalOrder()).toEqual(graph.topologicalOrder());
  });

  it("selects keys with + expansion, globs and groups", () => {
    expect(graph.select("sales/d")).toEqual(["sales/d"]);
    expect(graph.select("+sales/d")).toEqual(["raw/a", "raw/c", "sales/b", "sales/d"]);
    expect(graph.select("1+sales/d")).toEqual(["raw/c", "sales/b", "sales/d"]);
    expect(graph.select("sales/b+")).toEqual(["sales/b", "sales/d", "report/e"]);
    expect(graph.select("sales/b+1")).toEqual(["sales/b", "sales/d"]);
    expect(graph.select("raw/*")).toEqual(["raw/a", "raw/c"]);
    expect(graph.select("group:finance, raw/a")).toEqual(["raw/a", "report/e"]);
    expect(graph.select(["raw/c", "+sales/b"])).toEqual(["raw/a", "raw/c", "sales/b"]);
    expect(graph.select("*")).toHaveLength(5);
  });

  it("rejects selections that match nothing, naming what was meant", () => {
    expect(() => graph.select("+sales/orders")).toThrowError(/no asset has the key "sales\/orders"/);
    expect(() => graph.select("group:financ")).toThrowError(/did you mean "finance"/);
    expect(() => graph.select("nothing/*")).toThrowError(/no asset key matches "nothing\/\*"/);
  });

  it("lists groups and checks", () => {
    expect(Object.fromEntries(graph.groups())).toEqual({
      finance: ["report/e"],
      raw: ["raw/a", "raw/c"],
      sales: ["sales/b", "sales/d"],
    });
    expect(graph.checksFor("sales/b").map((x) => x.name)).toEqual(["not_empty"]);
    expect(graph.checksFor("raw/a")).toEqual([]);
  });

  it("builds from a snapshot and refuses duplicate keys", () => {
    expect(AssetGraph.fromSnapshot({ assets: graph.assets, checks: [] }).keys()).toEqual(graph.keys());
    expect(() => new AssetGraph([snap(a, "a.ts"), snap(a, "a2.ts")])).toThrowError(/defined twice: in a.ts .* and in a2.ts/);
  });

  it("reports a cycle instead of ordering it", () => {
    const x = { ...snap(asset({ key: "x", deps: { y: dep("y") } }, noop), "x.ts") };
    const y = { ...snap(asset({ key: "y", deps: { x: dep("x") } }, noop), "y.ts") };
    expect(() => new AssetGraph([x, y]).topologicalOrder()).toThrowError(/dependency cycle/);
  });
});

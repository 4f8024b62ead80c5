import { describe, expect, expectTypeOf, it } from "vitest";
import { asset, daily, DefinitionError, type AssetDefinition, type MapItem } from "../../src/index.js";

const days = daily({ start: "2025-01-01" });
const listing = asset({ key: "f/listing", partitions: days }, async () => ({ files: ["a.csv", "b.csv"] }));

describe("fan-out declarations (map, mapLabel, maxMapItems, ctx.expand)", () => {
  it("types ctx.map from the items map answers, and downstream receives an array of outputs", () => {
    const parsed = asset(
      {
        key: "f/parsed",
        partitions: days,
        deps: { listing },
        map: ({ listing }) => listing?.files ?? [],
        mapLabel: (file) => file.toUpperCase(),
      },
      async (ctx) => {
        expectTypeOf(ctx.map).toEqualTypeOf<MapItem<string>>();
        return { file: ctx.map.item, rows: 1 };
      },
    );
    expectTypeOf(parsed).toEqualTypeOf<AssetDefinition<{ file: string; rows: number }[]>>();
    expect(parsed.spec.fanOut).toEqual({ declared: true, maxItems: 10_000 });
    expect(typeof parsed.fanOut.map).toBe("function");
    expect(typeof parsed.fanOut.label).toBe("function");
    // The functions are never part of the stored spec.
    expect(JSON.stringify(parsed.spec)).not.toContain("toUpperCase");
  });

  it("a function that may return ctx.expand(…) gives downstream an array of what its mapped runs return", () => {
    const found = asset({ key: "f/found", maxMapItems: 50 }, async (ctx) => (ctx.map ? Number(ctx.map.item) * 2 : ctx.expand([1, 2, 3])));
    expectTypeOf(found).toEqualTypeOf<AssetDefinition<number[]>>();
    expect(found.spec.fanOut).toEqual({ declared: false, maxItems: 50 });
    const plain = asset({ key: "f/plain" }, () => 1);
    expect(plain.spec.fanOut).toBeUndefined();
    expect(plain.fanOut).toEqual({});
  });

  it("rejects a bad fan-out declaration naming the asset and field", () => {
    const noop = () => 1;
    const bad: [string, () => unknown, RegExp][] = [
      ["map not a function", () => asset({ key: "f/b1", map: [1, 2] as never }, noop), /f\/b1[\s\S]*map[\s\S]*must be a function/],
      ["mapLabel without map", () => asset({ key: "f/b2", mapLabel: (() => "x") as never }, noop), /asset "f\/b2": field "mapLabel"/],
      ["maxMapItems 0", () => asset({ key: "f/b3", maxMapItems: 0 }, noop), /f\/b3[\s\S]*maxMapItems/],
      ["maxMapItems over the limit", () => asset({ key: "f/b4", maxMapItems: 100_001 }, noop), /f\/b4[\s\S]*maxMapItems/],
      ["maxMapItems not whole", () => asset({ key: "f/b5", maxMapItems: 2.5 }, noop), /f\/b5[\s\S]*maxMapItems/],
    ];
    for (const [what, build, message] of bad) {
      let thrown: unknown;
      try {
        build();
      } catch (err) {
        thrown = err;
      }
      expect(thrown, what).toBeInstanceOf(DefinitionError);
      expect((thrown as Error).message, what).toMatch(message);
    }
  });
});

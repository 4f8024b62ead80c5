import { describe, expectTypeOf, it } from "vitest";
import {
  allPartitions,
  asset,
  daily,
  dep,
  hourly,
  identity,
  lastPartition,
  sourceAsset,
  timeWindow,
  type AssetDefinition,
  type SourceObservation,
} from "../../src/index.js";

// These tests are checked by `tsc` (part of `npm test`); at run time they only
// build the definitions.
const days = daily({ start: "2025-01-01" });
const orders = asset({ key: "t/orders", partitions: days }, async () => ({ rows: 3, day: "x" }));
const clicks = asset({ key: "t/clicks", partitions: hourly({ start: "2025-01-01" }) }, () => 7);
const feed = sourceAsset({ key: "t/feed", partitions: days });

describe("asset types", () => {
  it("infers the output type from the function", () => {
    expectTypeOf(orders).toEqualTypeOf<AssetDefinition<{ rows: number; day: string }>>();
    expectTypeOf(clicks).toEqualTypeOf<AssetDefinition<number>>();
  });

  it("types each dependency argument from its asset and mapping", () => {
    asset(
      {
        key: "t/report",
        partitions: days,
        deps: {
          today: orders,
          same: dep(orders, identity()),
          latest: dep(orders, lastPartition()),
          week: dep(orders, timeWindow({ startOffset: -6 })),
          hours: dep(clicks, timeWindow()),
          everything: dep(orders, allPartitions()),
          feed,
          untyped: dep<{ n: number }>("t/elsewhere"),
        },
      },
      (ctx, inputs) => {
        expectTypeOf(inputs.today).toEqualTypeOf<{ rows: number; day: string }>();
        expectTypeOf(inputs.same).toEqualTypeOf<{ rows: number; day: string }>();
        expectTypeOf(inputs.latest).toEqualTypeOf<{ rows: number; day: string }>();
        expectTypeOf(inputs.week).toEqualTypeOf<{ rows: number; day: string }[]>();
        expectTypeOf(inputs.hours).toEqualTypeOf<number[]>();
        expectTypeOf(inputs.everything).toEqualTypeOf<{ rows: number; day: string }[]>();
        expectTypeOf(inputs.feed).toEqualTypeOf<SourceObservation>();
        expectTypeOf(inputs.untyped).toEqualTypeOf<{ n: number }>();
        expectTypeOf(ctx.partition.key).toBeString();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        return null;
      },
    );
  });

  it("rejects misuse at compile time", () => {
    // Never called: these lines exist for tsc, and would throw at run time.
    const compileOnly = () => {
    asset({ key: "t/bad", deps: { orders } }, (_ctx, { orders: o }) => {
      // @ts-expect-error orders is an object, not an array
      o.map((x: unknown) => x);
      return 1;
    });
    // @ts-expect-error no such dependency
    asset({ key: "t/bad2", deps: { orders } }, (_ctx, { nope }) => nope);
    // @ts-expect-error unknown config field
    asset({ key: "t/typo", schedule: "daily" }, () => 1);
    // @ts-expect-error a mapping is not an asset
    dep(identity());
    };
    expectTypeOf(compileOnly).toBeFunction();
  });
});

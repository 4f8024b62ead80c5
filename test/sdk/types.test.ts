import { describe, expectTypeOf, it } from "vitest";
import {
  allPartitions,
  asset,
  check,
  daily,
  dep,
  hourly,
  identity,
  lastPartition,
  sourceAsset,
  timeWindow,
  type AssetDefinition,
  type Dep,
  type InputsOf,
  type JsonValue,
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
        // A partition an outside producer reported (`tributary report`) has no stored value: it arrives as null.
        expectTypeOf(inputs.today).toEqualTypeOf<{ rows: number; day: string } | null>();
        expectTypeOf(inputs.same).toEqualTypeOf<{ rows: number; day: string } | null>();
        expectTypeOf(inputs.latest).toEqualTypeOf<{ rows: number; day: string } | null>();
        expectTypeOf(inputs.week).toEqualTypeOf<({ rows: number; day: string } | null)[]>();
        expectTypeOf(inputs.hours).toEqualTypeOf<(number | null)[]>();
        expectTypeOf(inputs.everything).toEqualTypeOf<({ rows: number; day: string } | null)[]>();
        expectTypeOf(inputs.feed).toEqualTypeOf<SourceObservation | null>();
        expectTypeOf(inputs.untyped).toEqualTypeOf<{ n: number } | null>();
        expectTypeOf(ctx.partition.key).toBeString();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        return null;
      },
    );
  });

  it("makes a reader handle a partition reported from outside, which has no stored value", () => {
    const week = dep<{ rows: number }>("t/elsewhere", timeWindow({ startOffset: -6 }));
    expectTypeOf(week).toEqualTypeOf<Dep<({ rows: number } | null)[]>>();
    expectTypeOf<InputsOf<{ orders: typeof orders }>["orders"]>().toEqualTypeOf<{ rows: number; day: string } | null>();
    expectTypeOf<SourceObservation["payload"]>().toEqualTypeOf<JsonValue>();
    // Never called: these lines exist for tsc.
    const compileOnly = () => {
      asset({ key: "t/unchecked", partitions: days, deps: { orders } }, (_ctx, { orders: o }) => {
        // @ts-expect-error the day may have been reported by an outside producer: o is null then
        return o.rows;
      });
      asset(
        { key: "t/unchecked_week", partitions: days, deps: { week: dep(orders, timeWindow({ startOffset: -6 })) } },
        (_ctx, { week: w }) =>
          // @ts-expect-error a reported day of the window is null
          w.reduce((n, o) => n + o.rows, 0),
      );
      asset({ key: "t/unchecked_feed", partitions: days, deps: { feed } }, (_ctx, { feed: f }) => {
        // @ts-expect-error a source partition reported (not observed) has no observation
        return f.observedAt;
      });
      check(orders, { name: "unchecked" }, (_ctx, value) => ({
        // @ts-expect-error a check of a reported partition receives null
        passed: value.rows > 0,
      }));
    };
    expectTypeOf(compileOnly).toBeFunction();
    // Handled, each compiles and keeps its type.
    asset({ key: "t/handled", partitions: days, deps: { orders, week: dep(orders, timeWindow({ startOffset: -6 })), feed } }, (_ctx, i) => {
      const rows: number = i.orders?.rows ?? 0;
      const weekRows: number = i.week.reduce((n, o) => n + (o?.rows ?? 0), 0);
      const seen: string | null = i.feed === null ? null : i.feed.observedAt;
      return { rows, weekRows, seen };
    });
    check(orders, { name: "handled" }, (_ctx, value) => ({ passed: value !== null && value.rows > 0 }));
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

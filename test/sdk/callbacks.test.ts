import { describe, expect, expectTypeOf, it } from "vitest";
import { asset, DefinitionError, type AssetContext, type RetryInfo, type StepFailure } from "../../src/index.js";

const noop = async () => null;

describe("asset callbacks (onSuccess, onFailure, onRetry)", () => {
  it("are kept on the definition, with their time limit, and never serialised into the spec", () => {
    const onFailure = async (_ctx: AssetContext, _error: StepFailure) => {};
    const plain = asset({ key: "c/plain" }, noop);
    const hooked = asset({ key: "c/plain", onFailure, callbackTimeout: "5s" }, noop);
    expect(hooked.callbacks.onFailure).toBe(onFailure);
    expect(hooked.callbacks.timeoutMs).toBe(5_000);
    expect(plain.callbacks).toEqual({ timeoutMs: 30_000 });
    // The spec (what snapshots hash) is the same with or without callbacks.
    expect(hooked.spec).toEqual(plain.spec);
    expect(JSON.stringify(hooked.spec)).not.toContain("onFailure");
    // with() keeps them unless changed.
    expect(hooked.with({ priority: 3 }).callbacks.onFailure).toBe(onFailure);
    const onSuccess = () => {};
    expect(hooked.with({ onSuccess }).callbacks).toMatchObject({ onSuccess, onFailure, timeoutMs: 5_000 });
    expect(Object.isFrozen(hooked.callbacks)).toBe(true);
  });

  it("rejects a callback that is not a function, naming the asset and the field", () => {
    const bad = () => asset({ key: "c/bad", onRetry: "page me" as never }, noop);
    expect(bad).toThrow(DefinitionError);
    expect(bad).toThrow(/c\/bad/);
    expect(bad).toThrow(/onRetry/);
    expect(bad).toThrow(/must be a function/);
    expect(() => asset({ key: "c/bad", onSuccess: () => {}, callbackTimeout: "soon" as never }, noop)).toThrow(/callbackTimeout/);
  });

  it("types the arguments", () => {
    asset(
      {
        key: "c/typed",
        onSuccess: (ctx) => {
          expectTypeOf(ctx).toEqualTypeOf<AssetContext>();
        },
        onFailure: (_ctx, error) => {
          expectTypeOf(error).toEqualTypeOf<StepFailure>();
        },
        // Any return value is fine (e.g. a fetch promise): it is ignored.
        onRetry: async (_ctx, _error, retry) => {
          expectTypeOf(retry).toEqualTypeOf<RetryInfo>();
          return 42;
        },
      },
      noop,
    );
  });
});

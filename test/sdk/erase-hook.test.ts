import { describe, expect, expectTypeOf, it } from "vitest";
import { asset, DefinitionError, sourceAsset, type EraseContext, type EraseTarget } from "../../src/index.js";

const noop = async () => null;

describe("an asset's erase hook", () => {
  it("is kept on the definition; the spec only says that there is one, with its time limit", () => {
    const erase = async (_ctx: EraseContext, _target: EraseTarget) => {};
    const plain = asset({ key: "e/plain" }, noop);
    const hooked = asset({ key: "e/plain", erase }, noop);
    expect(hooked.erase).toBe(erase);
    expect(plain.erase).toBeUndefined();
    expect(plain.spec.erase).toBeUndefined();
    expect(hooked.spec.erase).toEqual({ timeoutMs: 600_000 });
    expect(asset({ key: "e/plain", erase, eraseTimeout: "30s" }, noop).spec.erase).toEqual({ timeoutMs: 30_000 });
    expect(JSON.stringify(hooked.spec)).not.toContain("async");
    // with() keeps it.
    expect(hooked.with({ priority: 3 }).erase).toBe(erase);
  });

  it("rejects a hook that is not a function or a bad time limit, naming the asset and the field", () => {
    const bad = () => asset({ key: "e/bad", erase: "delete it" as never }, noop);
    expect(bad).toThrow(DefinitionError);
    expect(bad).toThrow(/e\/bad/);
    expect(bad).toThrow(/erase/);
    expect(bad).toThrow(/must be a function/);
    expect(() => asset({ key: "e/bad", erase: noop, eraseTimeout: "soon" as never }, noop)).toThrow(/eraseTimeout/);
    // A source asset holds no data Tributary wrote: it takes no erase hook.
    expect(() => sourceAsset({ key: "e/source", erase: noop } as never)).toThrow(/erase/);
  });

  it("types the arguments", () => {
    asset(
      {
        key: "e/typed",
        erase: (ctx, target) => {
          expectTypeOf(ctx).toEqualTypeOf<EraseContext>();
          expectTypeOf(target.partitions).toEqualTypeOf<readonly string[]>();
        },
      },
      noop,
    );
  });
});

describe("an asset's retention", () => {
  it("says how long its outputs, logs and history are kept, from 1h to 3650d, naming the field when it is wrong", () => {
    expect(asset({ key: "r/kept", retention: { outputs: "30d" } }, noop).spec.retention).toEqual({ outputsMs: 30 * 86_400_000 });
    expect(asset({ key: "r/plain" }, noop).spec.retention).toBeUndefined();
    expect(asset({ key: "r/logs", retention: { logs: "14d" } }, noop).spec.retention).toEqual({ logsMs: 14 * 86_400_000 });
    expect(() => asset({ key: "r/logs", retention: { logs: "5000d" } }, noop)).toThrow(
      'asset "r/logs": field "retention.logs": "5000d" must be between 1h and 3650d',
    );
    expect(() => asset({ key: "r/short", retention: { outputs: "10m" } }, noop)).toThrow(
      'asset "r/short": field "retention.outputs": "10m" must be between 1h and 3650d',
    );
    expect(() => asset({ key: "r/bad", retention: { outputs: "soon" } as never }, noop)).toThrow(/retention\.outputs/);
    expect(asset({ key: "r/history", retention: { history: "90d", logs: "7d" } }, noop).spec.retention).toEqual({
      historyMs: 90 * 86_400_000,
      logsMs: 7 * 86_400_000,
    });
    expect(() => asset({ key: "r/history", retention: { history: "30m" } }, noop)).toThrow(
      'asset "r/history": field "retention.history": "30m" must be between 1h and 3650d',
    );
    expect(() => asset({ key: "r/unknown", retention: { runs: "90d" } as never }, noop)).toThrow(/retention/);
  });
});

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { at, BUILT_IN_TRIGGER_KINDS, fileExists, type TriggerSpec } from "../../src/sdk/index.js";
import { builtInTriggers, checkTrigger, defineTriggerCheck, TriggerError, type TriggerRegistry } from "../../src/trigger-checks/index.js";

const now = new Date("2025-03-15T12:00:00Z");

async function rejection(promise: Promise<unknown>): Promise<TriggerError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TriggerError);
  return err as TriggerError;
}

describe("checkTrigger", () => {
  const registry = builtInTriggers();

  it("registers every kind the SDK declares", () => {
    expect(Object.keys(registry).sort()).toEqual([...BUILT_IN_TRIGGER_KINDS].sort());
  });

  it("at: fires once the clock reaches the instant", async () => {
    const spec = at("2025-03-15T12:00:00Z");
    const before = await checkTrigger(spec, { now: new Date("2025-03-15T11:59:59Z") }, { timeoutMs: 1000, registry });
    expect(before).toMatchObject({ fired: false });
    expect(await checkTrigger(spec, { now }, { timeoutMs: 1000, registry })).toEqual({
      fired: true,
      payload: { at: "2025-03-15T12:00:00.000Z" },
    });
  });

  it("rejects an unknown kind, naming it and the known kinds", async () => {
    const err = await rejection(checkTrigger({ kind: "fileExistz", args: {} }, { now }, { timeoutMs: 1000, registry }));
    expect(err.code).toBe("TRIGGER_KIND_UNKNOWN");
    expect(err.message).toContain('"fileExistz"');
    for (const kind of BUILT_IN_TRIGGER_KINDS) expect(err.message).toContain(kind);
    // Not fooled by Object.prototype.
    expect((await rejection(checkTrigger({ kind: "toString", args: {} }, { now }, { timeoutMs: 1000, registry }))).code).toBe(
      "TRIGGER_KIND_UNKNOWN",
    );
  });

  it("rejects bad args, naming the field", async () => {
    const err = await rejection(
      checkTrigger({ kind: "httpOk", args: { url: "http://x", status: 42 } }, { now }, { timeoutMs: 1000, registry }),
    );
    expect(err.code).toBe("TRIGGER_ARGS_INVALID");
    expect(err.message).toContain("args.status");
    expect(err.location?.field).toBe("args.status");
    const missing = await rejection(checkTrigger({ kind: "fileExists", args: {} }, { now }, { timeoutMs: 1000, registry }));
    expect(missing.code).toBe("TRIGGER_ARGS_INVALID");
    expect(missing.message).toContain("args.path");
  });

  it("rejects a template field the partition does not have, before running the check", async () => {
    const err = await rejection(
      checkTrigger(fileExists("/in/{start}.csv"), { partition: { key: "eu" }, now, assetKey: "sales" }, { timeoutMs: 1000, registry }),
    );
    expect(err.code).toBe("TRIGGER_TEMPLATE_FIELD_MISSING");
    expect(err.message).toContain("/in/{start}.csv");
    expect(err.message).toContain("{start}");
    expect(err.message).toContain("trigger fileExists args.path");
    expect(err.location).toMatchObject({ partitionKey: "eu", field: "args.path" });
  });

  describe("with user-defined kinds", () => {
    let started = 0;
    let abortedWith: unknown;
    const custom: TriggerRegistry = {
      throws: defineTriggerCheck({
        schema: z.object({}),
        check: async () => {
          throw new Error("partner API said 500");
        },
      }),
      throwsSync: defineTriggerCheck({
        schema: z.object({}),
        check: () => {
          throw new RangeError("not even a promise");
        },
      }),
      hangs: defineTriggerCheck({
        schema: z.object({}),
        check: (_args, { signal }) => {
          started += 1;
          return new Promise(() => {
            signal.addEventListener("abort", () => {
              abortedWith = signal.reason;
            });
          });
        },
      }),
      malformed: defineTriggerCheck({
        schema: z.object({}),
        check: async () => ({ fired: true, payload: new Map() }) as never,
      }),
      echo: defineTriggerCheck({
        schema: z.object({ where: z.string(), n: z.number().default(7) }),
        templateArgs: ["where"],
        check: async (args) => ({ fired: true, payload: { where: args.where, n: args.n } }),
      }),
    };
    const spec = (kind: string, args: Record<string, unknown> = {}): TriggerSpec => ({ kind, args });

    it("wraps what a check throws as TRIGGER_CHECK_FAILED with the cause", async () => {
      const err = await rejection(checkTrigger(spec("throws"), { now, assetKey: "a" }, { timeoutMs: 1000, registry: custom }));
      expect(err.code).toBe("TRIGGER_CHECK_FAILED");
      expect(err.message).toContain("partner API said 500");
      expect((err.cause as Error).message).toBe("partner API said 500");
      expect(err.location).toMatchObject({ assetKey: "a" });
      const sync = await rejection(checkTrigger(spec("throwsSync"), { now }, { timeoutMs: 1000, registry: custom }));
      expect(sync.code).toBe("TRIGGER_CHECK_FAILED");
      expect(sync.cause).toBeInstanceOf(RangeError);
    });

    it("times out a hanging check and aborts its signal", async () => {
      const err = await rejection(checkTrigger(spec("hangs"), { now }, { timeoutMs: 50, registry: custom }));
      expect(err.code).toBe("TRIGGER_CHECK_TIMEOUT");
      expect(err.message).toContain("50 ms");
      expect(started).toBe(1);
      expect(abortedWith).toBe(err);
    });

    it("stops when the caller aborts", async () => {
      const controller = new AbortController();
      const pending = checkTrigger(spec("hangs"), { now, signal: controller.signal }, { timeoutMs: 60_000, registry: custom });
      controller.abort(new Error("shutting down"));
      const err = await rejection(pending);
      expect(err.code).toBe("TRIGGER_CHECK_ABORTED");
      expect(err.message).toContain("shutting down");
    });

    it("does not start a check when the caller has already aborted", async () => {
      const before = started;
      const err = await rejection(
        checkTrigger(spec("hangs"), { now, signal: AbortSignal.abort(new Error("lease lost")) }, { timeoutMs: 60_000, registry: custom }),
      );
      expect(err.code).toBe("TRIGGER_CHECK_ABORTED");
      expect(started).toBe(before);
    });

    it("rejects a result that is not a check result", async () => {
      const err = await rejection(checkTrigger(spec("malformed"), { now }, { timeoutMs: 1000, registry: custom }));
      expect(err.code).toBe("TRIGGER_CHECK_FAILED");
    });

    it("validates, defaults and renders the args of a custom check", async () => {
      const result = await checkTrigger(
        spec("echo", { where: "s3://b/{partition}" }),
        { partition: { key: "eu" }, now },
        {
          timeoutMs: 1000,
          registry: custom,
        },
      );
      expect(result).toEqual({ fired: true, payload: { where: "s3://b/eu", n: 7 } });
    });
  });
});

import { describe, expect, it } from "vitest";
import {
  asset,
  check,
  daily,
  dep,
  DefinitionError,
  eager,
  fileExists,
  onCron,
  parseDuration,
  sourceAsset,
  timeWindow,
} from "../../src/index.js";
import { definitionKind } from "../../src/sdk/index.js";

const days = daily({ start: "2025-01-01" });
const noop = async () => null;

function errorOf(fn: () => unknown): DefinitionError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

describe("asset()", () => {
  it("serialises a full config into a frozen spec with defaults", () => {
    const a = asset(
      {
        key: "sales/orders",
        partitions: days,
        automation: onCron("0 1 * * *"),
        pool: "warehouse",
        retries: { max: 3, delay: "5m", backoff: "exponential" },
        timeout: "1h",
        owner: "team:sales",
      },
      noop,
    );
    expect(a.key).toBe("sales/orders");
    expect(definitionKind(a)).toBe("asset");
    expect(a.spec).toMatchObject({
      key: "sales/orders",
      kind: "asset",
      group: "sales",
      owner: "team:sales",
      pool: "warehouse",
      priority: 0,
      retries: { max: 3, delayMs: 300_000, backoff: "exponential", maxDelayMs: null, jitter: false },
      timeoutMs: 3_600_000,
      triggerRule: "all_success",
      executor: "local",
      automation: { kind: "cron", cron: "0 1 * * *", timezone: null },
    });
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.spec)).toBe(true);
    expect(Object.isFrozen(a.spec.retries)).toBe(true);
    expect(() => {
      (a.spec as { key: string }).key = "x";
    }).toThrow();
    expect(JSON.parse(JSON.stringify(a.spec))).toEqual(a.spec);
  });

  it("records the file that defined it", () => {
    const a = asset({ key: "x/y" }, noop);
    expect(a.definedIn).toMatch(/test\/sdk\/asset\.test\.ts$/);
  });

  it("`retries: 3` is short for { max: 3 }", () => {
    expect(asset({ key: "a", retries: 3 }, noop).spec.retries.max).toBe(3);
  });

  it("with() returns a changed copy and leaves the original alone", () => {
    const a = asset({ key: "a", priority: 1 }, noop);
    const b = a.with({ priority: 5 });
    expect(a.spec.priority).toBe(1);
    expect(b.spec.priority).toBe(5);
    expect(b.fn).toBe(a.fn);
  });

  it("turns deps into specs with their mappings", () => {
    const up = asset({ key: "s/up", partitions: days }, noop);
    const down = asset(
      { key: "s/down", partitions: days, automation: eager(), deps: { plain: up, week: dep("s/other", timeWindow({ startOffset: -6 })) } },
      noop,
    );
    expect(down.spec.deps).toEqual([
      { name: "plain", assetKey: "s/up", mapping: null },
      { name: "week", assetKey: "s/other", mapping: { kind: "timeWindow", startOffset: -6, endOffset: 0 } },
    ]);
  });

  it.each([
    ["an invalid key", { key: "Sales Orders" }, "key"],
    ["a missing key", {}, "key"],
    ["an unknown field", { key: "a", schedule: "daily" }, "schedule"],
    ["a bad duration", { key: "a", timeout: "ten minutes" }, "timeout"],
    ["a negative priority type", { key: "a", priority: "high" }, "priority"],
    ["an unknown trigger rule", { key: "a", triggerRule: "most_success" }, "triggerRule"],
    ["a bad retry backoff", { key: "a", retries: { max: 1, backoff: "random" } }, "retries.backoff"],
    ["a Date in metadata", { key: "a", metadata: { at: new Date() } }, "metadata"],
    ["a function in metadata", { key: "a", metadata: { f: () => 1 } }, "metadata"],
    [
      "a circular metadata value",
      (() => {
        const m: Record<string, unknown> = {};
        m.self = m;
        return { key: "a", metadata: m };
      })(),
      "metadata",
    ],
    ["a bad partitions value", { key: "a", partitions: "daily" }, "partitions"],
  ])("rejects %s, naming the field", (_what, config, field) => {
    const err = errorOf(() => asset(config as never, noop));
    expect(err.location?.field).toContain(field);
    if (typeof (config as { key?: unknown }).key === "string") expect(err.message).toContain(`"${(config as { key: string }).key}"`);
  });

  it("rejects an undefined dependency (a circular import) naming the dep", () => {
    const err = errorOf(() => asset({ key: "a", deps: { up: undefined as never } }, noop));
    expect(err.message).toContain('field "deps.up"');
    expect(err.message).toContain("circular import");
  });

  it("rejects self-dependencies", () => {
    expect(errorOf(() => asset({ key: "a", deps: { me: dep("a") } }, noop)).message).toContain("itself");
  });

  it("allows reading one upstream through several mappings", () => {
    const a = asset({ key: "a", deps: { today: dep("b"), week: dep("b", timeWindow({ startOffset: -6 })) } }, noop);
    expect(a.spec.deps.map((d) => d.name)).toEqual(["today", "week"]);
  });

  it("requires a function", () => {
    expect(errorOf(() => asset({ key: "a" }, undefined as never)).message).toContain("asset function");
  });
});

describe("automation and triggers", () => {
  it("rejects an invalid cron", () => {
    expect(errorOf(() => onCron("61 * * * *")).code).toBe("DEFINITION_INVALID_CRON");
    expect(errorOf(() => onCron("every day")).message).toContain("5-field");
  });

  it("builds source assets with an observation trigger", () => {
    const s = sourceAsset({ key: "partner/feed", partitions: days, observe: fileExists("/landing/{partition}.csv"), pollInterval: "5m" });
    expect(s.spec.kind).toBe("source");
    expect(s.spec.observe).toEqual({ kind: "fileExists", args: { path: "/landing/{partition}.csv" } });
    expect(s.spec.pollIntervalMs).toBe(300_000);
    expect(s.fn).toBeUndefined();
  });

  it("declares checks against an asset", () => {
    const a = asset({ key: "a" }, noop);
    const c = check(a, { name: "not_empty", blocking: true }, () => ({ passed: true }));
    expect(c.spec).toEqual({ assetKey: "a", name: "not_empty", blocking: true, severity: "error", description: null, partitions: null });
    expect(definitionKind(c)).toBe("check");
  });
});

describe("parseDuration", () => {
  it.each([
    ["90s", 90_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["250ms", 250],
    ["2d", 172_800_000],
    [1500, 1500],
  ])("%s", (input, ms) => expect(parseDuration(input, "f")).toBe(ms));

  it.each(["", "5 minutes", "-1s", "1w", Number.NaN, -5])("rejects %s", (input) => {
    expect(() => parseDuration(input, "timeout")).toThrow(/field "timeout"/);
  });
});

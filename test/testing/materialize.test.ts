import { describe, expect, expectTypeOf, it } from "vitest";
import {
  allPartitions,
  asset,
  check,
  daily,
  dep,
  fileExists,
  staticPartitions,
  timeWindow,
  weekly,
  type AssetDefinition,
} from "../../src/index.js";
import { buildContext, materializeInMemory, MaterializeError } from "../../src/testing/index.js";

const days = daily({ start: "2025-03-01", timezone: "UTC" });
const NOW = "2025-04-01T00:00:00Z";

const rawOrders = asset({ key: "shop/raw_orders", partitions: days }, (ctx) => {
  ctx.log.info("reading the day", { day: ctx.partition.key });
  return { day: ctx.partition.key, rows: Number(ctx.partition.key.slice(-2)) };
});
const rowsNotEmpty = check(rawOrders, { name: "not_empty", blocking: true }, (_ctx, value) => ({
  passed: (value?.rows ?? 0) > 0,
  metadata: { rows: value?.rows ?? 0 },
}));
const trailing = asset(
  { key: "shop/trailing_3d", partitions: days, deps: { orders: dep(rawOrders, timeWindow({ startOffset: -2 })) } },
  (_ctx, { orders }) => ({ days: orders.map((o) => o?.day ?? null), rows: orders.reduce((n, o) => n + (o?.rows ?? 0), 0) }),
);
const weeklyRows = asset(
  { key: "shop/weekly_rows", partitions: weekly({ start: "2025-03-03", timezone: "UTC" }), deps: { orders: dep(rawOrders, timeWindow()) } },
  (ctx, { orders }) => ({ week: ctx.partition.key, days: orders.length, window: ctx.partition.window!.start.toISOString() }),
);

describe("materializeInMemory", () => {
  it("runs the selection in dependency order with the real partition maths, and types the outputs", async () => {
    const result = await materializeInMemory([rawOrders, trailing], { from: "2025-03-01", to: "2025-03-03", now: NOW });
    expect(result.success).toBe(true);
    expect(result.steps.filter((s) => s.check === undefined).map((s) => [s.assetKey, s.partitionKey, s.status])).toEqual([
      ["shop/raw_orders", "2025-03-01", "success"],
      ["shop/raw_orders", "2025-03-02", "success"],
      ["shop/raw_orders", "2025-03-03", "success"],
      ["shop/trailing_3d", "2025-03-01", "success"],
      ["shop/trailing_3d", "2025-03-02", "success"],
      ["shop/trailing_3d", "2025-03-03", "success"],
    ]);
    // The checks declared on an asset's definition come with it.
    expect(result.checks.map((c) => [c.name, c.partitionKey, c.passed])).toEqual([
      ["not_empty", "2025-03-01", true],
      ["not_empty", "2025-03-02", true],
      ["not_empty", "2025-03-03", true],
    ]);
    // A time window receives its days in partition order; the first day's window starts with the partitions.
    expect(result.output(trailing, "2025-03-01")).toEqual({ days: ["2025-03-01"], rows: 1 });
    expect(result.output(trailing, "2025-03-03")).toEqual({ days: ["2025-03-01", "2025-03-02", "2025-03-03"], rows: 6 });
    // Days read but neither planned nor given: nothing runs.
    const partial = await materializeInMemory([rawOrders, trailing], { partition: "2025-03-10", now: NOW }).catch((e: Error) => e);
    expect((partial as Error).message).toMatch(/reads "shop\/raw_orders" partition "2025-03-08" \(input "orders"\)/);
    const withUpstream = await materializeInMemory([trailing], {
      partition: "2025-03-10",
      now: NOW,
      upstreams: { "shop/raw_orders": (day: string) => ({ day, rows: 1 }) },
    });
    const out = withUpstream.output(trailing, "2025-03-10");
    expectTypeOf(out).toEqualTypeOf<{ days: (string | null)[]; rows: number }>();
    expect(out).toEqual({ days: ["2025-03-08", "2025-03-09", "2025-03-10"], rows: 3 });
    expect(result.logs(rawOrders, "2025-03-02")).toEqual([
      expect.objectContaining({ level: "info", message: "reading the day", fields: { day: "2025-03-02" } }),
    ]);
  });

  it("maps a daily range to the weeks that read it, and hands each week its days and window", async () => {
    const result = await materializeInMemory([rawOrders, weeklyRows], { from: "2025-03-03", to: "2025-03-09", now: NOW });
    expect([...result.outputs(weeklyRows).keys()]).toEqual(["2025-03-03"]);
    expect(result.output(weeklyRows, "2025-03-03")).toEqual({ week: "2025-03-03", days: 7, window: "2025-03-03T00:00:00.000Z" });
    expect(result.outputs(rawOrders).size).toBe(7);
  });

  it("runs the assets' checks, and a failed blocking check keeps the partition's readers from running", async () => {
    const empty = asset({ key: "shop/raw_orders", partitions: days }, (ctx) => ({ day: ctx.partition.key, rows: 0 }));
    const reader = asset({ key: "shop/reader", partitions: days, deps: { orders: empty } }, () => 1);
    const notEmpty = check(empty, { name: "not_empty", blocking: true }, (_ctx, v) => ({ passed: (v?.rows ?? 0) > 0 }));
    const failing = await materializeInMemory([empty, notEmpty, reader], { partition: "2025-03-10", now: NOW, raiseOnError: false });
    expect(failing.success).toBe(false);
    expect(failing.checks).toEqual([
      {
        assetKey: "shop/raw_orders",
        name: "not_empty",
        partitionKey: "2025-03-10",
        blocking: true,
        passed: false,
        metadata: {},
        error: null,
      },
    ]);
    expect(failing.step(reader, "2025-03-10").status).toBe("upstream_failed");
    expect(() => failing.output(reader, "2025-03-10")).toThrow(
      /asset "shop\/reader" partition "2025-03-10" has no output: it ended upstream_failed/,
    );
    // Raised by default, with the result on the error.
    const raised = await materializeInMemory([empty, notEmpty, reader], { partition: "2025-03-10", now: NOW }).catch((e: unknown) => e);
    expect(raised).toBeInstanceOf(MaterializeError);
    expect((raised as MaterializeError).message).toMatch(/check "not_empty" of asset "shop\/raw_orders" partition "2025-03-10"/);
    expect((raised as MaterializeError).result.step(empty, "2025-03-10").status).toBe("success");

    const passing = await materializeInMemory([rawOrders, rowsNotEmpty], { partition: "2025-03-10", now: NOW });
    expect(passing.checks.map((c) => [c.name, c.passed, c.metadata])).toEqual([["not_empty", true, { rows: 10 }]]);
  });

  it("fans out with map and ctx.expand, gathering the outputs in item order", async () => {
    const files = asset({ key: "landing/files" }, () => ({ paths: ["a.csv", "b.csv", "c.csv"] }));
    const parsed = asset(
      { key: "landing/parsed", deps: { files }, map: ({ files }) => files?.paths ?? [] },
      (ctx) => `parsed ${String(ctx.map.item)}`,
    );
    const counted = asset({ key: "landing/counted", deps: { parsed } }, (_ctx, { parsed }) => parsed?.length ?? 0);
    const expanded = asset({ key: "landing/expanded" }, (ctx) =>
      ctx.map ? Number(ctx.map.item) * 2 : ctx.expand([1, 2], { label: (n) => `n${n}` }),
    );
    const result = await materializeInMemory([files, parsed, counted, expanded]);
    expect(result.output(parsed)).toEqual(["parsed a.csv", "parsed b.csv", "parsed c.csv"]);
    expect(result.output(counted)).toBe(3);
    expect(result.output(expanded)).toEqual([2, 4]);
    expect(result.steps.filter((s) => s.assetKey === "landing/parsed" && s.mapIndex !== undefined).map((s) => s.mapIndex)).toEqual([
      0, 1, 2,
    ]);
  });

  it("resolves deferred waits with the test's payload, entering the function again as after the trigger fires", async () => {
    let entries = 0;
    const waiting = asset({ key: "landing/waiting" }, async (ctx) => {
      entries++;
      const file = await ctx.defer<{ path: string }>(fileExists("/landing/today.csv"), { timeout: "1h" });
      return { entries, path: file.path };
    });
    const resolved = await materializeInMemory([waiting], {
      triggers: { resolve: (trigger) => ({ path: String(trigger.args["path"]) }) },
    });
    expect(resolved.output(waiting)).toEqual({ entries: 2, path: "/landing/today.csv" });
    const unresolved = await materializeInMemory([waiting]);
    expect(unresolved.success).toBe(false);
    expect(unresolved.step(waiting)).toMatchObject({
      status: "deferred",
      trigger: { kind: "fileExists", args: { path: "/landing/today.csv" } },
    });
  });

  it("passes poke and reschedule waits with the test's payload, and checks their trigger for real without one", async () => {
    const missing = "/nonexistent/landing/today.csv";
    const rescheduled = asset({ key: "landing/rescheduled" }, async (ctx) =>
      ctx.waitFor<{ path: string }>(fileExists(missing), { mode: "reschedule", interval: "5m" }),
    );
    const poked = asset({ key: "landing/poked" }, async (ctx) =>
      ctx.waitFor<{ path: string }>(fileExists(missing), { mode: "poke", interval: "1s", timeout: "1s" }),
    );
    const answered = await materializeInMemory([rescheduled, poked], { triggers: { resolve: (t) => ({ path: t.args["path"] }) } });
    expect(answered.output(rescheduled)).toEqual({ path: missing });
    expect(answered.output(poked)).toEqual({ path: missing });
    expect(answered.logs(poked).map((l) => l.message)).toContain("wait on trigger fileExists answered without a check");

    const checked = await materializeInMemory([rescheduled, poked], { raiseOnError: false });
    expect(checked.step(rescheduled)).toMatchObject({ status: "rescheduled", reason: expect.stringMatching(/^checks again at /) });
    expect(checked.step(poked)).toMatchObject({ status: "failed", error: { message: expect.stringMatching(/past its timeout/) } });
  });

  it("reads secrets from the map given, masks them in the logs, and follows skips down all_success", async () => {
    const loader = asset({ key: "crm/loader", partitions: staticPartitions(["eu", "us"]) }, async (ctx) => {
      if (ctx.partition.key === "us") ctx.skip("no US data yet");
      const token = await ctx.secrets.get("CRM_TOKEN");
      ctx.log.info(`connected with ${token}`);
      return token.length;
    });
    const reader = asset({ key: "crm/reader", partitions: staticPartitions(["eu", "us"]), deps: { loader } }, (_ctx, { loader }) => loader);
    const result = await materializeInMemory([loader, reader], { partitions: ["eu", "us"], secrets: { CRM_TOKEN: "s3cret-token-value" } });
    expect(result.output(reader, "eu")).toBe(18);
    expect(result.logs(loader, "eu").map((l) => l.message)).toEqual(["connected with ***"]);
    expect(result.step(loader, "us")).toMatchObject({ status: "skipped", reason: "no US data yet" });
    expect(result.step(reader, "us").status).toBe("skipped");
    const missing = await materializeInMemory([loader], { partition: "eu", secrets: {}, raiseOnError: false });
    expect(missing.step(loader, "eu").error?.message).toMatch(
      /secret "CRM_TOKEN" is not set: looked in the secrets given to materializeInMemory/,
    );
  });

  it("stops a function at its timeout through ctx.signal", async () => {
    const slow = asset(
      { key: "slow/asset", timeout: "100ms" },
      (ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error))),
    );
    const result = await materializeInMemory([slow], { raiseOnError: false });
    expect(result.step(slow).error).toMatchObject({ code: "STEP_TIMEOUT" });
  });

  it("fails a step whose value cannot be stored, as a worker does", async () => {
    const dated = asset({ key: "t/dated" }, () => ({ at: new Date("2025-03-10T00:00:00Z") }));
    await expect(materializeInMemory([dated])).rejects.toThrow(/asset "t\/dated" .*cannot be stored as JSON: value at output\.at \(a Date/);
    const big = asset({ key: "t/big" }, () => ({ n: 10n }));
    const result = await materializeInMemory([big], { raiseOnError: false });
    expect(result.step(big)).toMatchObject({ status: "failed", error: { code: "OUTPUT_NOT_SERIALIZABLE" } });
  });

  describe("bad input", () => {
    it("an unknown asset in upstreams, with the nearest key", async () => {
      await expect(
        materializeInMemory([trailing], { partition: "2025-03-10", now: NOW, upstreams: { "shop/raw_order": 1 } }),
      ).rejects.toThrow('options.upstreams: "shop/raw_order" is not one of the assets given (did you mean "shop/raw_orders"?)');
    });

    it("a partition outside the space, naming the asset and what exists", async () => {
      await expect(materializeInMemory([rawOrders], { partition: "2024-12-31", now: NOW })).rejects.toThrow(
        /asset "shop\/raw_orders": "2024-12-31" is not a partition of daily\(start 2025-03-01, UTC\).*"2025-03-01" … "2025-03-31"/,
      );
      await expect(materializeInMemory([rawOrders], { partition: "2025-05-01", now: NOW })).rejects.toThrow(/2025-05-01/);
    });

    it("a missing upstream value, naming the reader, the upstream and the partition before any function runs", async () => {
      let ran = false;
      const reader = asset({ key: "shop/reader", partitions: days, deps: { orders: rawOrders } }, () => (ran = true));
      await expect(materializeInMemory([reader], { partition: "2025-03-10", now: NOW })).rejects.toThrow(
        'asset "shop/reader" partition "2025-03-10" reads "shop/raw_orders" partition "2025-03-10" (input "orders"), which is not materialised here and has no value',
      );
      await expect(
        materializeInMemory([reader], { partition: "2025-03-10", now: NOW, upstreams: { "shop/raw_orders": () => undefined } }),
      ).rejects.toThrow(/options\.upstreams\["shop\/raw_orders"\] gave undefined for it/);
      expect(ran).toBe(false);
    });

    it("an upstream named by key only, whose definition is not given", async () => {
      const reader = asset({ key: "shop/reader", deps: { orders: dep("shop/elsewhere") } }, () => 1);
      await expect(materializeInMemory([reader], { upstreams: {} })).rejects.toThrow(/shop\/elsewhere/);
    });

    it("a cycle in the selection", async () => {
      const a = asset({ key: "cyc/a", deps: { b: dep("cyc/b") } }, () => 1);
      const b = asset({ key: "cyc/b", deps: { a } }, () => 2);
      await expect(materializeInMemory([a, b])).rejects.toThrow(/cycle/i);
    });

    it("options that contradict each other, and a list that holds something else", async () => {
      await expect(materializeInMemory([rawOrders], { partition: "2025-03-10", from: "2025-03-01", to: "2025-03-02" })).rejects.toThrow(
        "options: give one of partition, partitions or from/to",
      );
      await expect(materializeInMemory([rawOrders, undefined])).rejects.toThrow(/item 1 is undefined, not an asset/);
      await expect(materializeInMemory([], {})).rejects.toThrow(/nothing to materialise/);
      await expect(materializeInMemory([rawOrders], { partiton: "x" } as never)).rejects.toThrow(/options: Unrecognized key.*partiton/);
    });
  });
});

describe("buildContext", () => {
  it("gives a function its partition, window, log and secrets", async () => {
    const ctx = buildContext({ asset: trailing, partition: "2025-03-10", secrets: { KEY: "abcdefgh" } });
    expect(ctx.partition.key).toBe("2025-03-10");
    expect(ctx.partition.window?.start.toISOString()).toBe("2025-03-10T00:00:00.000Z");
    const value = await (trailing as AssetDefinition).fn!(ctx, { orders: [{ day: "2025-03-10", rows: 4 }, null] });
    expect(value).toEqual({ days: ["2025-03-10", null], rows: 4 });
    expect(await ctx.secrets.get("KEY")).toBe("abcdefgh");
    ctx.log.warn("with abcdefgh");
    expect(ctx.logs.map((l) => [l.level, l.message])).toEqual([["warn", "with ***"]]);
    expect(() => ctx.skip("nothing today")).toThrow();
    expect(ctx.skipReason).toBe("nothing today");
  });

  it("answers waits with the given payload, and says how when none is given", async () => {
    const withPayload = buildContext({ asset: trailing, partition: "2025-03-10", triggers: { resolve: { ok: true } } });
    expect(await withPayload.defer(fileExists("/x"))).toEqual({ ok: true });
    const without = buildContext({ asset: trailing, partition: "2025-03-10" });
    await expect(without.defer(fileExists("/x"))).rejects.toThrow(
      /would wait for the trigger; give buildContext\(\{ triggers: \{ resolve: payload \} \}\)/,
    );
  });

  it("refuses a partition the asset does not have", () => {
    expect(() => buildContext({ asset: trailing, partition: "2024-01-01" })).toThrow(
      '"2024-01-01" is not a partition of asset "shop/trailing_3d"',
    );
    expect(() => buildContext({ asset: trailing })).toThrow(/is partitioned: give options.partition/);
    const unpartitioned = asset({ key: "u/one", deps: { all: dep(rawOrders, allPartitions()) } }, () => 1);
    expect(() => buildContext({ asset: unpartitioned, partition: "x" })).toThrow(/is not partitioned/);
  });
});

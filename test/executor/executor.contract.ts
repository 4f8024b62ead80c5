import { mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Executor, StepDispatch } from "../../src/execution/index.js";
import { dispatch, errorOf, FakeBackend, readLog, removeTempDirs, SDK_PATH, tempDir, waitUntil } from "./helpers.js";

export interface ContractOptions {
  /** Steps it runs at once in total. */
  readonly capacity: number;
  readonly killGraceMs: number;
  readonly heartbeatIntervalMs: number;
}

export type MakeExecutor = (backend: FakeBackend, options: ContractOptions) => Executor & { ready?: () => Promise<void> };

// Secrets come from the environment; workers inherit it when they start.
process.env["TRIBUTARY_TEST_SECRET"] = "s3cret";
// The largest output a step may return (workers inherit it): 1 MB here.
process.env["TRIBUTARY_MAX_OUTPUT_BYTES"] = String(1024 * 1024);
delete process.env["TRIBUTARY_TEST_NO_SUCH_SECRET"];

/** Where poke and reschedule waits look for files (worker processes start before the test runs, so not from the env). */
const POKE_DIR = path.join(os.tmpdir(), `tributary-poke-${process.pid}`);

/** Asset functions for every behaviour the contract checks. The SDK is imported by path, so both executors can load it. */
const DEFINITIONS = `
import { asset, at, fileExists, assetMaterialized, triggerKind } from ${JSON.stringify(SDK_PATH)};

export const echo = asset({ key: "t/echo" }, async (ctx, inputs) => ({
  inputs,
  assetKey: ctx.assetKey,
  runId: ctx.run.id,
  tryNumber: ctx.tryNumber,
  partition: {
    key: ctx.partition.key,
    windowIsDates: ctx.partition.window ? ctx.partition.window.start instanceof Date && ctx.partition.window.end instanceof Date : null,
    start: ctx.partition.window ? ctx.partition.window.start.toISOString() : null,
    end: ctx.partition.window ? ctx.partition.window.end.toISOString() : null,
    dimensions: ctx.partition.dimensions ?? null,
  },
}));
export const nothing = asset({ key: "t/nothing" }, async () => undefined);
export const noop = asset({ key: "t/noop" }, () => 1);
export const throws = asset({ key: "t/throws" }, async () => {
  throw new TypeError("bad rows in the feed");
});
export const throwsString = asset({ key: "t/throws_string" }, () => {
  throw "a plain string";
});
class Money { constructor(public cents: number) {} }
const circular: Record<string, unknown> = { name: "loop" };
circular["self"] = circular;
export const returnsDate = asset({ key: "t/date" }, async () => ({ rows: [{ id: 1 }, { id: 2, at: new Date(0) }] }));
export const returnsBigInt = asset({ key: "t/bigint" }, async () => ({ total: 10n }));
export const returnsFunction = asset({ key: "t/function" }, async () => ({ run: () => 1 }));
export const returnsInstance = asset({ key: "t/instance" }, async () => ({ price: new Money(5) }));
export const returnsCircular = asset({ key: "t/circular" }, async () => ({ graph: circular }));
export const returnsNaN = asset({ key: "t/nan" }, async () => ({ ratio: 0 / 0 }));
export const skips = asset({ key: "t/skips" }, async (ctx) => ctx.skip("no data"));
export const skipsCaught = asset({ key: "t/skips_caught" }, async (ctx) => {
  try { ctx.skip("nothing new"); } catch { /* user code swallowing everything */ }
  return 1;
});
export const waits = asset({ key: "t/waits" }, async (ctx) => {
  ctx.log.info("waiting for the signal");
  await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  ctx.log.info("signal aborted", { code: (ctx.signal.reason as { code?: string }).code });
  return "too late";
});
// Long enough to be still running when a test closes the executor on seeing its start, which a worker reports up to
// 100 ms late; short enough to end within that test's grace period.
export const sleeps = asset({ key: "t/sleeps" }, async () => {
  await new Promise((resolve) => setTimeout(resolve, 400));
  return "slept";
});
export const ignoresSignal = asset({ key: "t/ignores_signal" }, async (ctx) => {
  ctx.log.info("ignoring the signal");
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  return "finally";
});
export const secret = asset({ key: "t/secret" }, async (ctx) => ctx.secrets.get("TRIBUTARY_TEST_SECRET"));
export const missingSecret = asset({ key: "t/missing_secret" }, async (ctx) => ctx.secrets.get("TRIBUTARY_TEST_NO_SUCH_SECRET"));
export const tooBig = asset({ key: "t/too_big" }, async () => "x".repeat(1536 * 1024));
export const leaksSecret = asset({ key: "t/leaks_secret" }, async (ctx) => {
  const password = await ctx.secrets.get("TRIBUTARY_TEST_SECRET");
  ctx.log.info("connecting with " + password, { dsn: "postgres://app:" + password + "@db/x" });
  console.log("password is", password);
  throw new Error("login failed for password " + password);
});
export const defers = asset({ key: "t/defers" }, async (ctx) => {
  const first = await ctx.defer(at("2030-01-01T00:00:00Z"), { timeout: "2h", interval: "30s", softFail: true });
  const second = await ctx.defer(fileExists("/landing/{partition}.csv"));
  return { first, second };
});
export const defersCaught = asset({ key: "t/defers_caught" }, async (ctx) => {
  try { await ctx.defer(at("2030-01-01T00:00:00Z")); } catch { /* user code swallowing everything */ }
  return "not deferred?";
});
export const defersBadly = asset({ key: "t/defers_badly" }, async (ctx) => ctx.defer(at("2030-01-01T00:00:00Z"), { timeout: "soon" }));
export const alwaysThere = triggerKind({ kind: "alwaysThere", check: async (args) => ({ fired: true, payload: { seen: args.name } }) });
export const pokesCustom = asset({ key: "t/pokes_custom" }, async (ctx) => ctx.waitFor(alwaysThere({ name: "x" }), { mode: "poke" }));
export const defersUnknown = asset({ key: "t/defers_unknown" }, async (ctx) => ctx.defer({ kind: "partnerReady", args: {} }));
export const defersNothing = asset({ key: "t/defers_nothing" }, async (ctx) => ctx.defer("a file" as never));
export const pokes = asset({ key: "t/pokes" }, async (ctx) =>
  ctx.waitFor(fileExists(${JSON.stringify(POKE_DIR)} + "/{partition}.csv"), { mode: "poke", interval: "100ms", timeout: "20s" }));
export const pokesInVain = asset({ key: "t/pokes_in_vain" }, async (ctx) =>
  ctx.waitFor(assetMaterialized("t/never"), { mode: "poke", interval: "100ms", timeout: "350ms", softFail: true }));
export const pokesUpstream = asset({ key: "t/pokes_upstream" }, async (ctx) =>
  ctx.waitFor(assetMaterialized("t/up", { partition: "p1" }), { mode: "poke", interval: "100ms", timeout: "5s" }));
export const reschedules = asset({ key: "t/reschedules" }, async (ctx) =>
  ctx.waitFor(fileExists(${JSON.stringify(POKE_DIR)} + "/{partition}.csv"), { mode: "reschedule", interval: "1m", timeout: "1h" }));
export const dynamic = asset({ key: "t/dynamic" }, async (ctx) => {
  await ctx.addDynamicPartitions("customers", ["c-1", "c-2"]);
  return "added";
});
export const logs = asset({ key: "t/logs" }, async (ctx) => {
  ctx.log.info("rows loaded", { rows: 3, table: "orders" });
  ctx.log.warn("slow query");
  console.log("from console.log", { n: 42 });
  console.error("two\\nlines");
  return 1;
});
export const exits = asset({ key: "t/exits" }, async () => {
  process.exit(3);
});
export const exitsCaught = asset({ key: "t/exits_caught" }, async () => {
  try { process.exit(4); } catch { /* swallowed */ }
  return "survived";
});
export const source = { not: "an asset" };
`;

/**
 * The behaviour every Executor implementation shares. Run it from each
 * implementation's test file with a factory for that implementation.
 */
export function executorContract(name: string, make: MakeExecutor): void {
  describe(`Executor contract: ${name}`, () => {
    let dir: string;
    const file = "defs.ts";
    const d = (exportName: string, assetKey: string, overrides: Partial<StepDispatch> = {}): StepDispatch =>
      dispatch(dir, file, exportName, assetKey, overrides);

    beforeAll(async () => {
      dir = await tempDir({ [file]: DEFINITIONS });
    });
    afterAll(removeTempDirs);

    describe("with a shared executor", () => {
      const backend = new FakeBackend();
      let executor: ReturnType<MakeExecutor>;
      beforeAll(async () => {
        executor = make(backend, { capacity: 8, killGraceMs: 1_000, heartbeatIntervalMs: 100 });
        await executor.ready?.();
      });
      afterAll(async () => {
        await executor.close({ graceMs: 2_000 });
      });

      async function run(step: StepDispatch) {
        executor.submit([step]);
        return backend.result(step.stepId);
      }

      it("keeps sending heartbeats for a finished step while its result cannot be delivered", async () => {
        const deliver = backend.finished.bind(backend);
        let down = true;
        let refused = 0;
        backend.finished = async (results) => {
          if (down) {
            refused++;
            throw new Error("database is down");
          }
          return deliver(results);
        };
        try {
          const step = d("noop", "t/noop");
          executor.submit([step]);
          // Its code has ended and its result was refused: heartbeats sent after that still name it.
          await vi.waitFor(() => expect(refused).toBeGreaterThan(0), { timeout: 10_000 });
          const from = backend.heartbeats.length;
          await vi.waitFor(
            () =>
              expect(backend.heartbeats.slice(from).filter((beat) => beat.some((s) => s.stepId === step.stepId)).length).toBeGreaterThan(1),
            { timeout: 10_000 },
          );
          down = false;
          expect((await backend.result(step.stepId)).outcome.kind).toBe("success");
        } finally {
          backend.finished = deliver;
        }
      });

      it("runs a step: inputs in, JSON out, context filled from the dispatch", async () => {
        const step = d("echo", "t/echo", {
          runId: "run-42",
          tryNumber: 2,
          partitionKey: "2025-03-01|eu",
          partition: {
            window: { start: "2025-03-01T00:00:00.000Z", end: "2025-03-02T00:00:00.000Z" },
            dimensions: { date: "2025-03-01", region: "eu" },
          },
        });
        backend.inputs.set(step.stepId, { ok: true, inputs: { orders: [{ rows: 3 }, { rows: 4 }], region: "eu" } });
        const result = await run(step);
        expect(result.outcome.kind).toBe("success");
        if (result.outcome.kind !== "success") return;
        expect(JSON.parse(result.outcome.outputJson)).toEqual({
          inputs: { orders: [{ rows: 3 }, { rows: 4 }], region: "eu" },
          assetKey: "t/echo",
          runId: "run-42",
          tryNumber: 2,
          partition: {
            key: "2025-03-01|eu",
            windowIsDates: true,
            start: "2025-03-01T00:00:00.000Z",
            end: "2025-03-02T00:00:00.000Z",
            dimensions: { date: "2025-03-01", region: "eu" },
          },
        });
        expect(result.outcome.sizeBytes).toBe(Buffer.byteLength(result.outcome.outputJson));
        expect(result).toMatchObject({ stepId: step.stepId, runId: "run-42", tryNumber: 2, logRef: step.logRef });
        expect(result.startedAt).toBeInstanceOf(Date);
        expect(result.endedAt.getTime()).toBeGreaterThanOrEqual(result.startedAt!.getTime());
        const started = backend.startedEvent(step.stepId)!;
        expect(started).toMatchObject({ stepId: step.stepId, tryNumber: 2, workerId: result.workerId });
        expect(started.pid).toBeGreaterThan(0);
      });

      it("stores undefined as null", async () => {
        const result = await run(d("nothing", "t/nothing"));
        expect(result.outcome).toEqual({ kind: "success", outputJson: "null", sizeBytes: 4 });
      });

      it("wraps what user code throws with asset, partition, run and try, keeping the original as cause", async () => {
        const result = await run(d("throws", "t/throws", { partitionKey: "2025-03-01", runId: "run-7", tryNumber: 2 }));
        const error = errorOf(result);
        expect(error).toMatchObject({
          name: "UserCodeError",
          code: "USER_CODE_ERROR",
          message: 'asset "t/throws" partition "2025-03-01" (run run-7, try 2) failed: bad rows in the feed',
          location: { assetKey: "t/throws", partitionKey: "2025-03-01" },
          retryable: true,
          failureClass: "user",
        });
        expect(error.cause).toMatchObject({ name: "TypeError", message: "bad rows in the feed" });
        expect(error.cause?.stack).toContain("bad rows in the feed");
        expect(error.cause?.stack).toContain(file);
        expect(await readLog(result.logRef)).toMatch(/ERROR step failed: asset "t\/throws".*"code":"USER_CODE_ERROR"/);
      });

      it("wraps a thrown non-Error too", async () => {
        const error = errorOf(await run(d("throwsString", "t/throws_string")));
        expect(error.code).toBe("USER_CODE_ERROR");
        expect(error.message).toBe('asset "t/throws_string" (run run-1, try 1) failed: a plain string');
        expect(error.cause).toMatchObject({ name: "NonError", message: "a plain string" });
      });

      it.each([
        ["returnsDate", "t/date", "output.rows[1].at (a Date"],
        ["returnsBigInt", "t/bigint", "output.total (a bigint)"],
        ["returnsFunction", "t/function", "output.run (a function)"],
        ["returnsInstance", "t/instance", "output.price (a Money"],
        ["returnsCircular", "t/circular", "output.graph.self (a circular reference)"],
        ["returnsNaN", "t/nan", "output.ratio (NaN)"],
      ])("fails a try whose output JSON cannot hold (%s), naming the path", async (exportName, key, path) => {
        const error = errorOf(await run(d(exportName, key)));
        expect(error.code).toBe("OUTPUT_NOT_SERIALIZABLE");
        expect(error.message).toContain(`asset "${key}" (run run-1, try 1): the return value cannot be stored as JSON: value at ${path}`);
      });

      it("ends the try as skipped on ctx.skip(reason), even when user code swallows it", async () => {
        expect((await run(d("skips", "t/skips"))).outcome).toEqual({ kind: "skipped", reason: "no data" });
        expect((await run(d("skipsCaught", "t/skips_caught"))).outcome).toEqual({ kind: "skipped", reason: "nothing new" });
      });

      it("aborts ctx.signal at the timeout and fails the try with STEP_TIMEOUT naming the limit", async () => {
        const step = d("waits", "t/waits", { timeoutMs: 300 });
        const began = Date.now();
        const result = await run(step);
        expect(Date.now() - began).toBeGreaterThanOrEqual(280);
        const error = errorOf(result);
        // Its own `timeout`: the user's failure.
        expect(error).toMatchObject({ code: "STEP_TIMEOUT", retryable: true, failureClass: "user" });
        expect(error.message).toContain('asset "t/waits" (run run-1, try 1) exceeded its timeout of 300 ms');
        const log = await readLog(step.logRef);
        expect(log).toContain('INFO signal aborted {"code":"STEP_TIMEOUT"}');
      });

      it("reads secrets from the environment, and names a missing one with how to set it", async () => {
        expect((await run(d("secret", "t/secret"))).outcome).toMatchObject({ kind: "success", outputJson: '"s3cret"' });
        const error = errorOf(await run(d("missingSecret", "t/missing_secret")));
        expect(error.code).toBe("SECRET_MISSING");
        expect(error.message).toContain('secret "TRIBUTARY_TEST_NO_SUCH_SECRET" is not set');
        expect(error.message).toContain("looked in environment variables (");
        expect(error.message).toContain("TRIBUTARY_TEST_NO_SUCH_SECRET");
      });

      it("fails an output over the configured maximum for good, naming the sizes and the setting", async () => {
        const error = errorOf(await run(d("tooBig", "t/too_big")));
        expect(error).toMatchObject({ code: "OUTPUT_OVER_MAXIMUM", retryable: false });
        expect(error.message).toContain("the output is 1.5 MB, over the maximum of 1.0 MB (TRIBUTARY_MAX_OUTPUT_BYTES)");
      });

      it("masks a secret's value in the try's log and in its error, wherever the step writes it", async () => {
        const step = d("leaksSecret", "t/leaks_secret");
        const error = errorOf(await run(step));
        expect(error.message).toContain("login failed for password ***");
        expect(JSON.stringify(error)).not.toContain("s3cret");
        const log = await readLog(step.logRef);
        expect(log).toContain("connecting with ***");
        expect(log).toContain("postgres://app:***@db/x");
        expect(log).toContain("password is ***");
        expect(log).not.toContain("s3cret");
      });

      it("ends a deferring try with its trigger, and a re-entered try passes fired waits with their payloads", async () => {
        const first = await run(d("defers", "t/defers", { partitionKey: "2025-03-01" }));
        expect(first.outcome).toEqual({
          kind: "deferred",
          trigger: { kind: "at", args: { at: "2030-01-01T00:00:00Z" }, timeoutMs: 7_200_000, pollIntervalMs: 30_000, softFail: true },
        });
        // Re-entered after the first fired: it passes the first wait and defers on the second (default options).
        const resumedOnce = [{ kind: "at", args: { at: "2030-01-01T00:00:00Z" }, payload: { at: "fired" } }];
        const second = await run(d("defers", "t/defers", { partitionKey: "2025-03-01", tryNumber: 2, resumed: resumedOnce }));
        expect(second.outcome).toMatchObject({
          kind: "deferred",
          trigger: { kind: "fileExists", args: { path: "/landing/{partition}.csv" }, timeoutMs: 7 * 86_400_000, softFail: false },
        });
        const both = [...resumedOnce, { kind: "fileExists", args: { path: "/landing/{partition}.csv" }, payload: { size: 3 } }];
        const third = await run(d("defers", "t/defers", { partitionKey: "2025-03-01", tryNumber: 3, resumed: both }));
        expect(third.outcome).toEqual({ kind: "success", outputJson: '{"first":{"at":"fired"},"second":{"size":3}}', sizeBytes: 44 });
      });

      it("defers even when user code catches the signal", async () => {
        expect((await run(d("defersCaught", "t/defers_caught"))).outcome).toMatchObject({ kind: "deferred" });
      });

      it("fails a wait written wrong at once, naming the option or the trigger, without retries", async () => {
        const badOption = errorOf(await run(d("defersBadly", "t/defers_badly")));
        expect(badOption).toMatchObject({ code: "WAIT_OPTIONS_INVALID", retryable: false });
        expect(badOption.message).toContain('option "timeout" is not a duration');
        expect(badOption.message).toContain('asset "t/defers_badly"');
        const unknown = errorOf(await run(d("defersUnknown", "t/defers_unknown")));
        expect(unknown).toMatchObject({ code: "TRIGGER_KIND_UNKNOWN", retryable: false });
        expect(unknown.message).toContain('trigger kind "partnerReady" is not registered');
        const badTrigger = errorOf(await run(d("defersNothing", "t/defers_nothing")));
        expect(badTrigger).toMatchObject({ code: "TRIGGER_INVALID", retryable: false });
        expect(badTrigger.message).toContain("takes a trigger such as fileExists");
      });

      it("pokes inside the try until the file appears, and skips a soft-failing poke at its timeout", async () => {
        await rm(POKE_DIR, { recursive: true, force: true });
        await mkdir(POKE_DIR, { recursive: true });
        const step = d("pokes", "t/pokes", { partitionKey: "p1" });
        const poking = run(step);
        await new Promise((resolve) => setTimeout(resolve, 350));
        await writeFile(path.join(POKE_DIR, "p1.csv"), "a,b\n");
        expect((await poking).outcome).toMatchObject({ kind: "success" });
        const skipped = (await run(d("pokesInVain", "t/pokes_in_vain"))).outcome;
        expect(skipped).toMatchObject({ kind: "skipped" });
        expect(skipped.kind === "skipped" && skipped.reason).toContain("trigger timed out (softFail)");
        expect((await run(d("pokesCustom", "t/pokes_custom"))).outcome).toMatchObject({ kind: "success", outputJson: '{"seen":"x"}' });
        backend.materializedPartitions.set("t/up|p1", 42);
        expect((await run(d("pokesUpstream", "t/pokes_upstream"))).outcome).toEqual({
          kind: "success",
          outputJson: '{"assetKey":"t/up","partition":"p1","eventId":42}',
          sizeBytes: 49,
        });
      });

      it("ends a reschedule-mode try that found nothing with its next check, keeping when the wait began", async () => {
        const began = Date.now() - 60_000;
        const result = await run(d("reschedules", "t/reschedules", { partitionKey: "p9", waitStartedAt: new Date(began).toISOString() }));
        expect(result.outcome).toMatchObject({ kind: "rescheduled", waitStartedAt: began });
        const next = result.outcome.kind === "rescheduled" ? result.outcome.nextCheckAt : 0;
        expect(next - Date.now()).toBeGreaterThan(50_000);
        const late = errorOf(
          await run(
            d("reschedules", "t/reschedules", { partitionKey: "p9", waitStartedAt: new Date(Date.now() - 3_600_000).toISOString() }),
          ),
        );
        expect(late).toMatchObject({ code: "TRIGGER_TIMED_OUT", retryable: false });
        expect(late.message).toContain("past its timeout of 3600000 ms");
      });

      it("forwards ctx.addDynamicPartitions to the backend", async () => {
        expect((await run(d("dynamic", "t/dynamic"))).outcome).toMatchObject({ kind: "success", outputJson: '"added"' });
        expect(backend.dynamicPartitions).toContainEqual({ name: "customers", keys: ["c-1", "c-2"] });
      });

      it("writes ctx.log and console output to the try's log file, one line per entry", async () => {
        const step = d("logs", "t/logs");
        await run(step);
        const lines = (await readLog(step.logRef)).trimEnd().split("\n");
        expect(lines).toHaveLength(4);
        const iso = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";
        expect(lines[0]).toMatch(new RegExp(`^${iso} INFO rows loaded \\{"rows":3,"table":"orders"\\}$`));
        expect(lines[1]).toMatch(new RegExp(`^${iso} WARN slow query$`));
        expect(lines[2]).toMatch(new RegExp(`^${iso} INFO from console.log \\{ n: 42 \\}$`));
        expect(lines[3]).toMatch(new RegExp(`^${iso} ERROR two\\\\nlines$`));
      });

      it("turns process.exit() into a failed try", async () => {
        const error = errorOf(await run(d("exits", "t/exits")));
        expect(error).toMatchObject({ code: "STEP_PROCESS_EXIT", retryable: true });
        expect(error.message).toContain("asset function called process.exit(3)");
        // Catching the error does not save the try.
        expect(errorOf(await run(d("exitsCaught", "t/exits_caught"))).message).toContain("process.exit(4)");
      });

      it("fails a step whose export is not an asset, saying the definitions changed", async () => {
        const error = errorOf(await run(d("source", "t/source")));
        expect(error.code).toBe("STEP_EXPORT_NOT_FOUND");
        expect(error.message).toContain('export "source"');
        expect(error.message).toContain("reload them");
        const wrongKey = errorOf(await run(d("noop", "t/other")));
        expect(wrongKey.message).toContain('is asset "t/noop", not "t/other"');
      });

      it("fails a try whose inputs could not be loaded, with that error", async () => {
        const step = d("noop", "t/noop");
        backend.inputs.set(step.stepId, {
          ok: false,
          error: { name: "TributaryError", code: "OUTPUT_MISSING", message: "upstream output of t/up is gone" },
          failureClass: "user",
        });
        expect(errorOf(await run(step))).toMatchObject({
          code: "OUTPUT_MISSING",
          message: "upstream output of t/up is gone",
          failureClass: "user",
        });
        expect(await readLog(step.logRef)).toContain("upstream output of t/up is gone");

        backend.loadInputsError = new Error("database is down");
        try {
          const [a, b] = [d("noop", "t/noop"), d("noop", "t/noop")];
          executor.submit([a, b]);
          const results = await backend.waitFor([a.stepId, b.stepId]);
          for (const r of results) {
            // The backend itself could not answer: not the step's failure.
            expect(errorOf(r)).toMatchObject({ code: "STEP_INPUTS_FAILED", retryable: true, failureClass: "infrastructure" });
            expect(errorOf(r).message).toContain("loading its inputs failed: database is down");
            expect(r.startedAt).toBeNull();
          }
        } finally {
          backend.loadInputsError = undefined;
        }
      });

      it("cancels a running step: its signal aborts, the result is STEP_CANCELED and not retryable", async () => {
        const step = d("waits", "t/waits");
        executor.submit([step]);
        await waitUntil(() => backend.startedEvent(step.stepId) !== undefined, 10_000, "the step to start");
        executor.cancel([step.stepId], "canceled by alice");
        const error = errorOf(await backend.result(step.stepId));
        expect(error).toMatchObject({ code: "STEP_CANCELED", retryable: false, failureClass: "user" });
        expect(error.message).toBe('asset "t/waits" (run run-1, try 1) was canceled: canceled by alice');
        expect(await readLog(step.logRef)).toContain('signal aborted {"code":"STEP_CANCELED"}');
      });

      it("heartbeats running steps in one call", async () => {
        const step = d("waits", "t/waits", { timeoutMs: 500 });
        executor.submit([step]);
        await waitUntil(
          () => backend.heartbeats.some((beat) => beat.some((s) => s.stepId === step.stepId)),
          10_000,
          "a heartbeat naming the step",
        );
        await backend.result(step.stepId);
      });

      it("rejects a second submit of a step that is still in the executor", async () => {
        const first = d("waits", "t/waits", { timeoutMs: 300 });
        executor.submit([first]);
        const again = { ...first, tryNumber: 2 };
        executor.submit([again]);
        await waitUntil(() => backend.results.get(first.stepId)?.tryNumber === 2, 10_000, "the duplicate's result");
        expect(errorOf(backend.results.get(first.stepId)!)).toMatchObject({ code: "STEP_ALREADY_SUBMITTED", retryable: false });
        backend.results.delete(first.stepId);
        expect(errorOf(await backend.result(first.stepId)).code).toBe("STEP_TIMEOUT");
      });

      it("coalesces reports: 1 000 no-op steps finish in far fewer backend calls", async () => {
        await waitUntil(() => executor.freeSlots() === 8, 10_000, "the executor to be idle");
        const before = { ...backend.calls };
        const steps = Array.from({ length: 1000 }, () => d("noop", "t/noop"));
        executor.submit(steps);
        expect(executor.freeSlots()).toBe(0);
        const results = await backend.waitFor(
          steps.map((s) => s.stepId),
          60_000,
        );
        expect(results.every((r) => r.outcome.kind === "success")).toBe(true);
        const finishedCalls = backend.calls.finished - before.finished;
        const startedCalls = backend.calls.started - before.started;
        expect(finishedCalls).toBeLessThan(200);
        expect(startedCalls).toBeLessThan(200);
        expect(backend.calls.loadInputs - before.loadInputs).toBe(1);
        expect(backend.orderViolations).toEqual([]);
        expect(executor.freeSlots()).toBe(8);
      });
    });

    describe("with a small executor", () => {
      it("drops a queued step on cancel with the same result, never starting it", async () => {
        const backend = new FakeBackend();
        const executor = make(backend, { capacity: 1, killGraceMs: 1_000, heartbeatIntervalMs: 5_000 });
        try {
          await executor.ready?.();
          const running = d("waits", "t/waits");
          const queued = d("noop", "t/noop");
          executor.submit([running, queued]);
          expect(executor.freeSlots()).toBe(0);
          await waitUntil(() => backend.startedEvent(running.stepId) !== undefined, 10_000, "the first step to start");
          executor.cancel([queued.stepId], "run canceled");
          const result = await backend.result(queued.stepId);
          expect(errorOf(result)).toMatchObject({ code: "STEP_CANCELED", retryable: false });
          expect(result.startedAt).toBeNull();
          expect(backend.startedEvent(queued.stepId)).toBeUndefined();
          executor.cancel([running.stepId], "run canceled");
          expect(errorOf(await backend.result(running.stepId)).code).toBe("STEP_CANCELED");
          expect(executor.freeSlots()).toBe(1);
        } finally {
          await executor.close({ graceMs: 1_000 });
        }
      });

      it("closes: lets running steps finish within the grace period, stops the rest, drops the queue", async () => {
        const backend = new FakeBackend();
        const executor = make(backend, { capacity: 2, killGraceMs: 1_000, heartbeatIntervalMs: 5_000 });
        await executor.ready?.();
        // The definitions are imported before the clock starts: the grace period is about the steps, not the import.
        const warmUp = d("noop", "t/noop");
        executor.submit([warmUp]);
        await waitUntil(() => backend.results.has(warmUp.stepId), 30_000, "the warm-up step to finish");
        const quick = d("sleeps", "t/sleeps");
        const stuck = d("ignoresSignal", "t/ignores_signal");
        const queued = d("noop", "t/noop");
        executor.submit([quick, stuck, queued]);
        await waitUntil(
          () => backend.startedEvent(quick.stepId) !== undefined && backend.startedEvent(stuck.stepId) !== undefined,
          10_000,
          "both steps to start",
        );
        const began = Date.now();
        await executor.close({ graceMs: 600 });
        expect(Date.now() - began).toBeLessThan(5_000);
        expect(backend.results.get(quick.stepId)?.outcome).toMatchObject({ kind: "success", outputJson: '"slept"' });
        // Stopped or dropped because the executor closed: infrastructure failures, which do not use up retries.
        expect(errorOf(backend.results.get(stuck.stepId)!)).toMatchObject({
          code: "EXECUTOR_CLOSED",
          retryable: true,
          failureClass: "infrastructure",
        });
        expect(errorOf(backend.results.get(stuck.stepId)!).message).toContain("still running when the executor closed");
        const dropped = backend.results.get(queued.stepId)!;
        expect(errorOf(dropped)).toMatchObject({ code: "EXECUTOR_CLOSED", retryable: true, failureClass: "infrastructure" });
        expect(dropped.startedAt).toBeNull();
        expect(executor.freeSlots()).toBe(0);
        expect(() => executor.submit([d("noop", "t/noop")])).toThrow(/closed/);
        await executor.close(); // twice is harmless
      });
    });
  });
}

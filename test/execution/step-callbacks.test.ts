import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness, type ExecutorChoice } from "./harness.js";

const out = mkdtempSync(path.join(tmpdir(), "tributary-callbacks-"));

/** Callbacks append a JSON line (with the pid of the process they ran in) to a file per event. */
const defs = (dir: string) => `
import { appendFileSync } from "node:fs";
import { asset, daily } from "tributary";
const OUT = ${JSON.stringify(dir)};
const note = (name, ctx, extra = {}) => appendFileSync(OUT + "/" + name, JSON.stringify({
  pid: process.pid, asset: ctx.assetKey, partition: ctx.partition.key, run: ctx.run.id, try: ctx.tryNumber, ...extra,
}) + "\\n");

export const good = asset({
  key: "cb/good", partitions: daily({ start: "2025-01-01" }),
  onSuccess: (ctx) => { ctx.log.info("onSuccess ran"); note("good.success", ctx); },
  onFailure: (ctx) => note("good.failure", ctx),
}, async () => 1);

export const flaky = asset({
  key: "cb/flaky", retries: { max: 1, delay: 0 },
  onRetry: (ctx, error, retry) => note("flaky.retry", ctx, { code: error.code, message: error.message, ...retry }),
  onFailure: async (ctx, error) => { await new Promise((r) => setTimeout(r, 20)); note("flaky.failure", ctx, { code: error.code, message: error.message }); },
  onSuccess: (ctx) => note("flaky.success", ctx),
}, async (ctx) => { throw new Error("boom on try " + ctx.tryNumber); });

export const throwing = asset({
  key: "cb/throwing",
  onSuccess: () => { throw new Error("callback exploded"); },
}, async () => 42);

export const failThrowing = asset({
  key: "cb/failthrow",
  onFailure: async () => { throw new Error("failure callback exploded"); },
}, async () => { throw new Error("the real failure"); });

export const hanging = asset({
  key: "cb/hanging", callbackTimeout: "300ms",
  onSuccess: (ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => { note("hanging.aborted", ctx); resolve(); })),
}, async () => 7);
`;

async function lines(name: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path.join(out, name), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

for (const executor of ["local", "in-process"] as const satisfies readonly ExecutorChoice[]) {
  describePostgres(`step callbacks (${executor} executor)`, () => {
    const dir = path.join(out, executor);
    let h: Harness;
    beforeAll(async () => {
      await mkdir(dir, { recursive: true });
      h = await Harness.create({ files: { "cb.ts": defs(dir) }, executor });
    });
    afterAll(async () => {
      await h?.stop();
    });
    const read = (name: string) => lines(path.join(executor, name));
    const logOf = async (runId: string, tryIndex = 0) => {
      const run = (await h.runs.getRun(runId))!;
      return readFile(run.steps[0]!.tries[tryIndex]!.logRef!, "utf8");
    };

    it("onSuccess runs in the worker with the step's context", async () => {
      const run = await h.waitForRun(await h.launch(["cb/good"], { partition: "2025-01-05" }));
      expect(run.status).toBe("success");
      const [note] = await h.until(
        async () => ((await read("good.success")).length > 0 ? read("good.success") : undefined),
        10_000,
        "onSuccess",
      );
      expect(note).toMatchObject({ asset: "cb/good", partition: "2025-01-05", run: run.id, try: 1 });
      if (executor === "local") expect(note!["pid"]).not.toBe(process.pid);
      expect(await read("good.failure")).toEqual([]);
      await h.until(async () => (await logOf(run.id)).includes("onSuccess ran") || undefined, 5_000, "the callback's log line");
    });

    it("onRetry when the failure will be retried, onFailure when it will not", async () => {
      const run = await h.waitForRun(await h.launch(["cb/flaky"]));
      expect(run.status).toBe("failed");
      const failure = await h.until(
        async () => ((await read("flaky.failure")).length > 0 ? read("flaky.failure") : undefined),
        10_000,
        "onFailure",
      );
      expect(await read("flaky.retry")).toEqual([
        expect.objectContaining({
          try: 1,
          nextTry: 2,
          lastTry: 2,
          code: "USER_CODE_ERROR",
          message: expect.stringContaining("boom on try 1"),
        }),
      ]);
      expect(failure).toEqual([
        expect.objectContaining({ try: 2, code: "USER_CODE_ERROR", message: expect.stringContaining("boom on try 2") }),
      ]);
      expect(await read("flaky.success")).toEqual([]);
    });

    it("a callback that throws is logged to the step log and does not change the outcome", async () => {
      const ok = await h.waitForRun(await h.launch(["cb/throwing"]));
      expect(ok.status).toBe("success");
      expect(ok.steps[0]!.state).toBe("success");
      await h.until(
        async () => (await logOf(ok.id)).includes("onSuccess callback failed: callback exploded") || undefined,
        10_000,
        "the logged callback error",
      );
      expect((await h.runs.latestOutputs([{ assetKey: "cb/throwing", partitionKey: "" }]))[0]?.inline).toBe(42);

      const bad = await h.waitForRun(await h.launch(["cb/failthrow"]));
      expect(bad.status).toBe("failed");
      expect((bad.steps[0]!.error as { message: string }).message).toContain("the real failure");
      await h.until(
        async () => (await logOf(bad.id)).includes("onFailure callback failed: failure callback exploded") || undefined,
        10_000,
        "the logged error",
      );
    });

    it("a callback past its time limit is logged, its signal aborted, the outcome unchanged", async () => {
      const run = await h.waitForRun(await h.launch(["cb/hanging"]));
      expect(run.status).toBe("success");
      await h.until(async () => ((await read("hanging.aborted")).length > 0 ? true : undefined), 10_000, "the aborted callback");
      const log = await h.until(
        async () => {
          const text = await logOf(run.id);
          return text.includes("CALLBACK_TIMEOUT") ? text : undefined;
        },
        // The line is written once the callback's limit and its abort grace have passed: slow on a loaded machine.
        30_000,
        "the timeout in the log",
      );
      expect(log).toContain("onSuccess callback did not finish within 300 ms");
      expect((await h.runs.getRun(run.id))!.steps[0]!.state).toBe("success");
    });
  });
}

afterAll(() => rmSync(out, { recursive: true, force: true }));

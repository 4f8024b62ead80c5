import { afterAll, describe, expect, it } from "vitest";
import { InProcessExecutor } from "../../src/executor/index.js";
import { asset } from "../../src/index.js";
import { executorContract } from "./executor.contract.js";
import { dispatch, errorOf, FakeBackend, readLog, removeTempDirs, tempDir } from "./helpers.js";

executorContract(
  "InProcessExecutor",
  (backend, o) =>
    new InProcessExecutor(backend, { concurrency: o.capacity, killGraceMs: o.killGraceMs, heartbeatIntervalMs: o.heartbeatIntervalMs }),
);

describe("InProcessExecutor", () => {
  afterAll(removeTempDirs);

  it("gives up on a function that ignores its signal after the grace period (it cannot kill it)", async () => {
    const backend = new FakeBackend();
    const stuck = asset({ key: "t/stuck" }, () => new Promise<never>(() => {}));
    const executor = new InProcessExecutor(backend, {
      killGraceMs: 200,
      importModule: async () => ({ stuck }),
    });
    try {
      const dir = await tempDir();
      const step = dispatch(dir, "virtual.ts", "stuck", "t/stuck", { timeoutMs: 100 });
      executor.submit([step]);
      const error = errorOf(await backend.result(step.stepId));
      expect(error).toMatchObject({ code: "STEP_TIMEOUT", retryable: true });
      expect(error.message).toContain("exceeded its timeout of 100 ms");
      expect(error.message).toContain("the try was abandoned (the in-process executor cannot kill it)");
      expect(await readLog(step.logRef)).toContain("the try was abandoned");
      expect(executor.freeSlots()).toBe(16);
    } finally {
      await executor.close({ graceMs: 100 });
    }
  });

  it("imports through the given importModule once per file", async () => {
    const backend = new FakeBackend();
    let imports = 0;
    const one = asset({ key: "t/one" }, (ctx) => ctx.partition.key);
    const executor = new InProcessExecutor(backend, {
      importModule: async () => {
        imports++;
        return { one };
      },
    });
    try {
      const dir = await tempDir();
      const steps = ["a", "b", "c"].map((p) => dispatch(dir, "virtual.ts", "one", "t/one", { partitionKey: p }));
      executor.submit(steps);
      const results = await backend.waitFor(steps.map((s) => s.stepId));
      expect(results.map((r) => r.outcome)).toEqual(["a", "b", "c"].map((p) => ({ kind: "success", outputJson: `"${p}"`, sizeBytes: 3 })));
      expect(imports).toBe(1);
    } finally {
      await executor.close();
    }
  });

  it("restores console and process.exit when closed", async () => {
    const { log } = console;
    const { exit } = process;
    const executor = new InProcessExecutor(new FakeBackend());
    expect(console.log).not.toBe(log);
    expect(process.exit).not.toBe(exit);
    await executor.close();
    expect(console.log).toBe(log);
    expect(process.exit).toBe(exit);
  });
});

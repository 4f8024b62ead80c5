import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LocalExecutor, type LocalExecutorOptions } from "../../src/executor/index.js";
import type { StepDispatch } from "../../src/execution/index.js";
import { executorContract } from "./executor.contract.js";
import { dispatch, errorOf, FakeBackend, isAlive, readLog, removeTempDirs, tempDir, waitUntil } from "./helpers.js";

executorContract(
  "LocalExecutor",
  (backend, o) =>
    new LocalExecutor(backend, {
      processes: 1,
      concurrencyPerProcess: o.capacity,
      killGraceMs: o.killGraceMs,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
    }),
);

// Written the way users write them: the bare `tributary` import, top-level
// await, in a directory with no package.json (outside this package).
const DEFINITIONS = `
import { asset } from "tributary";

const g = globalThis as { __imports?: number; __calls?: number };
g.__imports = (g.__imports ?? 0) + 1;
await Promise.resolve();

export const counter = asset({ key: "w/counter" }, async () => {
  g.__calls = (g.__calls ?? 0) + 1;
  return { imports: g.__imports, calls: g.__calls, pid: process.pid };
});
export const pid = asset({ key: "w/pid" }, async () => process.pid);
export const busy = asset({ key: "w/busy" }, async (ctx) => {
  ctx.log.info("about to spin");
  for (;;) {}
});
export const waits = asset({ key: "w/waits" }, async (ctx) => {
  await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  return "stopped";
});
export const hangs = asset({ key: "w/hangs" }, async (ctx) => {
  ctx.log.info("before the hang", { pid: process.pid });
  await new Promise(() => {});
});
export const hog = asset({ key: "w/hog" }, async () => {
  const kept: unknown[] = [];
  for (;;) kept.push(new Array(100_000).fill({ x: Math.random() }));
});
export const exits = asset({ key: "w/exits" }, async () => {
  process.exit(3);
});
export const chatty = asset({ key: "w/chatty" }, async (ctx) => {
  for (let i = 0; i < 5; i++) {
    console.log("console", ctx.partition.key, i);
    ctx.log.info("ctx " + ctx.partition.key + " " + i);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return ctx.partition.key;
});
export const strayThrow = asset({ key: "w/stray_throw" }, async () => {
  setTimeout(() => { throw new Error("thrown from a timer"); }, 1);
  await new Promise(() => {});
});
`;

describe("LocalExecutor", () => {
  let dir: string;
  const file = "defs/assets.ts";
  const executors: LocalExecutor[] = [];
  const d = (exportName: string, assetKey: string, overrides: Partial<StepDispatch> = {}): StepDispatch =>
    dispatch(dir, file, exportName, assetKey, overrides);

  async function start(backend: FakeBackend, options: LocalExecutorOptions = {}): Promise<LocalExecutor> {
    const executor = new LocalExecutor(backend, { processes: 1, concurrencyPerProcess: 4, killGraceMs: 500, ...options });
    executors.push(executor);
    await executor.ready();
    return executor;
  }

  beforeAll(async () => {
    dir = await tempDir({ [file]: DEFINITIONS });
  });
  afterEach(async () => {
    await Promise.all(executors.splice(0).map((e) => e.close({ graceMs: 500 })));
  });
  afterAll(removeTempDirs);

  it("imports a definitions file once per process, for many steps", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend, { processes: 2, concurrencyPerProcess: 2 });
    const steps = Array.from({ length: 20 }, () => d("counter", "w/counter"));
    executor.submit(steps);
    const outputs = (await backend.waitFor(steps.map((s) => s.stepId))).map((r) => {
      if (r.outcome.kind !== "success") throw new Error(JSON.stringify(r.outcome));
      return JSON.parse(r.outcome.outputJson) as { imports: number; calls: number; pid: number };
    });
    expect(new Set(outputs.map((o) => o.imports))).toEqual(new Set([1]));
    const pids = new Set(outputs.map((o) => o.pid));
    expect(pids.size).toBe(2); // least-loaded placement uses both processes
    for (const pid of pids) {
      const calls = outputs
        .filter((o) => o.pid === pid)
        .map((o) => o.calls)
        .sort((a, b) => a - b);
      expect(calls).toEqual(Array.from({ length: calls.length }, (_, i) => i + 1));
    }
  });

  it("kills a process whose step ignores its signal past the grace period, fails its neighbours retryably, and replaces it", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const [oldPid] = executor.workerProcesses().map((w) => w.pid);
    // The definitions are imported before the clock starts: the 300 ms are the spinning step's, not a first import's.
    const warmUp = d("pid", "w/pid");
    executor.submit([warmUp]);
    await backend.result(warmUp.stepId);
    const spinning = d("busy", "w/busy", { timeoutMs: 300 });
    const neighbour = d("hangs", "w/hangs");
    executor.submit([neighbour, spinning]);
    const [spun, hung] = await backend.waitFor([spinning.stepId, neighbour.stepId]);
    const timeout = errorOf(spun!);
    expect(timeout).toMatchObject({ code: "STEP_TIMEOUT", retryable: true, failureClass: "user" });
    expect(timeout.message).toContain("exceeded its timeout of 300 ms");
    expect(timeout.message).toContain("so its worker process was killed");
    const killed = errorOf(hung!);
    // A bystander of another step's overrun: not its own failure.
    expect(killed).toMatchObject({ code: "WORKER_KILLED", retryable: true, failureClass: "infrastructure" });
    expect(killed.message).toContain(`because step ${spinning.stepId} (asset "w/busy" (run run-1, try 1)) exceeded its timeout of 300 ms`);
    // Whatever the steps logged before the kill is on disk.
    expect(await readLog(spinning.logRef)).toContain("INFO about to spin");
    expect(await readLog(neighbour.logRef)).toContain("before the hang");
    await waitUntil(() => !isAlive(oldPid!), 5_000, "the killed process to be gone");
    // A replacement runs the next step.
    const next = d("pid", "w/pid");
    executor.submit([next]);
    const result = await backend.result(next.stepId);
    expect(result.outcome.kind).toBe("success");
    if (result.outcome.kind === "success") expect(Number(result.outcome.outputJson)).not.toBe(oldPid);
    expect(executor.workerProcesses()).toHaveLength(1);
  });

  it("fails the steps of a process that runs out of memory, and recovers", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend, { memoryMb: 64 });
    const hog = d("hog", "w/hog");
    executor.submit([hog]);
    const error = errorOf(await backend.result(hog.stepId, 60_000));
    expect(["WORKER_OUT_OF_MEMORY", "WORKER_EXITED"]).toContain(error.code);
    expect(error.retryable).toBe(true);
    if (error.code === "WORKER_OUT_OF_MEMORY") {
      expect(error.message).toContain("heap limit 64 MB");
      // Its own heap limit: the step's code used too much memory.
      expect(error.failureClass).toBe("user");
    }
    const next = d("pid", "w/pid");
    executor.submit([next]);
    expect((await backend.result(next.stepId, 60_000)).outcome.kind).toBe("success");
  });

  it("keeps the worker alive when a step calls process.exit(3): the same process runs the next step", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const exiting = d("exits", "w/exits");
    executor.submit([exiting]);
    const error = errorOf(await backend.result(exiting.stepId));
    expect(error.code).toBe("STEP_PROCESS_EXIT");
    expect(error.message).toContain("asset function called process.exit(3)");
    const next = d("pid", "w/pid");
    executor.submit([next]);
    const result = await backend.result(next.stepId);
    expect(result.outcome).toMatchObject({ kind: "success", outputJson: String(backend.startedEvent(exiting.stepId)!.pid) });
  });

  it("attributes console and ctx.log output to the right try when two steps share a process", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const a = d("chatty", "w/chatty", { partitionKey: "A" });
    const b = d("chatty", "w/chatty", { partitionKey: "B" });
    executor.submit([a, b]);
    await backend.waitFor([a.stepId, b.stepId]);
    expect(backend.startedEvent(a.stepId)!.pid).toBe(backend.startedEvent(b.stepId)!.pid);
    for (const [step, key, other] of [
      [a, "A", "B"],
      [b, "B", "A"],
    ] as const) {
      const log = await readLog(step.logRef);
      const lines = log.trimEnd().split("\n");
      expect(lines).toHaveLength(10);
      for (let i = 0; i < 5; i++) {
        expect(log).toContain(`INFO console ${key} ${i}\n`);
        expect(log).toContain(`INFO ctx ${key} ${i}\n`);
      }
      expect(log).not.toContain(` ${other} `);
    }
  });

  it("fails only the step whose callback threw, not its process", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const stray = d("strayThrow", "w/stray_throw");
    executor.submit([stray]);
    const error = errorOf(await backend.result(stray.stepId));
    expect(error.code).toBe("USER_CODE_ERROR");
    expect(error.message).toContain("failed: uncaught exception in a callback: thrown from a timer");
    const next = d("pid", "w/pid");
    executor.submit([next]);
    expect((await backend.result(next.stepId)).outcome).toMatchObject({
      kind: "success",
      outputJson: String(backend.startedEvent(stray.stepId)!.pid),
    });
  });

  it("fails the steps of a process killed from outside, retryably, and replaces it", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const step = d("hangs", "w/hangs");
    executor.submit([step]);
    await waitUntil(() => backend.startedEvent(step.stepId) !== undefined, 10_000, "the step to start");
    const pid = backend.startedEvent(step.stepId)!.pid;
    process.kill(pid, "SIGKILL");
    const error = errorOf(await backend.result(step.stepId));
    // A signal from outside the process: nothing the step did that anyone can tell.
    expect(error).toMatchObject({ code: "WORKER_EXITED", retryable: true, failureClass: "infrastructure" });
    expect(error.message).toContain("its worker process was killed by SIGKILL");
    await waitUntil(() => executor.workerProcesses().some((w) => w.ready && w.pid !== pid), 30_000, "a replacement");
    const next = d("pid", "w/pid");
    executor.submit([next]);
    expect((await backend.result(next.stepId)).outcome.kind).toBe("success");
  });

  it("kills the process of a canceled step that ignores its signal; the result is STEP_CANCELED", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const step = d("busy", "w/busy");
    executor.submit([step]);
    await waitUntil(() => backend.startedEvent(step.stepId) !== undefined, 10_000, "the step to start");
    const pid = backend.startedEvent(step.stepId)!.pid;
    executor.cancel([step.stepId], "run canceled by bob");
    const error = errorOf(await backend.result(step.stepId));
    expect(error).toMatchObject({ code: "STEP_CANCELED", retryable: false, failureClass: "user" });
    expect(error.message).toContain("was canceled: run canceled by bob");
    expect(error.message).toContain("so its worker process was killed");
    await waitUntil(() => !isAlive(pid), 5_000, "the process to be gone");
  });

  it("close kills stragglers and leaves no child process behind", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend, { processes: 2, concurrencyPerProcess: 1 });
    const pids = executor.workerProcesses().map((w) => w.pid);
    expect(pids).toHaveLength(2);
    const spinning = d("busy", "w/busy");
    const cooperative = d("waits", "w/waits");
    executor.submit([spinning, cooperative]);
    await waitUntil(() => backend.startedEvents.length === 2, 10_000, "both steps to start");
    await executor.close({ graceMs: 200 });
    for (const step of [spinning, cooperative]) {
      expect(errorOf(backend.results.get(step.stepId)!)).toMatchObject({ code: "EXECUTOR_CLOSED", retryable: true });
    }
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(executor.workerProcesses()).toEqual([]);
  });

  it("reload() replaces the processes, so a changed file is imported afresh", async () => {
    const backend = new FakeBackend();
    const reloadDir = await tempDir({ "v.ts": `import { asset } from "tributary";\nexport const v = asset({ key: "w/v" }, () => 1);\n` });
    const executor = await start(backend, { definitionsDir: reloadDir });
    const first = dispatch(reloadDir, "v.ts", "v", "w/v");
    executor.submit([first]);
    expect((await backend.result(first.stepId)).outcome).toMatchObject({ outputJson: "1" });
    await writeFile(path.join(reloadDir, "v.ts"), `import { asset } from "tributary";\nexport const v = asset({ key: "w/v" }, () => 2);\n`);
    executor.reload();
    await executor.ready();
    const second = dispatch(reloadDir, "v.ts", "v", "w/v");
    executor.submit([second]);
    expect((await backend.result(second.stepId)).outcome).toMatchObject({ outputJson: "2" });
    await waitUntil(() => executor.workerProcesses().length === 1, 5_000, "the old process to exit");
  });

  it("closes cleanly while its processes are still starting", async () => {
    const executor = new LocalExecutor(new FakeBackend(), { processes: 2 });
    const pids = executor.workerProcesses().map((w) => w.pid);
    await executor.close({ graceMs: 100 });
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    await executor.ready(); // resolves at once once closed
  });

  it("replaces an idle process that dies", async () => {
    const backend = new FakeBackend();
    const executor = await start(backend);
    const [pid] = executor.workerProcesses().map((w) => w.pid);
    process.kill(pid!, "SIGKILL");
    await waitUntil(() => executor.workerProcesses().some((w) => w.ready && w.pid !== pid), 30_000, "a replacement");
    const step = d("pid", "w/pid");
    executor.submit([step]);
    expect((await backend.result(step.stepId)).outcome.kind).toBe("success");
  });
});

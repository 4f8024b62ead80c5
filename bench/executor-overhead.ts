// The LocalExecutor's own overhead: runs no-op steps through real worker
// processes against a backend that does nothing, keeping the executor full
// the way the reconciler does (submit freeSlots() more whenever a batch of
// results arrives), and prints one JSON object: throughput, submit→finished
// latency percentiles, and the two halves of a hand-off (submit→started in
// the worker; function end→backend.finished), plus how many backend calls
// the reports took.
// With --burst, every step is submitted at once instead (a midnight burst):
// latency is then mostly queueing.
//   npx tsx bench/executor-overhead.ts [--steps 20000] [--processes N] [--concurrency 4] [--burst] [--flush-delay 1]
import { writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import path from "node:path";
import { LocalExecutor } from "../src/executor/index.js";
import type { ExecutionBackend, StepDispatch, StepInputs } from "../src/execution/index.js";
import { ascending, BenchScope, floorRank, printResult } from "./_setup.js";

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

const STEPS = arg("steps") ?? 20_000;
const PROCESSES = arg("processes") ?? availableParallelism();
const CONCURRENCY = arg("concurrency") ?? 4;
const BURST = process.argv.includes("--burst");
const FLUSH_DELAY_MS = arg("flush-delay") ?? 1;

const scope = new BenchScope();
const dir = await scope.tempDir("exec");
const file = path.join(dir, "noop.ts");
await writeFile(file, `import { asset } from "tributary";\nexport const noop = asset({ key: "bench/noop" }, () => null);\n`);

const submittedAt = new Float64Array(STEPS + 1);
const finishedAt = new Float64Array(STEPS + 1);
const dispatchMs: number[] = [];
const reportMs: number[] = [];
let finished = 0;
let nextId = 1;
let executor: LocalExecutor | undefined;
let done: () => void = () => {};
const allDone = new Promise<void>((resolve) => (done = resolve));
// Date.now() is what workers stamp startedAt/endedAt with; compare like with like.
const epochOffset = Date.now() - performance.now();

const ok: StepInputs = { ok: true, inputs: {} };
const backend: ExecutionBackend = {
  async loadInputs(steps) {
    return new Map(steps.map((s) => [s.stepId, ok]));
  },
  async started() {},
  async heartbeat() {},
  async finished(results) {
    const now = performance.now();
    for (const r of results) {
      finishedAt[r.stepId] = now;
      if (r.outcome.kind !== "success") throw new Error(`step ${r.stepId} did not succeed: ${JSON.stringify(r.outcome)}`);
      if (r.startedAt) dispatchMs.push(r.startedAt.getTime() - (submittedAt[r.stepId]! + epochOffset));
      reportMs.push(now + epochOffset - r.endedAt.getTime());
    }
    finished += results.length;
    if (finished >= STEPS) done();
    else refill();
  },
  async addDynamicPartitions() {},
  async materialized() {
    return undefined;
  },
};

function step(stepId: number): StepDispatch {
  return {
    stepId,
    runId: "bench",
    tryNumber: 1,
    assetKey: "bench/noop",
    partitionKey: "",
    mapIndex: -1,
    partition: { window: null, dimensions: null },
    file,
    exportName: "noop",
    timeoutMs: 60_000,
    logRef: path.join(dir, "logs", `${stepId}.log`),
  };
}

function refill(): void {
  const n = Math.min(BURST ? STEPS : executor!.freeSlots(), STEPS + 1 - nextId);
  if (n <= 0) return;
  const batch: StepDispatch[] = [];
  const now = performance.now();
  for (let i = 0; i < n; i++) {
    const id = nextId++;
    submittedAt[id] = now;
    batch.push(step(id));
  }
  executor!.submit(batch);
}

executor = new LocalExecutor(backend, { processes: PROCESSES, concurrencyPerProcess: CONCURRENCY, flushDelayMs: FLUSH_DELAY_MS });
await executor.ready();
// Warm-up: every process imports the file and JITs the hot path.
{
  const warm = Array.from({ length: PROCESSES * CONCURRENCY * 4 }, (_, i) => step(STEPS + 1000 + i));
  const warmBackend = backend.finished;
  let left = warm.length;
  await new Promise<void>((resolve) => {
    backend.finished = async (results) => {
      left -= results.length;
      if (left <= 0) resolve();
    };
    for (let i = 0; i < warm.length; i += PROCESSES * CONCURRENCY) executor!.submit(warm.slice(i, i + PROCESSES * CONCURRENCY));
  });
  backend.finished = warmBackend;
}
const calls0 = { ...executor.reportCalls };

const began = performance.now();
refill();
await allDone;
const ms = performance.now() - began;
const calls = { started: executor.reportCalls.started - calls0.started, finished: executor.reportCalls.finished - calls0.finished };
await executor.close({ graceMs: 5_000 });
await scope.close();

const latencies: number[] = [];
for (let id = 1; id <= STEPS; id++) latencies.push(finishedAt[id]! - submittedAt[id]!);

const pct = (values: number[], p: number): number => +floorRank(ascending(values), p / 100)!.toFixed(2);

printResult(
  {
    steps: STEPS,
    mode: BURST ? "burst" : "keep-full",
    processes: PROCESSES,
    concurrencyPerProcess: CONCURRENCY,
    flushDelayMs: FLUSH_DELAY_MS,
    ms: Math.round(ms),
    stepsPerSec: Math.round((STEPS / ms) * 1000),
    p50SubmitToFinishedMs: pct(latencies, 50),
    p99SubmitToFinishedMs: pct(latencies, 99),
    p99SubmitToStartedMs: pct(dispatchMs, 99),
    p99EndToReportedMs: pct(reportMs, 99),
    backendCalls: { ...calls, perThousandSteps: +(((calls.started + calls.finished) / STEPS) * 1000).toFixed(1) },
  },
  2,
);

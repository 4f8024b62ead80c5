import { describe, expect, it } from "vitest";
import { BatchReporter } from "../../src/executor/batch-reporter.js";
import type { ExecutionBackend, StepResult, StepStarted } from "../../src/executor/index.js";

function started(stepId: number): StepStarted {
  return { stepId, tryNumber: 1, workerId: "w", hostname: "h", pid: 1, startedAt: new Date(0) };
}

function finished(stepId: number): StepResult {
  return {
    stepId,
    runId: "r",
    tryNumber: 1,
    outcome: { kind: "success", outputJson: "1", sizeBytes: 1 },
    startedAt: new Date(0),
    endedAt: new Date(1),
    workerId: "w",
    logRef: "/dev/null",
  };
}

/** Records calls as ["started"|"finished", ids]; `failures` makes the next N finished calls reject. */
function recordingBackend(options: { failures?: number } = {}) {
  const calls: [string, number[]][] = [];
  let failures = options.failures ?? 0;
  const backend: ExecutionBackend = {
    loadInputs: async () => new Map(),
    heartbeat: async () => {},
    addDynamicPartitions: async () => {},
    started: async (events) => {
      calls.push(["started", events.map((e) => e.stepId)]);
    },
    finished: async (results) => {
      if (failures > 0) {
        failures--;
        throw new Error("database is down");
      }
      calls.push(["finished", results.map((r) => r.stepId)]);
    },
  };
  return { backend, calls };
}

describe("BatchReporter", () => {
  it("coalesces events of one turn into one call each", async () => {
    const { backend, calls } = recordingBackend();
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, onError: () => {} });
    for (let i = 1; i <= 100; i++) reporter.started(started(i));
    for (let i = 1; i <= 100; i++) reporter.finished(finished(i));
    await reporter.drain(Date.now() + 1_000);
    expect(calls.map(([kind, ids]) => [kind, ids.length])).toEqual([
      ["started", 100],
      ["finished", 100],
    ]);
  });

  it("sends chunks of at most maxBatchSize, never a finish before its start", async () => {
    const { backend, calls } = recordingBackend();
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 3, onError: () => {} });
    for (let i = 1; i <= 5; i++) {
      reporter.started(started(i));
      reporter.finished(finished(i));
    }
    await reporter.drain(Date.now() + 1_000);
    const seenStarted = new Set<number>();
    for (const [kind, ids] of calls) {
      expect(ids.length).toBeLessThanOrEqual(3);
      for (const id of ids) {
        if (kind === "started") seenStarted.add(id);
        else expect(seenStarted.has(id)).toBe(true);
      }
    }
    expect(calls.filter(([k]) => k === "finished").flatMap(([, ids]) => ids)).toEqual([1, 2, 3, 4, 5]);
  });

  it("retries a failed call with backoff, without sending starts twice", async () => {
    const { backend, calls } = recordingBackend({ failures: 2 });
    const errors: string[] = [];
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, onError: (_e, what) => errors.push(what) });
    reporter.started(started(1));
    reporter.finished(finished(1));
    await reporter.drain(Date.now() + 5_000);
    expect(calls).toEqual([
      ["started", [1]],
      ["finished", [1]],
    ]);
    expect(errors).toEqual(["reporting finished steps", "reporting finished steps"]);
  });

  it("gives up at the drain deadline and says how much was lost", async () => {
    const { backend } = recordingBackend({ failures: 1_000 });
    const errors: string[] = [];
    const reporter = new BatchReporter(backend, {
      flushDelayMs: 1,
      maxBatchSize: 500,
      onError: (e) => errors.push((e as Error).message),
    });
    reporter.finished(finished(1));
    reporter.finished(finished(2));
    const began = Date.now();
    await reporter.drain(Date.now() + 300);
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(errors.at(-1)).toBe("2 step reports could not be delivered before the executor closed");
    expect(reporter.pending).toBe(0);
  });
});

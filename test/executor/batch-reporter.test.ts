import { describe, expect, it, vi } from "vitest";
import { BatchReporter } from "../../src/executor/batch-reporter.js";
import type { ExecutionBackend, StepResult, StepStarted } from "../../src/execution/index.js";

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
    materialized: async () => undefined,
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
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 1; i <= 100; i++) reporter.finished(finished(i));
    await reporter.drain(Date.now() + 1_000);
    expect(calls.map(([kind, ids]) => [kind, ids.length])).toEqual([
      ["started", 100],
      ["finished", 100],
    ]);
  });

  it("folds a start into its finish when both wait in one batch", async () => {
    const { backend, calls } = recordingBackend();
    const finishedSeen: StepResult[] = [];
    const wrapped: ExecutionBackend = { ...backend, finished: async (r) => (finishedSeen.push(...r), backend.finished(r)) };
    const reporter = new BatchReporter(wrapped, { flushDelayMs: 1, maxBatchSize: 500, onError: () => {} });
    reporter.started(started(7));
    reporter.finished(finished(7));
    await reporter.drain(Date.now() + 1_000);
    expect(calls).toEqual([["finished", [7]]]);
    expect(finishedSeen[0]).toMatchObject({ stepId: 7, hostname: "h", pid: 1 });
  });

  it("never delivers a finish before its start, with several calls in flight", async () => {
    const order: string[] = [];
    let releaseStart!: () => void;
    const backend: ExecutionBackend = {
      loadInputs: async () => new Map(),
      heartbeat: async () => {},
      addDynamicPartitions: async () => {},
      materialized: async () => undefined,
      started: async (events) => {
        await new Promise<void>((r) => (releaseStart = r));
        order.push(...events.map((e) => `started:${e.stepId}`));
      },
      finished: async (results) => {
        order.push(...results.map((r) => `finished:${r.stepId}`));
      },
    };
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, maxInFlight: 2, onError: () => {} });
    reporter.started(started(1));
    await new Promise((r) => setTimeout(r, 20));
    reporter.finished(finished(1));
    await new Promise((r) => setTimeout(r, 20));
    releaseStart();
    await reporter.drain(Date.now() + 1_000);
    expect(order).toEqual(["started:1", "finished:1"]);
  });

  it("sends chunks of at most maxBatchSize; a start and finish in one chunk go out as one report", async () => {
    const { backend, calls } = recordingBackend();
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 3, onError: () => {} });
    for (let i = 1; i <= 5; i++) {
      reporter.started(started(i));
      reporter.finished(finished(i));
    }
    await reporter.drain(Date.now() + 1_000);
    for (const [, ids] of calls) expect(ids.length).toBeLessThanOrEqual(3);
    expect(
      calls
        .filter(([k]) => k === "finished")
        .flatMap(([, ids]) => ids)
        .sort(),
    ).toEqual([1, 2, 3, 4, 5]);
    // Chunks [s1 f1 s2] [f2 s3 f3] [s4 f4 s5] [f5]: only starts whose finish is in a later chunk go out alone.
    expect(
      calls
        .filter(([k]) => k === "started")
        .flatMap(([, ids]) => ids)
        .sort(),
    ).toEqual([2, 5]);
  });

  it("retries a failed call with backoff, without sending starts twice", async () => {
    const { backend, calls } = recordingBackend({ failures: 2 });
    const errors: string[] = [];
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, onError: (_e, what) => errors.push(what) });
    reporter.started(started(1));
    await new Promise((r) => setTimeout(r, 20));
    reporter.finished(finished(1));
    await reporter.drain(Date.now() + 5_000);
    expect(calls).toEqual([
      ["started", [1]],
      ["finished", [1]],
    ]);
    expect(errors).toEqual(["reporting finished steps", "reporting finished steps"]);
  });

  it("lists a finish as undelivered, for its heartbeats, until a call delivers it", async () => {
    let down = true;
    let attempts = 0;
    const delivered: number[] = [];
    const { backend } = recordingBackend();
    backend.finished = async (results) => {
      attempts++;
      if (down) throw new Error("database is down");
      delivered.push(...results.map((r) => r.stepId));
    };
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, onError: () => {} });
    reporter.finished(finished(1));
    reporter.finished(finished(2));
    const both = [
      { stepId: 1, tryNumber: 1 },
      { stepId: 2, tryNumber: 1 },
    ];
    expect(reporter.undeliveredFinishes()).toEqual(both);
    // Calls failed and put back for a retry: still undelivered.
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    expect(reporter.undeliveredFinishes()).toEqual(both);
    down = false;
    await vi.waitFor(() => expect(delivered).toEqual([1, 2]), { timeout: 10_000 });
    expect(reporter.undeliveredFinishes()).toEqual([]);
    await reporter.drain(Date.now() + 1_000);
  });

  it("retries when its timer fires before the wall clock reaches the retry time", async () => {
    let attempts = 0;
    const delivered: number[] = [];
    const { backend } = recordingBackend();
    backend.finished = async (results) => {
      attempts++;
      if (attempts === 1) throw new Error("database is down");
      delivered.push(...results.map((r) => r.stepId));
    };
    const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, onError: () => {} });
    reporter.finished(finished(1));
    await vi.waitFor(() => expect(attempts).toBe(1), { timeout: 10_000, interval: 5 });
    // The wall clock 20 ms behind the timers' from now on: the retry timer fires before Date.now() reaches the time
    // the retry was set for. No other event comes to wake the reporter.
    const wallClock = Date.now.bind(Date);
    const behind = vi.spyOn(Date, "now").mockImplementation(() => wallClock() - 20);
    try {
      await vi.waitFor(() => expect(delivered).toEqual([1]), { timeout: 10_000 });
    } finally {
      behind.mockRestore();
    }
    await reporter.drain(Date.now() + 1_000);
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
    expect(reporter.undeliveredFinishes()).toEqual([]);
  });
  describe("with startDelayMs", () => {
    it("holds a start back and sends it with the step's finish: one report", async () => {
      const { backend, calls } = recordingBackend();
      const finishedSeen: StepResult[] = [];
      const wrapped: ExecutionBackend = { ...backend, finished: async (r) => (finishedSeen.push(...r), backend.finished(r)) };
      const reporter = new BatchReporter(wrapped, { flushDelayMs: 1, maxBatchSize: 500, startDelayMs: 60_000, onError: () => {} });
      reporter.started(started(1));
      reporter.started(started(2));
      expect(reporter.pending).toBe(2);
      // A turn of the event loop and a flush later, nothing has gone out: the starts wait for their finishes.
      await new Promise((r) => setTimeout(r, 20));
      expect(calls).toEqual([]);
      reporter.finished(finished(1));
      await vi.waitFor(() => expect(calls).toEqual([["finished", [1]]]));
      expect(finishedSeen[0]).toMatchObject({ stepId: 1, hostname: "h", pid: 1 });
      // Step 2 is still running: its start is held until the executor closes, which sends it.
      expect(reporter.pending).toBe(1);
      await reporter.drain(Date.now() + 1_000);
      expect(calls).toEqual([
        ["finished", [1]],
        ["started", [2]],
      ]);
      expect(reporter.pending).toBe(0);
    });

    it("sends a start alone once the delay has passed, then the finish", async () => {
      const { backend, calls } = recordingBackend();
      const reporter = new BatchReporter(backend, { flushDelayMs: 1, maxBatchSize: 500, startDelayMs: 10, onError: () => {} });
      reporter.started(started(1));
      reporter.started(started(2));
      await vi.waitFor(() => expect(calls).toEqual([["started", [1, 2]]]));
      reporter.finished(finished(1));
      reporter.finished(finished(2));
      await reporter.drain(Date.now() + 1_000);
      expect(calls).toEqual([
        ["started", [1, 2]],
        ["finished", [1, 2]],
      ]);
    });

    it("does not hold starts that come while the executor closes", async () => {
      const { backend, calls } = recordingBackend();
      let release!: () => void;
      const slow: ExecutionBackend = {
        ...backend,
        finished: async (r) => (await new Promise<void>((res) => (release = res)), backend.finished(r)),
      };
      const reporter = new BatchReporter(slow, { flushDelayMs: 1, maxBatchSize: 500, startDelayMs: 60_000, onError: () => {} });
      reporter.finished(finished(1));
      await vi.waitFor(() => expect(release).toBeDefined());
      const drained = reporter.drain(Date.now() + 5_000);
      reporter.started(started(2));
      release();
      await drained;
      expect(calls).toEqual([
        ["finished", [1]],
        ["started", [2]],
      ]);
    });
  });
});

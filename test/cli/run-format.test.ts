// `tributary run <id>` for people: the step table, then every failed try with whose fault it was.
import { afterEach, describe, expect, it, vi } from "vitest";
import { printRun } from "../../src/cli/run-format.js";
import type { RunView, StepView } from "../../src/cli/runs-client.js";
import type { StepTryRecord } from "../../src/storage/index.js";

const T = (s: number) => new Date(Date.UTC(2025, 5, 1, 10, 0, s));

function tryOf(
  tryNumber: number,
  state: StepTryRecord["state"],
  failure?: { class: StepTryRecord["failureClass"]; code: string; message: string },
): StepTryRecord {
  return {
    tryNumber,
    state,
    workerId: "w-1",
    hostname: "h",
    pid: 7,
    queuedAt: T(tryNumber * 10),
    startedAt: T(tryNumber * 10 + 1),
    endedAt: T(tryNumber * 10 + 2),
    durationMs: 1000,
    error: failure ? { name: "TributaryError", code: failure.code, message: failure.message } : null,
    failureClass: failure?.class ?? null,
    logRef: null,
  };
}

function stepOf(id: number, assetKey: string, tries: StepTryRecord[]): StepView {
  const last = tries.at(-1)!;
  return {
    id,
    runId: "r-1",
    assetKey,
    partitionKey: "2025-06-01",
    mapIndex: -1,
    checkName: null,
    mapLabel: null,
    mapCount: null,
    state: last.state,
    tryNumber: last.tryNumber,
    maxTries: tries.length,
    pool: "default_pool",
    priority: 0,
    scheduledAt: T(0),
    queuedAt: T(0),
    startedAt: T(1),
    endedAt: last.endedAt,
    nextRetryAt: null,
    workerId: "w-1",
    skipReason: null,
    error: last.error,
    upstream: [],
    tries,
    waitingFor: null,
  };
}

function printed(run: RunView): string {
  const chunks: string[] = [];
  const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    printRun(run);
  } finally {
    write.mockRestore();
  }
  // eslint-disable-next-line no-control-regex -- strips ANSI colour codes
  return chunks.join("").replace(/\u001b\[[0-9;]*m/g, "");
}

const run = (steps: StepView[]): RunView => ({
  id: "r-1",
  status: "success",
  origin: "manual",
  snapshotVersion: 1,
  jobName: null,
  priority: 0,
  tags: {},
  stepsTotal: steps.length,
  stepsDone: steps.length,
  stepsFailed: 0,
  stepsActive: 0,
  createdAt: T(0),
  startedAt: T(0),
  endedAt: T(59),
  cancelRequestedAt: null,
  backfillId: null,
  planVersion: 1,
  plan: null,
  steps,
});

describe("printRun", () => {
  afterEach(() => vi.restoreAllMocks());

  it("lists each failed try with whose fault it was, in plan order", () => {
    const out = printed(
      run([
        stepOf(1, "sales/orders", [
          tryOf(1, "failed", { class: "infrastructure", code: "STEP_ZOMBIE", message: "no heartbeat from worker w-1 for more than 60 s" }),
          tryOf(2, "failed", { class: "user", code: "USER_CODE_ERROR", message: "warehouse said no\nsecond line" }),
          tryOf(3, "success"),
        ]),
        stepOf(2, "sales/clean", [tryOf(1, "success")]),
      ]),
    );
    const lines = out.split("\n");
    const at = lines.indexOf("failed tries:");
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toMatch(/^asset\s+partition\s+try\s+failure\s+error$/);
    expect(lines[at + 2]).toMatch(/^sales\/orders\s+2025-06-01\s+1\s+infrastructure\s+\[STEP_ZOMBIE\] no heartbeat from worker w-1/);
    expect(lines[at + 3]).toMatch(/^sales\/orders\s+2025-06-01\s+2\s+user\s+\[USER_CODE_ERROR\] warehouse said no$/);
    expect(lines).toHaveLength(at + 5); // and the final newline
  });

  it("prints no failed-try table for a run whose tries all succeeded, and '-' for a try recorded without a class", () => {
    expect(printed(run([stepOf(1, "a", [tryOf(1, "success")])]))).not.toContain("failed tries");
    const out = printed(run([stepOf(1, "a", [tryOf(1, "failed", { class: null, code: "OLD", message: "before classes" })])]));
    expect(out).toMatch(/failed tries:\n.*\na\s+2025-06-01\s+1\s+-\s+\[OLD\] before classes\n$/);
  });
});

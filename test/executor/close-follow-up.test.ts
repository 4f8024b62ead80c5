import { afterAll, describe, expect, it } from "vitest";
import { InProcessExecutor, STEP_ERROR_CODES } from "../../src/executor/index.js";
import type { ExecutionBackend, StepDispatch, StepResult } from "../../src/execution/index.js";
import { asset } from "../../src/index.js";
import { dispatch, errorOf, FakeBackend, removeTempDirs, tempDir, waitUntil } from "./helpers.js";

/**
 * A backend whose first `finished` call is held until the test lets it go, and then hands back downstream steps
 * (the completion fast path), the way the store does when it had free slots at the time the call was made.
 */
class FollowUpBackend extends FakeBackend {
  followUps: StepDispatch[] = [];
  held = false;
  private release: (() => void) | undefined;
  private gate: Promise<void> | undefined = new Promise((resolve) => (this.release = resolve));
  readonly reported: StepResult[] = [];

  override async finished(results: readonly StepResult[]): Promise<void> {
    this.reported.push(...results);
    await super.finished(results);
  }

  /** The ExecutionBackend method the executor calls: records, then (the first time) waits and hands back steps. */
  readonly finishedWithFollowUps = async (results: readonly StepResult[]): Promise<readonly StepDispatch[]> => {
    await this.finished(results);
    const gate = this.gate;
    if (!gate) return [];
    this.gate = undefined;
    this.held = true;
    await gate;
    const next = this.followUps;
    this.followUps = [];
    return next;
  };

  letGo(): void {
    this.release?.();
  }
}

/** The backend as the executor sees it: its finished() may hand back steps. */
function asExecutionBackend(backend: FollowUpBackend): ExecutionBackend {
  return {
    loadInputs: (steps) => backend.loadInputs(steps),
    started: (events) => backend.started(events),
    heartbeat: (steps) => backend.heartbeat(steps),
    finished: (results) => backend.finishedWithFollowUps(results),
    addDynamicPartitions: (name, keys) => backend.addDynamicPartitions(name, keys),
    materialized: (key, partition) => backend.materialized(key, partition),
  };
}

describe("an executor closing while a completion hands back steps", () => {
  afterAll(removeTempDirs);

  it("hands the steps back at once (unstarted, closed), instead of leaving them claimed until the queued timeout", async () => {
    const backend = new FollowUpBackend();
    const errors: string[] = [];
    const up = asset({ key: "t/up" }, () => 1);
    const down = asset({ key: "t/down" }, () => 2);
    const executor = new InProcessExecutor(asExecutionBackend(backend), {
      importModule: async () => ({ up, down }),
      onError: (err, what) => errors.push(`${what}: ${(err as Error).message}`),
    });
    const dir = await tempDir();
    const first = dispatch(dir, "virtual.ts", "up", "t/up");
    const next = dispatch(dir, "virtual.ts", "down", "t/down");
    backend.followUps = [next];
    executor.submit([first]);
    await waitUntil(() => backend.held, 30_000, "the completion of t/up to be in flight");
    const closing = executor.close({ graceMs: 1_000 });
    backend.letGo();
    await closing;

    const handedBack = backend.results.get(next.stepId);
    expect(handedBack, "t/down was reported").toBeDefined();
    expect(handedBack!.startedAt).toBeNull();
    expect(errorOf(handedBack!)).toMatchObject({ code: STEP_ERROR_CODES.closed, retryable: true });
    // t/up's result was delivered once: the hand-back is not an error that makes the reporter send it again.
    expect(backend.reported.filter((r) => r.stepId === first.stepId)).toHaveLength(1);
    expect(errors).toEqual([]);
  });
});

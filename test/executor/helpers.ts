import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FailureClass, SerializedError } from "../../src/errors/index.js";
import type { ExecutionBackend, InputsRequest, StepDispatch, StepInputs, StepResult, StepStarted } from "../../src/execution/index.js";

/** The SDK by absolute path: definitions that work both in worker processes and in vitest's own process. */
export const SDK_PATH = fileURLToPath(new URL("../../src/index.ts", import.meta.url));

const made: string[] = [];

/** A fresh directory under the system temp dir (outside this package) holding these files. */
export async function tempDir(files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-exec-"));
  made.push(dir);
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), text);
  }
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(made.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

export async function readLog(file: string): Promise<string> {
  return readFile(file, "utf8").catch(() => "");
}

let nextStepId = 1;

/** A dispatch for export `exportName` of `file`; logs go under `dir/logs`. */
export function dispatch(
  dir: string,
  file: string,
  exportName: string,
  assetKey: string,
  overrides: Partial<StepDispatch> = {},
): StepDispatch {
  const stepId = overrides.stepId ?? nextStepId++;
  return {
    stepId,
    runId: "run-1",
    tryNumber: 1,
    assetKey,
    partitionKey: "",
    mapIndex: -1,
    partition: { window: null, dimensions: null },
    file: path.join(dir, file),
    exportName,
    timeoutMs: null,
    logRef: path.join(dir, "logs", `step-${stepId}-try-${overrides.tryNumber ?? 1}.log`),
    ...overrides,
  };
}

/**
 * An ExecutionBackend that records every call. Inputs come from `inputs`
 * (per step id; default `{}`); `waitFor(ids)` resolves once those steps finished.
 */
export class FakeBackend implements ExecutionBackend {
  readonly calls = { loadInputs: 0, started: 0, heartbeat: 0, finished: 0 };
  readonly startedEvents: StepStarted[] = [];
  readonly results = new Map<number, StepResult>();
  readonly heartbeats: { stepId: number; tryNumber: number }[][] = [];
  readonly dynamicPartitions: { name: string; keys: readonly string[] }[] = [];
  readonly inputs = new Map<number, StepInputs>();
  /** Make loadInputs reject with this. */
  loadInputsError: Error | undefined;
  /** Checked on every finished call: a step reported finished before its start was delivered (or folded in) breaks the contract. */
  readonly orderViolations: number[] = [];
  private waiters: { ids: number[]; resolve: () => void }[] = [];

  async loadInputs(steps: readonly InputsRequest[]): Promise<ReadonlyMap<number, StepInputs>> {
    this.calls.loadInputs++;
    if (this.loadInputsError) throw this.loadInputsError;
    return new Map(steps.map((s) => [s.stepId, this.inputs.get(s.stepId) ?? { ok: true as const, inputs: {} }]));
  }

  async started(events: readonly StepStarted[]): Promise<void> {
    this.calls.started++;
    this.startedEvents.push(...events);
  }

  async heartbeat(steps: readonly { stepId: number; tryNumber: number }[]): Promise<void> {
    this.calls.heartbeat++;
    this.heartbeats.push([...steps]);
  }

  async finished(results: readonly StepResult[]): Promise<void> {
    this.calls.finished++;
    for (const r of results) {
      // A start folded into its finish (same batch) carries the worker's hostname and pid.
      const folded = r.hostname !== undefined && r.pid !== undefined;
      if (r.startedAt !== null && !folded && !this.startedEvents.some((e) => e.stepId === r.stepId && e.tryNumber === r.tryNumber)) {
        this.orderViolations.push(r.stepId);
      }
      this.results.set(r.stepId, r);
    }
    this.waiters = this.waiters.filter((w) => {
      if (!w.ids.every((id) => this.results.has(id))) return true;
      w.resolve();
      return false;
    });
  }

  async addDynamicPartitions(name: string, keys: readonly string[]): Promise<void> {
    this.dynamicPartitions.push({ name, keys });
  }

  /** Asset partitions tests declare materialised, for assetMaterialized checks in poke and reschedule waits. */
  readonly materializedPartitions = new Map<string, number>();

  async materialized(assetKey: string, partitionKey: string): Promise<{ eventId: number } | undefined> {
    const eventId = this.materializedPartitions.get(`${assetKey}|${partitionKey}`);
    return eventId === undefined ? undefined : { eventId };
  }

  waitFor(ids: readonly number[], timeoutMs = 30_000): Promise<StepResult[]> {
    const done = (): StepResult[] => ids.map((id) => this.results.get(id)!);
    if (ids.every((id) => this.results.has(id))) return Promise.resolve(done());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const missing = ids.filter((id) => !this.results.has(id));
        reject(new Error(`steps ${missing.join(", ")} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push({
        ids: [...ids],
        resolve: () => {
          clearTimeout(timer);
          resolve(done());
        },
      });
    });
  }

  async result(id: number, timeoutMs?: number): Promise<StepResult> {
    return (await this.waitFor([id], timeoutMs))[0]!;
  }

  /** The step's start as reported: alone, or folded into its finish (which then carries hostname and pid). */
  startedEvent(id: number): StepStarted | undefined {
    const alone = this.startedEvents.find((e) => e.stepId === id);
    if (alone) return alone;
    const r = this.results.get(id);
    if (!r || r.hostname === undefined || r.pid === undefined || !r.startedAt) return undefined;
    return { stepId: r.stepId, tryNumber: r.tryNumber, workerId: r.workerId, hostname: r.hostname, pid: r.pid, startedAt: r.startedAt };
  }
}

/** The error of a failed result (throws when it did not fail). */
export function errorOf(result: StepResult): SerializedError & { retryable: boolean; failureClass: FailureClass } {
  if (result.outcome.kind !== "failed") throw new Error(`expected a failed step, got ${JSON.stringify(result.outcome)}`);
  return { ...result.outcome.error, retryable: result.outcome.retryable, failureClass: result.outcome.failureClass };
}

/** True while a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitUntil(condition: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

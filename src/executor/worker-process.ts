/// <reference path="../import-meta.d.ts" />
import { fork, type ChildProcess } from "node:child_process";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { serializeError, type FailureClass, type TributaryError } from "../errors/index.js";
import { precompiled } from "../precompiled.mjs";
import type { Lane, LaneStep } from "./lane.js";
import type { StepOutcome } from "../execution/index.js";
import type { FromWorker, HostCall, ToWorker } from "./worker-protocol.js";

/**
 * Where the precompiled worker is, if it is to be used: always by precompiled code, and by code run from the sources
 * (a test) while it was built from the sources as they are now (it starts in a fraction of the time).
 */
const PRECOMPILED = import.meta.precompiled ?? precompiledDir();
// From the sources, plain JS that registers tsx, then runs worker-child.ts. Precompiled, worker-child.ts compiled,
// its stack traces naming the sources through their maps (see worker-child.ts).
const ENTRY = fileURLToPath(PRECOMPILED ? new URL("worker-child.mjs", PRECOMPILED) : new URL("./worker-entry.mjs", import.meta.url));
/** What definitions files import as `tributary`: this checkout's SDK, the instance the worker's code uses. */
const SDK_URL = PRECOMPILED ? new URL("index.mjs", PRECOMPILED).href : new URL("../index.ts", import.meta.url).href;
const STDERR_TAIL_BYTES = 16 * 1024;
/** How long a child may take to start (tsx and the SDK) before it counts as broken. */
const START_LIMIT_MS = 60_000;
/** After `exit`, how long to wait for the last of stderr (a grandchild may hold the pipe open). */
const STDERR_DRAIN_MS = 250;
const HOSTNAME = hostname();

export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The end of the child's stderr (V8 prints out-of-memory reports there). */
  readonly stderr: string;
  /** It never became ready: a start-up failure, not a step's doing. */
  readonly beforeReady: boolean;
}

export interface WorkerProcessEvents {
  ready(worker: WorkerProcess): void;
  /** Wraps the handling of one message's events. */
  batch(handle: () => void): void;
  started(worker: WorkerProcess, stepId: number, tryNumber: number, at: number): void;
  finished(worker: WorkerProcess, stepId: number, tryNumber: number, outcome: StepOutcome, startedAt: number, endedAt: number): void;
  /** Answers a host call of a step's code (ctx.addDynamicPartitions, assetMaterialized checks). */
  call(call: HostCall): Promise<unknown>;
  /** The process ended without being told to (not after kill() or shutdown()). */
  exited(worker: WorkerProcess, exit: WorkerExit): void;
}

export interface WorkerProcessOptions {
  readonly memoryMb: number;
  readonly capacity: number;
  readonly definitionsDir: string | undefined;
}

/** One long-lived worker child process: a lane of the LocalExecutor. */
export class WorkerProcess implements Lane {
  readonly endsBy = "kill" as const;
  readonly capacity: number;
  readonly workerId: string;
  readonly pid: number;
  /** Resolves once the process has ended. */
  readonly closed: Promise<void>;
  private readonly proc: ChildProcess;
  private isReady = false;
  private retiring = false;
  /** kill() or shutdown() was called: the exit is ours, not news. */
  private ending = false;
  private exited = false;
  private stderrTail = "";

  constructor(
    options: WorkerProcessOptions,
    private readonly events: WorkerProcessEvents,
  ) {
    this.capacity = options.capacity;
    this.proc = fork(ENTRY, [SDK_URL, options.definitionsDir ?? ""], {
      // Explicit, so the parent's own flags (a tsx loader, inspector) are not inherited.
      execArgv: [`--max-old-space-size=${options.memoryMb}`],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
    });
    this.pid = this.proc.pid ?? -1;
    this.workerId = `local:${HOSTNAME}:${this.pid}`;
    // Console output outside any step (definitions at import time go to the step's log) is not kept.
    this.proc.stdout?.resume();
    this.proc.stderr?.setEncoding("utf8");
    this.proc.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_BYTES);
    });
    const startTimer = setTimeout(() => {
      if (this.isReady) return;
      this.stderrTail += `\nthe worker process did not start within ${START_LIMIT_MS / 1000} s`;
      this.proc.kill("SIGKILL");
    }, START_LIMIT_MS);
    startTimer.unref();
    this.proc.on("message", (message: FromWorker) => this.onMessage(message));
    this.closed = new Promise<void>((resolve) => {
      let reported = false;
      const report = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (reported) return;
        reported = true;
        clearTimeout(startTimer);
        this.exited = true;
        resolve();
        if (!this.ending) {
          this.events.exited(this, { code, signal, stderr: this.stderrTail, beforeReady: !this.isReady });
        }
      };
      this.proc.once("close", (code, signal) => report(code, signal));
      this.proc.once("exit", (code, signal) => {
        setTimeout(() => report(code, signal), STDERR_DRAIN_MS).unref();
      });
      // A fork that cannot spawn emits error and may never emit close.
      this.proc.on("error", (err) => {
        this.stderrTail += `\n${err.message}`;
        if (this.proc.exitCode === null && this.proc.signalCode === null && this.proc.pid === undefined) report(null, null);
      });
    });
  }

  get ready(): boolean {
    return this.isReady;
  }

  get accepting(): boolean {
    return this.isReady && !this.retiring && !this.ending && !this.exited;
  }

  /** Takes no new steps; the executor shuts it down once its steps are done. */
  retire(): void {
    this.retiring = true;
  }

  get isRetiring(): boolean {
    return this.retiring;
  }

  run(steps: readonly LaneStep[]): void {
    this.send(runMessage(steps));
  }

  abort(stepId: number, reason: TributaryError): void {
    this.send({ t: "abort", stepId, code: reason.code, message: reason.message, location: reason.location });
  }

  abandon(): void {
    // A process lane ends stuck steps by being killed.
  }

  kill(): void {
    this.ending = true;
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
  }

  /** Asks the child to exit (it does when the IPC channel closes); SIGKILLs it after `graceMs`. */
  async shutdown(graceMs: number): Promise<void> {
    this.ending = true;
    // Still starting: no user code runs in it yet, nothing to wait for.
    if (!this.isReady) this.kill();
    else if (this.proc.connected) this.proc.disconnect();
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.closed;
    clearTimeout(timer);
  }

  private send(message: ToWorker): void {
    if (!this.proc.connected) return; // It died: its exit handler fails the steps.
    try {
      this.proc.send(message);
    } catch {
      // The channel closed under us: same as above.
    }
  }

  private onMessage(message: FromWorker): void {
    if (this.ending || this.exited) return;
    if (message.t === "ready") {
      this.isReady = true;
      this.events.ready(this);
      return;
    }
    this.events.batch(() => {
      for (const e of message.events) {
        if (e.t === "started") this.events.started(this, e.stepId, e.tryNumber, e.at);
        else if (e.t === "done") this.events.finished(this, e.stepId, e.tryNumber, e.outcome, e.startedAt, e.endedAt);
        else {
          Promise.resolve()
            .then(() => this.events.call(e.call))
            .then(
              (value) => this.send({ t: "call-done", id: e.id, value: value ?? null }),
              (err: unknown) => this.send({ t: "call-done", id: e.id, error: serializeError(err) }),
            );
        }
      }
    });
  }
}

/**
 * Signals that come from outside a process: an operator, a container runtime stopping or evicting it, a host
 * shutting down — or the kernel's out-of-memory killer, which cannot be told apart from them (a SIGKILL says
 * nothing of who sent it) and picks its victim by size across the whole host.
 */
const EXTERNAL_SIGNALS: ReadonlySet<string> = new Set(["SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"]);

/**
 * Why a worker process ended, as the error its steps report, and whose fault that is. Its own heap limit, a fault
 * the process raised itself (SIGSEGV, SIGABRT… from native code a step loaded) or an exit it made are the user's:
 * the process runs nothing but the steps' code, and the same try would end the same way again. A signal from
 * outside (see EXTERNAL_SIGNALS) is infrastructure: the steps did nothing wrong that anyone can tell, and they run
 * again on the infrastructure budget, which is bounded, so a step that reliably draws the kernel's OOM killer still
 * fails after it, naming the signal.
 */
export function describeExit(
  exit: WorkerExit,
  memoryMb: number,
): { code: "WORKER_OUT_OF_MEMORY" | "WORKER_EXITED"; message: string; failureClass: FailureClass } {
  if (/heap out of memory|Reached heap limit|Allocation failed|out of memory/i.test(exit.stderr)) {
    return {
      code: "WORKER_OUT_OF_MEMORY",
      message:
        `its worker process ran out of memory (heap limit ${memoryMb} MB) and died. A step in that process ` +
        `used too much memory: process data in chunks, or raise memoryMb for the local executor`,
      failureClass: "user",
    };
  }
  const how =
    exit.signal !== null
      ? `was killed by ${exit.signal}${exit.signal === "SIGKILL" ? " (possibly by the operating system's out-of-memory killer)" : ""}`
      : `exited with code ${exit.code}`;
  const tail = lastLines(exit.stderr, 5);
  return {
    code: "WORKER_EXITED",
    message: `its worker process ${how}${tail ? `; its last output: ${tail}` : ""}`,
    failureClass: exit.signal !== null && EXTERNAL_SIGNALS.has(exit.signal) ? "infrastructure" : "user",
  };
}

function lastLines(text: string, n: number): string {
  return text.trim().split("\n").slice(-n).join(" | ").slice(-1_000);
}

/**
 * The message that hands steps to a worker, each input object read by several of the steps sent once (the
 * backend gives one object per upstream output in a batch): a fan-out's mapped steps all read the list they
 * were mapped from, and serialising it once per step costs more than running them.
 */
export function runMessage(steps: readonly Pick<LaneStep, "dispatch" | "inputs">[]): Extract<ToWorker, { t: "run" }> {
  const uses = new Map<object, number>();
  for (const s of steps) {
    for (const v of Object.values(s.inputs)) if (typeof v === "object" && v !== null) uses.set(v, (uses.get(v) ?? 0) + 1);
  }
  const index = new Map<object, number>();
  for (const [v, n] of uses) if (n > 1) index.set(v, index.size);
  if (index.size === 0) return { t: "run", steps: steps.map((s) => ({ d: s.dispatch, inputs: s.inputs })) };
  return {
    t: "run",
    shared: [...index.keys()],
    steps: steps.map((s) => {
      const inputs: Record<string, unknown> = {};
      const sharedInputs: Record<string, number> = {};
      for (const [name, v] of Object.entries(s.inputs)) {
        const i = typeof v === "object" && v !== null ? index.get(v) : undefined;
        if (i === undefined) inputs[name] = v;
        else sharedInputs[name] = i;
      }
      return Object.keys(sharedInputs).length > 0 ? { d: s.dispatch, inputs, sharedInputs } : { d: s.dispatch, inputs };
    }),
  };
}

function precompiledDir(): string | undefined {
  const found = precompiled();
  return "dir" in found ? found.dir.href : undefined;
}

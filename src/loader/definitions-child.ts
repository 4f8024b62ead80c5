import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ChildMessage, LoadReply, LoadRequest } from "./child-protocol.js";

// Plain JS: it loads a bundled SDK, then registers tsx, then runs load-child.ts.
const CHILD_SCRIPT = fileURLToPath(new URL("./child-entry.mjs", import.meta.url));
const TAIL_BYTES = 16 * 1024;
/** How long a child may take to start (tsx + SDK) before it counts as broken. */
const START_LIMIT_MS = 60_000;

export type ChildOutcome =
  | { readonly kind: "reply"; readonly reply: LoadReply; readonly ms: number }
  | { readonly kind: "timeout"; readonly ms: number }
  /** The process ended without a reply. */
  | {
      readonly kind: "exit";
      readonly ms: number;
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
      readonly stderr: string;
    };

/**
 * One definitions child process: started ahead of time (tsx and the SDK
 * loaded, waiting for a path), then used for exactly one file.
 */
export class DefinitionsChild {
  /** true once the child is waiting for a file; false when it died or took too long to start. */
  readonly ready: Promise<boolean>;
  /** Resolves when the process has ended and its output is drained. */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly proc: ChildProcess;
  private stderrTail = "";
  private reply: LoadReply | undefined;
  private onReply: ((reply: LoadReply) => void) | undefined;
  private used = false;

  /** `sdkUrl`: what `tributary` resolves to in the child (see sdkEntryUrl). */
  constructor(dir: string, memoryMb: number, sdkUrl: string) {
    this.proc = fork(CHILD_SCRIPT, [dir, sdkUrl], {
      execArgv: [`--max-old-space-size=${memoryMb}`],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
    });
    // Definitions files may print at import; keep the end of stderr for crash reports.
    this.proc.stdout?.resume();
    this.proc.stderr?.setEncoding("utf8");
    this.proc.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-TAIL_BYTES);
    });
    this.closed = new Promise((resolve) => {
      this.proc.once("close", (code, signal) => resolve({ code, signal }));
      // A fork that cannot spawn emits error and may never emit close.
      this.proc.once("error", (err) => {
        this.stderrTail += `\n${err.message}`;
        resolve({ code: null, signal: null });
      });
    });
    this.ready = new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.stderrTail += `\nthe loader child did not start within ${START_LIMIT_MS / 1000} s`;
        this.kill();
        resolve(false);
      }, START_LIMIT_MS);
      timer.unref();
      this.proc.on("message", (message: ChildMessage) => {
        if (message.type === "ready") {
          clearTimeout(timer);
          resolve(true);
        } else if (message.type === "result") {
          this.reply = message;
          this.onReply?.(message);
        }
      });
      void this.closed.then(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
  }

  /** Why the child could not start, from its stderr. */
  get startFailure(): string {
    return this.stderrTail.trim();
  }

  /** Imports one file in the (ready) child; SIGKILLs it when `timeoutMs` passes first. */
  async load(request: LoadRequest, timeoutMs: number): Promise<ChildOutcome> {
    if (this.used) throw new Error("a definitions child loads exactly one file");
    this.used = true;
    const started = performance.now();
    let timedOut = false;
    const replied = new Promise<LoadReply | undefined>((resolve) => {
      this.onReply = resolve;
      void this.closed.then(() => resolve(this.reply));
    });
    const timer = setTimeout(() => {
      timedOut = true;
      this.kill();
    }, timeoutMs);
    this.proc.send(request);
    const reply = await replied;
    clearTimeout(timer);
    const ms = performance.now() - started;
    if (reply) {
      // The child exits by itself once the reply is flushed; make sure of it.
      setTimeout(() => this.kill(), 5_000).unref();
      return { kind: "reply", reply, ms };
    }
    if (timedOut) return { kind: "timeout", ms };
    const { code, signal } = await this.closed;
    return { kind: "exit", ms, code, signal, stderr: this.stderrTail };
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
  }
}

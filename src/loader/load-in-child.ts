import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Duplex, Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { EXTRA_CA_CERTS_ENV, type ChildMessage, type LoadReply, type LoadRequest } from "./child-protocol.js";
import type { ChildRuntime } from "./child-runtime.js";

// Plain JS run by plain node: it loads the child runtime and takes requests.
const CHILD_ENTRY = fileURLToPath(new URL("./child-entry.cjs", import.meta.url));
const TAIL_BYTES = 16 * 1024;
/** How long a child may take to start an import (node and the runtime, for its first) before it counts as broken. */
const START_LIMIT_MS = 60_000;
/** How long a child may take to exit once it has no more files. */
const EXIT_GRACE_MS = 5_000;

export type ChildOutcome =
  | { readonly kind: "reply"; readonly reply: LoadReply; readonly ms: number }
  | { readonly kind: "timeout"; readonly ms: number }
  /** The process ended during the import without a reply. */
  | {
      readonly kind: "exit";
      readonly ms: number;
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
      readonly stderr: string;
    }
  /** The process ended, or took too long, before the import started. */
  | { readonly kind: "not-started"; readonly reason: string };

interface Pending {
  readonly resolve: (outcome: ChildOutcome) => void;
  startedAt?: number;
  timedOut: boolean;
  timer: NodeJS.Timeout;
}

/**
 * A definitions child process (plain node, `--max-old-space-size=memoryMb`)
 * that imports compiled definitions files one at a time. It is SIGKILLed when
 * an import takes more than `timeoutMs`, counted from the moment the import
 * starts. Starting node is most of what a small file costs, so one child
 * serves several files; the caller decides when it has served long enough
 * (see `usable`, `filesLoaded`, `heapMb`).
 */
export class LoaderChild {
  readonly #proc: ChildProcess;
  readonly #channel: Duplex;
  readonly #timeoutMs: number;
  /** The end of stderr since the current import was asked for. */
  #stderr = "";
  #pending: Pending | undefined;
  #ended = false;
  #closed = false;
  #filesLoaded = 0;
  #heapMb = 0;

  constructor(runtime: ChildRuntime, limits: { readonly timeoutMs: number; readonly memoryMb: number }) {
    this.#timeoutMs = limits.timeoutMs;
    // Not the parent's flags (a tsx loader, inspector): only the heap limit. Messages go both ways on fd 3.
    this.#proc = spawn(
      process.execPath,
      [`--max-old-space-size=${limits.memoryMb}`, CHILD_ENTRY, runtime.file, runtime.codeCacheFile(limits.memoryMb)],
      { env: childEnv(), stdio: ["ignore", "pipe", "pipe", "pipe"] },
    );
    this.#channel = this.#proc.stdio[3] as Duplex;
    // A child that died cannot be written to; its end is reported through `close`.
    this.#channel.on("error", () => undefined);
    // Definitions files may print at import; keep the end of stderr for crash reports.
    this.#proc.stdout?.resume();
    this.#proc.stderr?.setEncoding("utf8");
    this.#proc.stderr?.on("data", (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-TAIL_BYTES);
    });
    createInterface({ input: this.#channel as Readable, crlfDelay: Infinity }).on("line", (line) => this.#onLine(line));
    this.#proc.once("close", (code, signal) => this.#onEnd(code, signal));
    // A process that cannot spawn emits error and may never emit close.
    this.#proc.once("error", (err) => {
      this.#stderr += `\n${err.message}`;
      this.#onEnd(null, null);
    });
  }

  /** Files this child has replied for. */
  get filesLoaded(): number {
    return this.#filesLoaded;
  }

  /** Its heap in use after the last import, in MB. */
  get heapMb(): number {
    return this.#heapMb;
  }

  /** It is alive and idle: it can take another file. */
  get usable(): boolean {
    return !this.#ended && !this.#closed && this.#pending === undefined;
  }

  /** Imports one compiled file; one request at a time. */
  load(request: LoadRequest): Promise<ChildOutcome> {
    if (!this.usable) return Promise.resolve({ kind: "not-started", reason: this.#stderr.trim() || "the loader child is not running" });
    return new Promise((resolve) => {
      this.#stderr = "";
      const timer = setTimeout(() => {
        this.#stderr += `\nthe loader child did not start the import within ${START_LIMIT_MS / 1000} s`;
        this.kill();
      }, START_LIMIT_MS);
      this.#pending = { resolve, timedOut: false, timer };
      this.#channel.write(`${JSON.stringify(request)}\n`);
    });
  }

  /** No more files: the child exits by itself (and is killed if it does not). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ended) return;
    this.#channel.end();
    setTimeout(() => this.kill(), EXIT_GRACE_MS).unref();
  }

  kill(): void {
    if (this.#proc.exitCode === null && this.#proc.signalCode === null) this.#proc.kill("SIGKILL");
  }

  #onLine(line: string): void {
    let message: ChildMessage;
    try {
      message = JSON.parse(line) as ChildMessage;
    } catch {
      return; // Not ours: something in a file wrote to fd 3.
    }
    const pending = this.#pending;
    if (!pending) return;
    if (message.type === "started" && pending.startedAt === undefined) {
      pending.startedAt = performance.now();
      clearTimeout(pending.timer);
      pending.timer = setTimeout(() => {
        pending.timedOut = true;
        this.kill();
      }, this.#timeoutMs);
    } else if (message.type === "result" && pending.startedAt !== undefined) {
      this.#filesLoaded++;
      this.#heapMb = message.heapMb ?? 0;
      // It ends by itself after an unhandled error: take no more files there.
      if (message.unhandled) this.close();
      this.#settle({ kind: "reply", reply: message, ms: performance.now() - pending.startedAt });
    }
  }

  #onEnd(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#ended) return;
    this.#ended = true;
    const pending = this.#pending;
    if (!pending) return;
    const ms = pending.startedAt === undefined ? 0 : performance.now() - pending.startedAt;
    if (pending.startedAt === undefined)
      this.#settle({ kind: "not-started", reason: this.#stderr.trim() || `it exited with code ${code}` });
    else if (pending.timedOut) this.#settle({ kind: "timeout", ms });
    else this.#settle({ kind: "exit", ms, code, signal, stderr: this.#stderr });
  }

  #settle(outcome: ChildOutcome): void {
    const pending = this.#pending!;
    this.#pending = undefined;
    clearTimeout(pending.timer);
    pending.resolve(outcome);
  }
}

/** The parent's environment, but NODE_EXTRA_CA_CERTS under another name: the child reads the file only if it needs it. */
function childEnv(): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: extraCa, ...env } = process.env;
  return extraCa ? { ...env, [EXTRA_CA_CERTS_ENV]: extraCa } : env;
}

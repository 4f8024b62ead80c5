import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ChildMessage, LoadReply, LoadRequest } from "./child-protocol.js";
import type { ChildRuntime } from "./child-runtime.js";

// Plain JS run by plain node: it loads the child runtime and hands it the request.
const CHILD_ENTRY = fileURLToPath(new URL("./child-entry.mjs", import.meta.url));
const TAIL_BYTES = 16 * 1024;
/** How long a child may take to start (node, the runtime) before it counts as broken. */
const START_LIMIT_MS = 60_000;

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

/**
 * Imports one compiled definitions file in a fresh child process (plain node,
 * `--max-old-space-size=memoryMb`) and SIGKILLs it when the import takes more
 * than `timeoutMs`, counted from the moment the import starts.
 */
export function loadInChild(
  runtime: ChildRuntime,
  request: LoadRequest,
  limits: { readonly timeoutMs: number; readonly memoryMb: number },
): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    const proc = fork(CHILD_ENTRY, [runtime.file, runtime.codeCacheFile(limits.memoryMb), JSON.stringify(request)], {
      // Explicit, so the parent's own flags (a tsx loader, inspector) are not inherited.
      execArgv: [`--max-old-space-size=${limits.memoryMb}`],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
    });
    let stderr = "";
    let startedAt: number | undefined;
    let replied = false;
    let timedOut = false;
    const kill = (): void => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    };
    const elapsed = (): number => (startedAt === undefined ? 0 : performance.now() - startedAt);
    let timer = setTimeout(() => {
      stderr += `\nthe loader child did not start within ${START_LIMIT_MS / 1000} s`;
      kill();
    }, START_LIMIT_MS);
    const finish = (outcome: ChildOutcome): void => {
      clearTimeout(timer);
      resolve(outcome);
    };

    // Definitions files may print at import; keep the end of stderr for crash reports.
    proc.stdout?.resume();
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-TAIL_BYTES);
    });
    proc.on("message", (message: ChildMessage) => {
      if (message.type === "started" && startedAt === undefined) {
        startedAt = performance.now();
        clearTimeout(timer);
        timer = setTimeout(() => {
          timedOut = true;
          kill();
        }, limits.timeoutMs);
      } else if (message.type === "result" && !replied) {
        replied = true;
        finish({ kind: "reply", reply: message, ms: elapsed() });
        // The child exits by itself once the reply is flushed; make sure of it.
        setTimeout(kill, 5_000).unref();
      }
    });
    const ended = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (replied) return;
      if (startedAt === undefined) finish({ kind: "not-started", reason: stderr.trim() || `it exited with code ${code}` });
      else if (timedOut) finish({ kind: "timeout", ms: elapsed() });
      else finish({ kind: "exit", ms: elapsed(), code, signal, stderr });
    };
    proc.once("close", ended);
    // A fork that cannot spawn emits error and may never emit close.
    proc.once("error", (err) => {
      stderr += `\n${err.message}`;
      ended(null, null);
    });
  });
}

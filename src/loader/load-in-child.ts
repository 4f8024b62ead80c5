import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { EXTRA_CA_CERTS_ENV, type ChildMessage, type LoadReply, type LoadRequest } from "./child-protocol.js";
import type { ChildRuntime } from "./child-runtime.js";

// Plain JS run by plain node: it loads the child runtime and hands it the request.
const CHILD_ENTRY = fileURLToPath(new URL("./child-entry.cjs", import.meta.url));
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
    const args = [runtime.file, runtime.codeCacheFile(limits.memoryMb), JSON.stringify(request)];
    // Not the parent's flags (a tsx loader, inspector): only the heap limit. Messages come on fd 3.
    const proc = spawn(process.execPath, [`--max-old-space-size=${limits.memoryMb}`, CHILD_ENTRY, ...args], {
      env: childEnv(),
      stdio: ["ignore", "pipe", "pipe", "pipe"],
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
    createInterface({ input: proc.stdio[3] as Readable, crlfDelay: Infinity }).on("line", (line) => {
      let message: ChildMessage;
      try {
        message = JSON.parse(line) as ChildMessage;
      } catch {
        return; // Not ours: something in the file wrote to fd 3.
      }
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
    // A process that cannot spawn emits error and may never emit close.
    proc.once("error", (err) => {
      stderr += `\n${err.message}`;
      ended(null, null);
    });
  });
}

/** The parent's environment, but NODE_EXTRA_CA_CERTS under another name: the child reads the file only if it needs it. */
function childEnv(): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: extraCa, ...env } = process.env;
  return extraCa ? { ...env, [EXTRA_CA_CERTS_ENV]: extraCa } : env;
}

// Named fault points (DBOS-style debug points): commit paths call hit(name) at
// the exact places where a crash matters, and tests arm them to throw there or
// to kill the process there. Unarmed, hit() is one size check.
import { TributaryError } from "../errors/index.js";

/**
 * What an armed point does: `"throw"` a FaultInjectedError (the code path's
 * error handling runs), `"kill"` the process with SIGKILL (nothing after the
 * point runs, not even `finally`), or a function of the test's own (it may
 * wait, or drop a connection; what it throws propagates).
 */
export type FaultAction = "throw" | "kill" | ((name: string) => void | Promise<void>);

/** The points on the transactional executor's commit path, in order. */
export const TX_FAULT_POINTS = ["tx:after-lock", "tx:after-function", "tx:after-completion", "tx:after-commit"] as const;

/** The environment variable a child process reads its armed points from: `point=action,point=action`. */
export const FAULTS_ENV = "TRIBUTARY_FAULTS";

export const FAULT_INJECTED = "FAULT_INJECTED";

const armed = new Map<string, { action: FaultAction; times: number }>();

/**
 * Arms a point. `times` limits how many hits act (default: every hit), so a
 * test can crash the first try and let the retry through.
 * @example arm("tx:after-function", "throw", { times: 1 });
 */
export function arm(name: string, action: FaultAction, options: { times?: number } = {}): void {
  armed.set(name, { action, times: options.times ?? Infinity });
}

export function disarm(name: string): void {
  armed.delete(name);
}

export function disarmAll(): void {
  armed.clear();
}

/**
 * Called by the code at a point. Returns a promise only when an armed
 * function action returns one; callers do `const p = hit(x); if (p) await p;`
 * so an unarmed point costs no microtask.
 */
export function hit(name: string): void | Promise<void> {
  if (armed.size === 0) return;
  const point = armed.get(name);
  if (!point) return;
  if (--point.times <= 0) armed.delete(name);
  const { action } = point;
  if (action === "kill") {
    process.kill(process.pid, "SIGKILL");
    // SIGKILL is delivered asynchronously: nothing after the point may run meanwhile.
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
  }
  if (action === "throw") throw new TributaryError(FAULT_INJECTED, `fault injected at "${name}"`);
  return action(name);
}

/**
 * Arms the points named in `TRIBUTARY_FAULTS` (e.g. `tx:after-function=kill`,
 * optionally `=throw*1` to act once), so a test can crash a child process at
 * an exact point. Called once when this module loads.
 */
export function armFromEnv(value: string | undefined = process.env[FAULTS_ENV]): void {
  if (!value) return;
  for (const part of value.split(",")) {
    const spec = part.trim();
    if (!spec) continue;
    const match = /^([^=]+)=(throw|kill)(?:\*(\d+))?$/.exec(spec);
    if (!match) {
      throw new TributaryError(
        "FAULTS_INVALID",
        `${FAULTS_ENV}: "${spec}" is not point=throw or point=kill (optionally *N to act N times), e.g. tx:after-function=kill`,
      );
    }
    arm(match[1]!, match[2] as "throw" | "kill", match[3] ? { times: Number(match[3]) } : {});
  }
}

armFromEnv();

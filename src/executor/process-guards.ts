import { format } from "node:util";
import { TributaryError } from "../errors/index.js";
import { describeTry, STEP_ERROR_CODES, tryLocation } from "./step-errors.js";
import type { LogLevel } from "./step-log.js";
import { tryStorage } from "./step-runtime.js";

const CONSOLE_LEVELS = { log: "info", info: "info", debug: "debug", warn: "warn", error: "error" } as const;
type ConsoleMethod = keyof typeof CONSOLE_LEVELS;

let consoleUsers = 0;
let originalConsole: Record<ConsoleMethod, (...args: unknown[]) => void> | undefined;

/**
 * Sends console.log/info/debug/warn/error to the log of the try whose code
 * called it (found through AsyncLocalStorage, so steps running side by side in
 * one process each get their own lines). Outside any try, the console behaves
 * as before. Returns the function that undoes it (installs are counted).
 */
export function captureConsole(): () => void {
  if (consoleUsers++ === 0) {
    const saved = {} as Record<ConsoleMethod, (...args: unknown[]) => void>;
    for (const method of Object.keys(CONSOLE_LEVELS) as ConsoleMethod[]) {
      const original = console[method] as (...args: unknown[]) => void;
      saved[method] = original;
      const level: LogLevel = CONSOLE_LEVELS[method];
      console[method] = function captured(this: unknown, ...args: unknown[]): void {
        const active = tryStorage.getStore();
        if (active) active.log.write(level, format(...args));
        else original.apply(console, args);
      };
    }
    originalConsole = saved;
  }
  let undone = false;
  return () => {
    if (undone) return;
    undone = true;
    if (--consoleUsers === 0 && originalConsole) {
      for (const method of Object.keys(originalConsole) as ConsoleMethod[]) console[method] = originalConsole[method];
      originalConsole = undefined;
    }
  };
}

let exitUsers = 0;
let originalExit: typeof process.exit | undefined;

/**
 * Replaces process.exit so an asset function calling it fails its try
 * instead of ending a process that runs other steps. `outsideTries` says what
 * a call from no try does: a worker child never lets anything else exit it
 * either ("throw"); the in-process executor leaves the host process alone ("exit").
 * Returns the real exit (for the worker's own shutdown) and the undo function.
 */
export function guardProcessExit(outsideTries: "throw" | "exit"): { reallyExit: (code?: number) => never; undo: () => void } {
  if (exitUsers++ === 0) {
    const original = process.exit;
    originalExit = original;
    const real = (code?: string | number | null): never => original.call(process, code);
    process.exit = function guardedExit(code?: string | number | null): never {
      const active = tryStorage.getStore();
      if (!active && outsideTries === "exit") return real(code);
      const shown = code === undefined || code === null ? "" : String(code);
      const error = active
        ? new TributaryError(
            STEP_ERROR_CODES.processExit,
            `${describeTry(active.dispatch)}: asset function called process.exit(${shown}); a worker process runs ` +
              `many steps and must not exit. Throw an error to fail the step, or call ctx.skip(reason) to skip it`,
            { location: tryLocation(active.dispatch) },
          )
        : new TributaryError(
            STEP_ERROR_CODES.processExit,
            `process.exit(${shown}) was called outside any step in a worker process; it was ignored`,
          );
      if (active && !active.ended) active.exitError ??= error;
      throw error;
    } as typeof process.exit;
  }
  const saved = originalExit!;
  let undone = false;
  return {
    reallyExit: (code?: number) => saved.call(process, code),
    undo: () => {
      if (undone) return;
      undone = true;
      if (--exitUsers === 0 && originalExit) {
        process.exit = originalExit;
        originalExit = undefined;
      }
    },
  };
}

import { TributaryError, type SerializedError } from "../errors/index.js";
import type { AssetContext, DefinitionCallbacks, StepFailure } from "../sdk/index.js";
import { describeTry, formatMs, tryLocation } from "./step-errors.js";
import type { StepLog } from "./step-log.js";
import type { StepDispatch, StepOutcome } from "../execution/index.js";

/** Codes of what a callback did wrong (they only ever reach the step log). */
export const CALLBACK_ERROR_CODES = {
  failed: "CALLBACK_FAILED",
  timeout: "CALLBACK_TIMEOUT",
} as const;

export interface CallbackRun {
  readonly dispatch: StepDispatch;
  readonly log: StepLog;
  readonly callbacks: DefinitionCallbacks;
  /** The asset's `retries.max`: the last try is `max + 1` when the dispatch does not say. */
  readonly retriesMax: number;
  /** A context for the callback, whose signal aborts at the callback's time limit. */
  readonly context: (signal: AbortSignal) => AssetContext;
}

/** Which hook an outcome calls, and with what. */
export function callbackFor(
  run: Pick<CallbackRun, "dispatch" | "callbacks" | "retriesMax">,
  outcome: StepOutcome,
): { name: "onSuccess" | "onFailure" | "onRetry"; call: (ctx: AssetContext) => unknown } | undefined {
  const { callbacks: cb, dispatch: d } = run;
  if (outcome.kind === "success") {
    const fn = cb.onSuccess;
    return fn && { name: "onSuccess", call: (ctx) => fn(ctx) };
  }
  if (outcome.kind !== "failed") return undefined;
  const failure = toFailure(outcome.error);
  // An infrastructure failure runs again on a budget of its own and does not count: the last try moves one later.
  const infrastructure = outcome.failureClass === "infrastructure";
  const lastTry = (d.lastTry ?? run.retriesMax + 1) + (infrastructure ? 1 : 0);
  if (outcome.retryable && d.tryNumber < lastTry) {
    const fn = cb.onRetry;
    return fn && { name: "onRetry", call: (ctx) => fn(ctx, failure, Object.freeze({ nextTry: d.tryNumber + 1, lastTry })) };
  }
  const fn = cb.onFailure;
  return fn && { name: "onFailure", call: (ctx) => fn(ctx, failure) };
}

/**
 * Runs the hook the outcome calls, after the outcome was reported: whatever
 * it does (throws, hangs past its time limit) is written to the step's log
 * and changes nothing else. Never rejects.
 */
export async function runStepCallbacks(run: CallbackRun, outcome: StepOutcome): Promise<void> {
  const hook = callbackFor(run, outcome);
  if (!hook) return;
  const d = run.dispatch;
  const limit = run.callbacks.timeoutMs;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), limit);
  });
  try {
    const result = await Promise.race([Promise.resolve().then(() => hook.call(run.context(controller.signal))), timedOut]);
    if (result === "timeout") {
      const error = new TributaryError(
        CALLBACK_ERROR_CODES.timeout,
        `${describeTry(d)}: ${hook.name} callback did not finish within ${formatMs(limit)}; ctx.signal was aborted and ` +
          `the step's outcome stands. Raise the asset's \`callbackTimeout\` or make the callback honour ctx.signal`,
        { location: tryLocation(d) },
      );
      controller.abort(error);
      run.log.write("error", error.message, { code: error.code });
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    run.log.write("error", `${describeTry(d)}: ${hook.name} callback failed: ${message}; the step's outcome stands`, {
      code: CALLBACK_ERROR_CODES.failed,
      ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
    });
  } finally {
    clearTimeout(timer);
  }
}

function toFailure(error: SerializedError): StepFailure {
  return Object.freeze({
    name: error.name,
    code: error.code,
    message: error.message,
    ...(error.stack ? { stack: error.stack } : {}),
  });
}

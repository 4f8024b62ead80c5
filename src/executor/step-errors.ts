import {
  serializeError,
  TributaryError,
  UserCodeError,
  type ErrorLocation,
  type FailureClass,
  type SerializedError,
} from "../errors/index.js";
import type { StepDispatch } from "../execution/index.js";

/**
 * Stable codes of the failures the executor itself produces (user code that
 * throws gives `USER_CODE_ERROR`). Tests and the reconciler match on them.
 */
export const STEP_ERROR_CODES = {
  /** The step ran past its `timeout`. */
  timeout: "STEP_TIMEOUT",
  /** `cancel()` ended the step, or dropped it before it started. Never retried. */
  canceled: "STEP_CANCELED",
  /** The worker process ran out of memory (`memoryMb`). */
  outOfMemory: "WORKER_OUT_OF_MEMORY",
  /** The worker process ended unexpectedly (exit code or signal). */
  exited: "WORKER_EXITED",
  /** The worker process was killed because another step in it overran its timeout or ignored a cancel. */
  killed: "WORKER_KILLED",
  /** No worker process could be started. */
  startFailed: "WORKER_START_FAILED",
  /** The executor closed before the step started, or while it was still running after the grace period. */
  closed: "EXECUTOR_CLOSED",
  /** The asset function returned something JSON cannot store faithfully. */
  notSerializable: "OUTPUT_NOT_SERIALIZABLE",
  /** The output is over the configured maximum (TRIBUTARY_MAX_OUTPUT_BYTES). */
  outputOverMaximum: "OUTPUT_OVER_MAXIMUM",
  /** The asset function called process.exit(). */
  processExit: "STEP_PROCESS_EXIT",
  /** The definitions file does not export the asset the step names (the definitions changed). */
  exportNotFound: "STEP_EXPORT_NOT_FOUND",
  /** The code of the definitions version the step was planned with cannot be found (the file changed since). */
  codeUnavailable: "STEP_CODE_UNAVAILABLE",
  /** `ctx.secrets.get(name)` for an environment variable that is not set. */
  secretMissing: "SECRET_MISSING",
  /** A poke or reschedule wait (ctx.waitFor) ran past its timeout (deferrable ones time out in the trigger store). */
  waitTimedOut: "TRIGGER_TIMED_OUT",
  /** `backend.loadInputs` failed or returned nothing for the step. */
  inputsFailed: "STEP_INPUTS_FAILED",
  /** The same step id was submitted while a try of it is still in the executor. */
  duplicate: "STEP_ALREADY_SUBMITTED",
  /** `submit()` after `close()`. */
  executorClosed: "EXECUTOR_CLOSED",
} as const;

/**
 * Whose fault a try is that the executor stopped with this error: a timeout or a cancel is the step's own (its
 * `timeout`, its run); the executor closing under it is not.
 */
export function stopFailureClass(reason: { readonly code: string }): FailureClass {
  return reason.code === STEP_ERROR_CODES.closed ? "infrastructure" : "user";
}

type TryIdentity = Pick<StepDispatch, "assetKey" | "partitionKey" | "runId" | "tryNumber">;

/** `asset "sales/orders" partition "2025-03-01" (run r-1, try 2)`: how every step error starts. */
export function describeTry(d: TryIdentity): string {
  const partition = d.partitionKey === "" ? "" : ` partition "${d.partitionKey}"`;
  return `asset "${d.assetKey}"${partition} (run ${d.runId}, try ${d.tryNumber})`;
}

export function tryLocation(d: Pick<StepDispatch, "assetKey" | "partitionKey">): ErrorLocation {
  return d.partitionKey === "" ? { assetKey: d.assetKey } : { assetKey: d.assetKey, partitionKey: d.partitionKey };
}

/** `1500 ms`, `30 s`, `5 min`: limits as people wrote them, with the exact value for small ones. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${+(ms / 1000).toFixed(3)} s`;
  return `${+(ms / 60_000).toFixed(2)} min`;
}

export function stepError(code: string, d: StepDispatch, message: string, cause?: unknown): TributaryError {
  return new TributaryError(code, message, { location: tryLocation(d), ...(cause === undefined ? {} : { cause }) });
}

/**
 * The user-code boundary: whatever the function threw is wrapped with where
 * it happened; errors Tributary raised on purpose (a missing secret, defer,
 * process.exit, a timeout) pass through as they are.
 */
export function wrapUserError(d: StepDispatch, err: unknown, prefix = ""): TributaryError {
  if (err instanceof TributaryError) return err;
  const original = err instanceof Error ? err.message : String(err);
  return new UserCodeError(`${describeTry(d)} failed: ${prefix}${original}`, { cause: err, location: tryLocation(d) });
}

export function timeoutError(d: StepDispatch, timeoutMs: number): TributaryError {
  return stepError(
    STEP_ERROR_CODES.timeout,
    d,
    `${describeTry(d)} exceeded its timeout of ${formatMs(timeoutMs)}; ctx.signal was aborted. ` +
      `Raise the asset's \`timeout\` if the work legitimately takes longer`,
  );
}

export function canceledError(d: StepDispatch, reason: string): TributaryError {
  return stepError(STEP_ERROR_CODES.canceled, d, `${describeTry(d)} was canceled: ${reason}`);
}

/** Adds what happened after the grace period to a timeout or cancel error. */
export function withKillNote(error: SerializedError, graceMs: number, how: "killed" | "abandoned"): SerializedError {
  const note =
    how === "killed"
      ? `; the function did not return within the ${formatMs(graceMs)} grace period after ctx.signal was aborted, ` +
        `so its worker process was killed. Pass ctx.signal to fetch, database drivers and long loops so the function can stop`
      : `; the function did not return within the ${formatMs(graceMs)} grace period after ctx.signal was aborted, ` +
        `so the try was abandoned (the in-process executor cannot kill it)`;
  return { ...error, message: error.message + note };
}

/** Serialised without the stack: for errors the executor raises about a step, whose stack would only show executor internals. */
export function withoutStack(err: TributaryError): SerializedError {
  const { stack: _stack, ...rest } = serializeError(err);
  return rest;
}

/** A serialised framework error, for failures the parent detects without an Error object at hand. */
export function serializedStepError(code: string, d: StepDispatch, message: string): SerializedError {
  return { name: "TributaryError", code, message, location: tryLocation(d) };
}

/** A step the executor gave back unstarted because it was closing: the try can run again. */
export function closedBeforeStartError(d: StepDispatch): SerializedError {
  return serializedStepError(
    STEP_ERROR_CODES.closed,
    d,
    `${describeTry(d)}: the executor closed before the step started; it can run again`,
  );
}

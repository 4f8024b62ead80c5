import { AsyncLocalStorage } from "node:async_hooks";
import { InputError, TributaryError, serializeError, type SerializedError } from "../errors/index.js";
import {
  definitionKind,
  findNonJson,
  isExpansion,
  makeExpansion,
  PERMANENT_TRIGGER_ERRORS,
  type AssetContext,
  type AssetDefinition,
  type CheckDefinition,
  type Expansion,
  type TriggerSpec,
} from "../sdk/index.js";
import type { MaterializedLookup } from "../trigger-checks/index.js";
import { describeTry, STEP_ERROR_CODES, stepError, stopFailureClass, withoutStack, wrapUserError } from "./step-errors.js";
import { runStepCallbacks } from "./step-callbacks.js";
import { StepLog, type LogLevel } from "./step-log.js";
import type { StepDispatch, StepOutcome } from "../execution/index.js";
import { makeWaits, type WaitEnd } from "./step-waits.js";
import { expansionOutcome, failed, serializeOutput } from "./step-outcomes.js";
import { ChainSecretBackend, EnvSecretBackend, redactSerializedError, SecretResolver } from "./secrets.js";

/** What the runtime needs from where it runs: a worker child process, or the test process. */
export interface RuntimeHost {
  /**
   * Imports a definitions file, at the version of its code when given (see StepDispatch.codeHash); the runtime
   * calls it once per file and version.
   */
  importModule(file: string, codeHash?: string): Promise<Record<string, unknown>>;
  addDynamicPartitions(name: string, keys: readonly string[]): Promise<void>;
  /** For assetMaterialized checks in poke and reschedule waits (the worker has no database of its own). */
  readonly materialized: MaterializedLookup;
  /** Where ctx.secrets.get looks; default: environment variables. */
  readonly secrets?: SecretResolver;
  /** The log of a try; default: the file at the dispatch's `logRef`. */
  openLog?(dispatch: StepDispatch): StepLog;
  /**
   * Answers a poke or reschedule wait without checking its trigger (a test says what the trigger yields); undefined
   * lets the check run. Default: every wait is checked.
   */
  answerWait?(trigger: TriggerSpec, dispatch: StepDispatch): Promise<{ payload: unknown } | undefined>;
}

/** Per-try extras of {@link StepRuntime.run}. */
export interface RunOptions {
  /** The transactional executor's transaction, handed to the function as `ctx.tx` (undefined elsewhere). */
  readonly tx?: unknown;
}

/** Secrets from environment variables only: a host that configures nothing more. */
const ENV_SECRETS = new SecretResolver(new ChainSecretBackend([new EnvSecretBackend()]));

/** How one try ended, with its own clock readings (epoch ms). */
export interface TryEnd {
  readonly outcome: StepOutcome;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** A try in progress; the async-local store of everything the step's code runs. */
export interface ActiveTry {
  readonly dispatch: StepDispatch;
  readonly log: StepLog;
  readonly controller: AbortController;
  /** `ctx.tx`: set only under the transactional executor. */
  readonly tx: unknown;
  /** Set by ctx.skip(): honoured even if user code catches the sentinel. */
  skipReason: string | undefined;
  /** Set by the process.exit guard: honoured even if user code catches the error. */
  exitError: TributaryError | undefined;
  /** Set by ctx.defer / ctx.waitFor(reschedule): honoured even if user code catches the signal. */
  waitEnd: WaitEnd | undefined;
  /** The asset's definition once its file was imported: its callbacks run after the try. */
  definition: AssetDefinition | undefined;
  ended: boolean;
  /** Ends the try; `quiet` when the caller already logged why. */
  settle(outcome: StepOutcome, quiet?: boolean): void;
}

/** Which try the running code belongs to: console output, process.exit and stray exceptions are attributed by it. */
export const tryStorage = new AsyncLocalStorage<ActiveTry>();

/** Thrown by ctx.skip(); private, so only the runtime recognises it. */
class SkipSignal {
  constructor(readonly reason: string) {}
}

/**
 * Runs step tries in the current JavaScript realm: imports the definitions
 * file (once per file per realm), builds the AssetContext, calls the asset
 * function and turns whatever happens into a StepOutcome. Shared by the worker
 * child process and the in-process executor; it never kills anything, it
 * only reacts to aborts (timeouts and cancels are decided by its caller).
 */
export class StepRuntime {
  private readonly modules = new Map<string, Promise<Record<string, unknown>>>();
  private readonly tries = new Map<number, ActiveTry>();

  constructor(private readonly host: RuntimeHost) {}

  /** Starts a try; `onStarted` runs synchronously with the start time. Never rejects. */
  run(
    dispatch: StepDispatch,
    inputs: Readonly<Record<string, unknown>>,
    onStarted?: (startedAt: number) => void,
    options: RunOptions = {},
  ): Promise<TryEnd> {
    const startedAt = Date.now();
    onStarted?.(startedAt);
    return new Promise<TryEnd>((resolve) => {
      const active: ActiveTry = {
        dispatch,
        log: this.host.openLog?.(dispatch) ?? new StepLog(dispatch.logRef),
        controller: new AbortController(),
        tx: options.tx,
        skipReason: undefined,
        exitError: undefined,
        waitEnd: undefined,
        definition: undefined,
        ended: false,
        settle: (settled, quiet = false) => {
          if (active.ended) return;
          // An error may quote a secret the try read (a connection string in a driver's message): masked before
          // it is logged or reported.
          const outcome =
            settled.kind === "failed" ? { ...settled, error: redactSerializedError(settled.error, active.log.redactor) } : settled;
          active.ended = true;
          if (this.tries.get(dispatch.stepId) === active) this.tries.delete(dispatch.stepId);
          if (!quiet) writeOutcome(active.log, outcome);
          active.log.close();
          resolve({ outcome, startedAt, endedAt: Date.now() });
        },
      };
      this.tries.set(dispatch.stepId, active);
      tryStorage.run(active, () => {
        void this.execute(active, inputs).then(
          (outcome) => this.finish(active, outcome),
          (err: unknown) => this.finish(active, failed(err, true)),
        );
      });
    });
  }

  /** Aborts the try's ctx.signal; the try ends failed with `reason` once the function returns. */
  abort(stepId: number, reason: TributaryError): void {
    const active = this.tries.get(stepId);
    if (active && !active.controller.signal.aborted) active.controller.abort(reason);
  }

  /**
   * Gives up on a try whose function ignores its signal (in-process there is
   * no process to kill): the caller reports and logs the failure; the function
   * may still be running, its later result is dropped.
   */
  abandon(stepId: number, outcome: StepOutcome): void {
    this.tries.get(stepId)?.settle(outcome, true);
  }

  /** An exception thrown (or a rejection left unhandled) by a try's callbacks, outside its promise chain. */
  failFromOutside(active: ActiveTry, err: unknown, what: string): void {
    if (active.ended) {
      // Typically a resource the step created (a pool, a timer) failing later: keep the process, say where.
      const text = `${what} after the try ended: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
      active.log.write("error", text);
      process.stderr.write(`tributary: ${describeTry(active.dispatch)}: ${active.log.redactor.redact(text)}\n`);
      return;
    }
    const error = wrapUserError(active.dispatch, err, `${what}: `);
    if (!active.controller.signal.aborted) active.controller.abort(error);
    this.finish(active, failed(error, true));
  }

  /**
   * Ends the try, then runs the asset's onSuccess/onFailure/onRetry: after
   * the outcome is reported, so a slow or failing callback cannot change it
   * (nor hold the step past its timeout). A try already ended (abandoned)
   * runs none.
   */
  private finish(active: ActiveTry, ran: StepOutcome): void {
    if (active.ended) return;
    const outcome = withUnwritableLog(active.log, ran);
    active.settle(outcome);
    const def = active.definition;
    if (!def || (!def.callbacks.onSuccess && !def.callbacks.onFailure && !def.callbacks.onRetry)) return;
    void runStepCallbacks(
      {
        dispatch: active.dispatch,
        log: active.log,
        callbacks: def.callbacks,
        retriesMax: def.spec.retries.max,
        context: (signal) => makeContext(active, this.host, signal),
      },
      outcome,
    );
  }

  private async execute(active: ActiveTry, inputs: Readonly<Record<string, unknown>>): Promise<StepOutcome> {
    const d = active.dispatch;
    let value: unknown;
    let thrown: { error: unknown } | undefined;
    try {
      if (d.check) {
        value = await this.runCheck(active, inputs);
      } else {
        const def = await this.assetDefinition(d);
        active.definition = def;
        const map = def.fanOut.map;
        // An asset with `map`: its unmapped step answers the items; each mapped step runs the function on one.
        value =
          map && d.map === undefined
            ? makeExpansion(await (map as (inputs: unknown) => unknown)(inputs), def.fanOut.label as Expansion["label"])
            : await def.fn!(makeContext(active, this.host, active.controller.signal), inputs as Record<string, unknown>);
      }
    } catch (err) {
      thrown = { error: err };
    }
    // Precedence: an abort (timeout, cancel) decides, then skip and process.exit
    // (user code may have caught their errors), then what the function did.
    const signal = active.controller.signal;
    if (signal.aborted) {
      const reason: unknown = signal.reason;
      if (!(reason instanceof TributaryError)) return failed(reason, true);
      // A timeout, cancel or close: the executor's own error, whose stack says nothing about the step.
      return {
        kind: "failed",
        error: withoutStack(reason),
        retryable: reason.code !== STEP_ERROR_CODES.canceled,
        failureClass: stopFailureClass(reason),
      };
    }
    if (active.skipReason !== undefined) return { kind: "skipped", reason: active.skipReason };
    if (active.exitError) return failed(active.exitError, true);
    if (active.waitEnd) return active.waitEnd;
    if (thrown) {
      if (thrown.error instanceof SkipSignal) return { kind: "skipped", reason: thrown.error.reason };
      const err = thrown.error;
      // A wait that timed out or was written wrong fails the same way on every try.
      const retryable = !(err instanceof TributaryError && NOT_RETRYABLE.has(err.code));
      return failed(wrapUserError(d, err), retryable);
    }
    if (isExpansion(value)) return expansionOutcome(active, value);
    return serializeOutput(d, value);
  }

  /**
   * Runs the check of a check's step on the asset's value (`inputs.value`). What the check says is the step's
   * output, `{ passed, metadata }`; a check that throws (or answers something else) is a failed check carrying
   * the error, not a failed step: whether that blocks anything is decided where the result is recorded.
   */
  private async runCheck(active: ActiveTry, inputs: Readonly<Record<string, unknown>>): Promise<CheckOutput> {
    const d = active.dispatch;
    const check = d.check!;
    const namespace = await this.namespaceOf(d);
    const value = namespace[d.exportName];
    const def = value as CheckDefinition | undefined;
    if (definitionKind(value) !== "check" || !def || def.spec.assetKey !== d.assetKey || def.spec.name !== check.name) {
      throw stepError(
        STEP_ERROR_CODES.exportNotFound,
        d,
        `${describeTry(d)}: export "${d.exportName}" of ${d.file} is not check "${check.name}" of asset "${d.assetKey}"; ` +
          `the definitions changed since the step was planned: reload them and run the step again`,
      );
    }
    const ctx = makeContext(active, this.host, active.controller.signal);
    let answer: unknown;
    try {
      answer = await def.fn(ctx, inputs["value"] ?? null);
    } catch (err) {
      if (active.controller.signal.aborted) throw err;
      const error = serializeError(wrapUserError(d, err, `check "${check.name}" threw: `));
      active.log.write("error", `check "${check.name}" failed: it threw ${error.message}`, errorFields(error));
      return { passed: false, metadata: {}, error };
    }
    const result = normalizeCheckAnswer(answer);
    if ("problem" in result) {
      const error = serializeError(stepError("CHECK_RESULT_INVALID", d, `${describeTry(d)}: check "${check.name}" ${result.problem}`));
      active.log.write("error", error.message);
      return { passed: false, metadata: {}, error };
    }
    active.log.write(result.passed ? "info" : "warn", `check "${check.name}" ${result.passed ? "passed" : "failed"}`, {
      metadata: result.metadata,
    });
    return { passed: result.passed, metadata: result.metadata, error: null };
  }

  private async namespaceOf(d: StepDispatch): Promise<Record<string, unknown>> {
    const key = d.codeHash ? `${d.file}\0${d.codeHash}` : d.file;
    let loading = this.modules.get(key);
    if (!loading) {
      loading = this.host.importModule(d.file, d.codeHash);
      this.modules.set(key, loading);
      // A version whose code could not be found may turn up (a worker that gets the new files): asked again next time.
      loading.catch(() => {
        if (this.modules.get(key) === loading) this.modules.delete(key);
      });
    }
    try {
      return await loading;
    } catch (err) {
      if (err instanceof TributaryError && err.code === STEP_ERROR_CODES.codeUnavailable) {
        throw stepError(err.code, d, `${describeTry(d)}: ${err.message}`);
      }
      throw wrapUserError(d, err, `importing ${d.file} failed: `);
    }
  }

  private async assetDefinition(d: StepDispatch): Promise<AssetDefinition & { fn: NonNullable<AssetDefinition["fn"]> }> {
    const namespace = await this.namespaceOf(d);
    const value = namespace[d.exportName];
    const kind = definitionKind(value);
    const def = value as AssetDefinition | undefined;
    if (kind !== "asset" || !def || typeof def.fn !== "function") {
      const found = kind === "source" ? "a source asset, which is observed, not materialised" : kind ? `a ${kind}` : "no asset";
      throw stepError(
        STEP_ERROR_CODES.exportNotFound,
        d,
        `${describeTry(d)}: export "${d.exportName}" of ${d.file} is ${found} ` +
          `(assets it exports: ${assetExports(namespace) || "none"}); ` +
          `the definitions changed since the step was planned: reload them and run the step again`,
      );
    }
    if (def.key !== d.assetKey) {
      throw stepError(
        STEP_ERROR_CODES.exportNotFound,
        d,
        `${describeTry(d)}: export "${d.exportName}" of ${d.file} is asset "${def.key}", not "${d.assetKey}"; ` +
          `the definitions changed since the step was planned: reload them and run the step again`,
      );
    }
    return def as AssetDefinition & { fn: NonNullable<AssetDefinition["fn"]> };
  }
}

/** What a check's step outputs: the check's verdict, or a failed verdict with the error it threw. */
export interface CheckOutput {
  readonly passed: boolean;
  readonly metadata: Record<string, unknown>;
  readonly error: SerializedError | null;
}

/** A check's answer as `{ passed, metadata }`, or what is wrong with it. */
function normalizeCheckAnswer(answer: unknown): { passed: boolean; metadata: Record<string, unknown> } | { problem: string } {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) {
    return {
      problem: `must return { passed: boolean, metadata? }, but returned ${answer === null ? "null" : Array.isArray(answer) ? "an array" : typeof answer}`,
    };
  }
  const { passed, metadata } = answer as { passed?: unknown; metadata?: unknown };
  if (typeof passed !== "boolean")
    return { problem: `must return { passed: boolean, metadata? }, but "passed" is ${passed === undefined ? "missing" : typeof passed}` };
  if (metadata !== undefined && (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))) {
    return { problem: `returned "metadata" that is not an object` };
  }
  const bad = metadata === undefined ? undefined : findNonJson(metadata, "metadata");
  if (bad) return { problem: `returned metadata that cannot be stored as JSON: value at ${bad}` };
  return { passed, metadata: (metadata ?? {}) as Record<string, unknown> };
}

const NOT_RETRYABLE = new Set([STEP_ERROR_CODES.waitTimedOut, "WAIT_OPTIONS_INVALID", "TRIGGER_INVALID", ...PERMANENT_TRIGGER_ERRORS]);

function assetExports(namespace: Record<string, unknown>): string {
  return Object.keys(namespace)
    .filter((name) => definitionKind(namespace[name]) === "asset")
    .map((name) => `"${name}"`)
    .join(", ");
}

/**
 * A try whose log could not be written (the logs directory full or gone) is not kept as done: it fails as an
 * infrastructure failure naming the file and the cause, and runs again on the infrastructure budget, so a step's
 * history never silently misses what it logged. A try that failed anyway keeps its own failure.
 */
function withUnwritableLog(log: StepLog, outcome: StepOutcome): StepOutcome {
  if (!log.writeError || outcome.kind === "failed") return outcome;
  return {
    kind: "failed",
    retryable: true,
    failureClass: "infrastructure",
    error: {
      name: "StepLogUnwritable",
      code: STEP_LOG_UNWRITABLE,
      message:
        `the step's log ${log.file} could not be written (${log.writeError.message}); the try is not kept and runs again: ` +
        `free space in the logs directory (its lines were written to the worker's standard error meanwhile)`,
    },
  };
}

/** See withUnwritableLog. */
export const STEP_LOG_UNWRITABLE = "STEP_LOG_UNWRITABLE";

function writeOutcome(log: StepLog, outcome: StepOutcome): void {
  if (outcome.kind === "skipped") log.write("info", `step skipped: ${outcome.reason}`);
  else if (outcome.kind === "deferred") {
    log.write("info", `step deferred: waiting on ${outcome.trigger.kind} ${JSON.stringify(outcome.trigger.args)} without a slot`, {
      timeoutMs: outcome.trigger.timeoutMs,
    });
  } else if (outcome.kind === "rescheduled") {
    log.write("info", `not there yet: the step is rescheduled to check again at ${new Date(outcome.nextCheckAt).toISOString()}`);
  } else if (outcome.kind === "failed") log.write("error", `step failed: ${outcome.error.message}`, errorFields(outcome.error));
  else if (outcome.kind === "expanded") {
    log.write(
      "info",
      outcome.count === 0 ? "fanned out over no items: downstream receives []" : `fanned out into ${outcome.count} mapped steps`,
    );
  }
}

function errorFields(error: SerializedError): Record<string, unknown> {
  const fields: Record<string, unknown> = { code: error.code };
  const deepest = rootCause(error);
  if (deepest.stack) fields["stack"] = deepest.stack;
  return fields;
}

function rootCause(error: SerializedError): SerializedError {
  let e = error;
  while (e.cause) e = e.cause;
  return e;
}

/**
 * A try that no runtime runs, and the context its function sees (tributary/testing's buildContext): log, secrets,
 * waits and fan-out behave as in a worker; `ctx.skip` records its reason in the try's `skipReason` and throws.
 */
export function standaloneTry(dispatch: StepDispatch, host: RuntimeHost, log: StepLog): { active: ActiveTry; context: AssetContext } {
  const active: ActiveTry = {
    dispatch,
    log,
    controller: new AbortController(),
    tx: undefined,
    skipReason: undefined,
    exitError: undefined,
    waitEnd: undefined,
    definition: undefined,
    ended: false,
    settle: () => undefined,
  };
  return { active, context: makeContext(active, host, active.controller.signal) };
}

function makeContext(active: ActiveTry, host: RuntimeHost, signal: AbortSignal): AssetContext {
  const d = active.dispatch;
  const log = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => active.log.write(level, String(message), fields);
  const window = d.partition.window;
  const ctx: AssetContext = {
    assetKey: d.assetKey,
    partition: Object.freeze({
      key: d.partitionKey,
      window: window ? Object.freeze({ start: new Date(window.start), end: new Date(window.end) }) : undefined,
      dimensions: d.partition.dimensions ? Object.freeze({ ...d.partition.dimensions }) : undefined,
    }),
    run: Object.freeze({ id: d.runId }),
    tryNumber: d.tryNumber,
    log: Object.freeze({ debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") }),
    signal,
    tx: active.tx,
    // Resolved when asked, never stored; the value is masked in this try's log from then on.
    secrets: Object.freeze({
      get: (name: string): Promise<string> => (host.secrets ?? ENV_SECRETS).resolve(name, active.log.redactor, d),
    }),
    skip(reason: string): never {
      active.skipReason = String(reason);
      throw new SkipSignal(active.skipReason);
    },
    ...makeWaits(active, host, signal),
    map: d.map === undefined ? undefined : Object.freeze({ index: d.map.index, item: d.map.item, label: d.map.label }),
    expand: (items, options) => makeExpansion(items, options?.label),
    addDynamicPartitions: async (name: string, keys: readonly string[]): Promise<void> => {
      if (typeof name !== "string" || name === "" || !Array.isArray(keys) || keys.some((k) => typeof k !== "string")) {
        throw new InputError(
          `${describeTry(d)}: ctx.addDynamicPartitions(name, keys) takes a partitions name and an array of key strings`,
          { location: { assetKey: d.assetKey } },
        );
      }
      await host.addDynamicPartitions(name, keys);
    },
  };
  return Object.freeze(ctx);
}

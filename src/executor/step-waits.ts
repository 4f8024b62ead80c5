import { InputError, TributaryError } from "../errors/index.js";
import {
  BUILT_IN_TRIGGER_KINDS,
  isTriggerKindKnown,
  PERMANENT_TRIGGER_ERRORS,
  resolveWait,
  type AssetContext,
  type ResolvedWait,
  type TriggerSpec,
  type WaitForOptions,
} from "../sdk/index.js";
import type { TriggerPartition, TriggerRegistry } from "../trigger-checks/index.js";
import type { ActiveTry, RuntimeHost } from "./step-runtime.js";
import { describeTry, STEP_ERROR_CODES, stepError } from "./step-errors.js";
import type { StepDispatch, StepOutcome } from "../execution/index.js";

/** How a waiting try ends: deferred to the triggerer, or rescheduled for its next check. */
export type WaitEnd = Extract<StepOutcome, { kind: "deferred" } | { kind: "rescheduled" }>;

/** Thrown by ctx.defer / ctx.waitFor to end the try; private, so only the runtime recognises it. */
export class WaitSignal {
  constructor(readonly end: WaitEnd | "skipped") {}
}

/** A single check of a poke or reschedule wait may take this long before it counts as failed. */
const CHECK_TIMEOUT_MS = 60_000;

/**
 * ctx.defer and ctx.waitFor for one try. A trigger this step already
 * deferred on and that fired (the dispatch's `resumed`) answers at once with
 * its payload, so a re-entered function passes its waits in seconds.
 */
export function makeWaits(active: ActiveTry, host: RuntimeHost, signal: AbortSignal): Pick<AssetContext, "defer" | "waitFor"> {
  const d = active.dispatch;
  const consumed = new Set<number>();
  const checks = () => workerChecks(host);

  const wait = async (method: "defer" | "waitFor", trigger: unknown, options: unknown): Promise<unknown> => {
    const what = `${describeTry(d)}: ctx.${method}()`;
    const spec = validateSpec(trigger, what, d.assetKey);
    const resolved = resolveWait(method === "defer" ? withoutMode(options, what, d.assetKey) : options, { what, assetKey: d.assetKey });
    const fired = (d.resumed ?? []).findIndex((r, i) => !consumed.has(i) && r.kind === spec.kind && sameJson(r.args, spec.args));
    if (fired >= 0) {
      consumed.add(fired);
      active.log.write("info", `resumed: trigger ${spec.kind} fired`);
      return d.resumed![fired]!.payload;
    }
    if (!isTriggerKindKnown(spec.kind)) {
      throw new InputError(
        `${what}: trigger kind "${spec.kind}" is not registered: use a built-in trigger (${BUILT_IN_TRIGGER_KINDS.join(", ")}) ` +
          `or define the kind with triggerKind() in a module the definitions import`,
        { code: "TRIGGER_KIND_UNKNOWN", location: { assetKey: d.assetKey, field: "trigger.kind" } },
      );
    }
    if (resolved.mode === "deferrable") return end(active, { kind: "deferred", trigger: { ...spec, ...deferFields(resolved) } });
    const answer = await host.answerWait?.(spec, d);
    if (answer) {
      active.log.write("info", `wait on trigger ${spec.kind} answered without a check`);
      return answer.payload;
    }
    const check = async () => checkOnce(spec, d, await checks(), signal, (m) => active.log.write("warn", m));
    if (resolved.mode === "poke") return poke(active, spec, resolved, check, signal);
    return reschedule(active, spec, resolved, check);
  };
  return {
    defer: <T>(trigger: TriggerSpec, options?: unknown) => wait("defer", trigger, options) as Promise<T>,
    waitFor: <T>(trigger: TriggerSpec, options?: WaitForOptions) => wait("waitFor", trigger, options) as Promise<T>,
  };
}

/**
 * Built-in checks, one set per runtime host (so sqlReturnsRows connection pools are opened once per process, not per
 * try), loaded on the first poke or reschedule check only: most steps never wait in the worker.
 */
const builtInsByHost = new WeakMap<RuntimeHost, Promise<TriggerRegistry>>();

async function workerChecks(host: RuntimeHost): Promise<TriggerRegistry> {
  let builtIns = builtInsByHost.get(host);
  if (!builtIns) {
    builtIns = import("../trigger-checks/index.js").then((t) =>
      t.builtInTriggers({ materialized: host.materialized, connections: t.envSqlConnections(process.env).connections }),
    );
    builtInsByHost.set(host, builtIns);
  }
  const { realmTriggerChecks } = await import("../trigger-checks/index.js");
  // Custom kinds as the definitions imported so far define them (a later file may add some).
  return { ...realmTriggerChecks(), ...(await builtIns) };
}

function deferFields(w: ResolvedWait) {
  return { timeoutMs: w.timeoutMs, pollIntervalMs: w.intervalMs, softFail: w.softFail };
}

/** Ends the try from inside the function; the runtime honours it even if user code catches the signal. */
function end(active: ActiveTry, outcome: WaitEnd): never {
  active.waitEnd = outcome;
  throw new WaitSignal(outcome);
}

async function poke(
  active: ActiveTry,
  spec: TriggerSpec,
  w: ResolvedWait,
  check: () => Promise<unknown>,
  signal: AbortSignal,
): Promise<unknown> {
  const began = Date.now();
  for (let n = 1; ; n++) {
    const payload = await check();
    if (payload !== NOT_YET) return payload;
    if (Date.now() - began + w.intervalMs > w.timeoutMs) return timedOut(active, spec, w, began);
    active.log.write("debug", `poke ${n}: ${spec.kind} not there yet; next check in ${w.intervalMs} ms`);
    await sleep(w.intervalMs, signal);
  }
}

async function reschedule(active: ActiveTry, spec: TriggerSpec, w: ResolvedWait, check: () => Promise<unknown>): Promise<unknown> {
  const began = active.dispatch.waitStartedAt ? Date.parse(active.dispatch.waitStartedAt) : Date.now();
  const payload = await check();
  if (payload !== NOT_YET) return payload;
  const now = Date.now();
  if (now - began + w.intervalMs > w.timeoutMs) return timedOut(active, spec, w, began);
  return end(active, { kind: "rescheduled", nextCheckAt: now + w.intervalMs, waitStartedAt: began });
}

function timedOut(active: ActiveTry, spec: TriggerSpec, w: ResolvedWait, began: number): never {
  const d = active.dispatch;
  const message =
    `${describeTry(d)} waited on a "${spec.kind}" trigger since ${new Date(began).toISOString()} past its timeout of ` +
    `${w.timeoutMs} ms; check that the awaited data arrives, or raise the wait's timeout`;
  if (w.softFail) {
    active.skipReason = `trigger timed out (softFail): ${message}`;
    throw new WaitSignal("skipped");
  }
  throw stepError(STEP_ERROR_CODES.waitTimedOut, d, message);
}

const NOT_YET = Symbol("not yet");

/** One check in the worker: the payload, or NOT_YET (also when the check itself failed transiently, which is logged). */
async function checkOnce(
  spec: TriggerSpec,
  d: StepDispatch,
  registry: TriggerRegistry,
  signal: AbortSignal,
  warn: (message: string) => void,
): Promise<unknown> {
  const partition: TriggerPartition | undefined =
    d.partitionKey === "" ? undefined : { key: d.partitionKey, ...(d.partition.window ? { window: d.partition.window } : {}) };
  const { checkTrigger } = await import("../trigger-checks/index.js");
  try {
    const result = await checkTrigger(
      spec,
      { partition, now: new Date(), signal, assetKey: d.assetKey },
      { timeoutMs: CHECK_TIMEOUT_MS, registry },
    );
    return result.fired ? result.payload : NOT_YET;
  } catch (err) {
    if (signal.aborted) throw err;
    if (err instanceof TributaryError && PERMANENT_TRIGGER_ERRORS.has(err.code)) throw err;
    warn(`check of trigger ${spec.kind} failed, checking again later: ${err instanceof Error ? err.message : String(err)}`);
    return NOT_YET;
  }
}

function validateSpec(trigger: unknown, what: string, assetKey: string): TriggerSpec {
  const t = trigger as Partial<TriggerSpec> | null | undefined;
  if (typeof t !== "object" || t === null || typeof t.kind !== "string" || t.kind === "" || typeof t.args !== "object" || t.args === null) {
    throw new InputError(`${what} takes a trigger such as fileExists("/landing/{partition}.csv"), not ${describe(trigger)}`, {
      code: "TRIGGER_INVALID",
      location: { assetKey, field: "trigger" },
    });
  }
  return { kind: t.kind, args: t.args };
}

function withoutMode(options: unknown, what: string, assetKey: string): unknown {
  if (typeof options === "object" && options !== null && "mode" in options) {
    throw new InputError(`${what}: option "mode" belongs to ctx.waitFor(); ctx.defer() always hands the wait to the triggerer`, {
      code: "WAIT_OPTIONS_INVALID",
      location: { assetKey, field: "mode" },
    });
  }
  return options;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason instanceof TributaryError ? signal.reason : new Error(String(signal.reason)));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Deep equality of JSON values, whatever the key order (jsonb reorders keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => sameJson(x, (b as unknown[])[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

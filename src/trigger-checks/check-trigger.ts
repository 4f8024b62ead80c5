import { z } from "zod";
import type { TriggerSpec } from "../sdk/index.js";
import { renderTemplate } from "./render-template.js";
import type { CheckResult, TriggerCheck, TriggerPartition, TriggerRegistry } from "./trigger-check.js";
import { TriggerError } from "./trigger-error.js";

export interface CheckTriggerContext {
  /** Undefined for an unpartitioned asset. */
  readonly partition?: TriggerPartition | undefined;
  readonly now: Date;
  /** Aborts the check from outside (shutdown, lease lost): TRIGGER_CHECK_ABORTED. */
  readonly signal?: AbortSignal;
  /** The asset the trigger belongs to, for error locations. */
  readonly assetKey?: string;
}

export interface CheckTriggerOptions {
  /** The check's own deadline; past it the check's signal is aborted and TRIGGER_CHECK_TIMEOUT is thrown. */
  readonly timeoutMs: number;
  readonly registry: TriggerRegistry;
}

const resultSchema = z.union([
  z.object({ fired: z.literal(false), detail: z.string().optional() }),
  z.object({ fired: z.literal(true), payload: z.json() }),
]);

/**
 * Checks one trigger: looks up its kind, validates its args, renders its
 * templates for the partition and runs the check under its own timeout.
 * Resolves with whether it fired; rejects only with a TriggerError
 * (TRIGGER_KIND_UNKNOWN, TRIGGER_ARGS_INVALID, TRIGGER_TEMPLATE_*,
 * TRIGGER_CHECK_TIMEOUT, TRIGGER_CHECK_ABORTED, TRIGGER_CHECK_FAILED with
 * what the check threw as `cause`, or a TriggerError the check raised itself).
 *
 * A timed-out check keeps running in the background until it notices its
 * aborted signal; the caller is not held up by it.
 *
 * @example
 * const result = await checkTrigger(fileExists("/in/{partition}.csv"), { partition: { key: "2025-03-15" }, now: new Date() },
 *   { timeoutMs: 10_000, registry: builtInTriggers() });
 */
export async function checkTrigger(spec: TriggerSpec, context: CheckTriggerContext, options: CheckTriggerOptions): Promise<CheckResult> {
  const location = {
    ...(context.assetKey !== undefined ? { assetKey: context.assetKey } : {}),
    ...(context.partition ? { partitionKey: context.partition.key } : {}),
  };
  const check = lookUp(spec, options.registry, location);
  const args = renderArgs(spec.kind, check, validateArgs(spec, check, location), context.partition);

  const controller = new AbortController();
  const outer = context.signal;
  let timer: NodeJS.Timeout | undefined;
  let onOuterAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const stop = (err: TriggerError) => {
      controller.abort(err);
      reject(err);
    };
    timer = setTimeout(
      () =>
        stop(
          new TriggerError(
            "TRIGGER_CHECK_TIMEOUT",
            `trigger ${spec.kind} did not answer within ${options.timeoutMs} ms; it is retried later (raise the check timeout if the source is slow)`,
            { location },
          ),
        ),
      options.timeoutMs,
    );
    onOuterAbort = () =>
      stop(
        new TriggerError("TRIGGER_CHECK_ABORTED", `check of trigger ${spec.kind} was aborted: ${String(outer?.reason)}`, {
          location,
          cause: outer?.reason,
        }),
      );
    if (outer?.aborted) onOuterAbort();
    else outer?.addEventListener("abort", onOuterAbort, { once: true });
  });
  // A check that rejects after the timeout must not surface as an unhandled rejection.
  stopped.catch(() => undefined);

  try {
    if (controller.signal.aborted) return await stopped;
    const running = Promise.resolve().then(() =>
      check.check(args as never, { partition: context.partition, signal: controller.signal, now: context.now }),
    );
    running.catch(() => undefined);
    const raw: unknown = await Promise.race([running, stopped]);
    const parsed = resultSchema.safeParse(raw);
    if (!parsed.success) {
      throw new TriggerError(
        "TRIGGER_CHECK_FAILED",
        `trigger ${spec.kind} returned ${describe(raw)}, not { fired: false, detail? } or { fired: true, payload } with a JSON payload`,
        { location },
      );
    }
    return parsed.data as CheckResult;
  } catch (err) {
    if (err instanceof TriggerError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new TriggerError("TRIGGER_CHECK_FAILED", `trigger ${spec.kind} failed: ${message}`, { location, cause: err });
  } finally {
    clearTimeout(timer);
    if (onOuterAbort) outer?.removeEventListener("abort", onOuterAbort);
  }
}

function lookUp(spec: TriggerSpec, registry: TriggerRegistry, location: object): TriggerCheck<never> {
  // Object.hasOwn: a kind such as "toString" must not find Object.prototype's.
  const kind: unknown = (spec as Partial<TriggerSpec> | null | undefined)?.kind;
  const check = typeof kind === "string" && Object.hasOwn(registry, kind) ? registry[kind] : undefined;
  if (check) return check;
  const known = Object.keys(registry).sort();
  throw new TriggerError(
    "TRIGGER_KIND_UNKNOWN",
    `trigger kind "${String(kind)}" is not registered; known kinds: ${known.length ? known.join(", ") : "(none)"}. ` +
      "Fix the kind or register a check for it with the triggerer",
    { location: { ...location, field: "kind" } },
  );
}

function validateArgs(spec: TriggerSpec, check: TriggerCheck<never>, location: object): Record<string, unknown> {
  const parsed = (check.schema as z.ZodType<unknown>).safeParse(spec.args);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.length ? `args.${i.path.join(".")}` : "args"}: ${i.message}`);
    const first = parsed.error.issues[0]?.path.join(".");
    throw new TriggerError("TRIGGER_ARGS_INVALID", `trigger ${spec.kind} has invalid arguments: ${issues.join("; ")}`, {
      location: { ...location, field: first ? `args.${first}` : "args" },
    });
  }
  return parsed.data as Record<string, unknown>;
}

function renderArgs(kind: string, check: TriggerCheck<never>, args: Record<string, unknown>, partition: TriggerPartition | undefined) {
  if (!check.templateArgs?.length) return args;
  const out = { ...args };
  for (const name of check.templateArgs) {
    const value = out[name];
    if (typeof value === "string") out[name] = renderTemplate(value, partition, `args.${name}`, `trigger ${kind}`);
  }
  return out;
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

import type { z } from "zod";
import { definedTriggerKinds, type JsonValue, type TriggerKindDefinition } from "../sdk/index.js";

/**
 * The partition a trigger is checked for. `window` is present for time
 * partitions (and multi partitions with a time dimension): ISO instants as
 * `partitionKeyWindowIso` gives them, or Dates.
 */
export interface TriggerPartition {
  readonly key: string;
  readonly window?: { readonly start: string | Date; readonly end: string | Date };
}

export interface CheckContext {
  /** Undefined for an unpartitioned asset. */
  readonly partition: TriggerPartition | undefined;
  /** Aborted when the check's timeout passes or the caller gives up: pass it to I/O. */
  readonly signal: AbortSignal;
  /** The injected clock (tests move it). */
  readonly now: Date;
}

export type CheckResult = { readonly fired: false; readonly detail?: string } | { readonly fired: true; readonly payload: JsonValue };

/**
 * One trigger kind: how its arguments look and how to check it. A check reads
 * and never writes (the triggerer may run it twice after a lease takeover);
 * it returns `{ fired: false }` when the thing it waits for is not there yet
 * and throws only when it cannot tell.
 */
export interface TriggerCheck<A = unknown> {
  /** Validates (and may default) the stored args before every check. */
  readonly schema: z.ZodType<A>;
  /**
   * Names of string args that are templates (`{partition}`, `{start}`, `{end}`);
   * checkTrigger renders them before calling `check`, so a missing field is a
   * clear error rather than a path with braces in it.
   */
  readonly templateArgs?: readonly string[];
  check(args: A, context: CheckContext): Promise<CheckResult>;
}

/** Trigger kinds by name. Values are type-erased: checkTrigger validates args with each check's schema. */
export type TriggerRegistry = Readonly<Record<string, TriggerCheck<never>>>;

/**
 * Types a check against its schema and erases the args type so it fits a
 * {@link TriggerRegistry}.
 *
 * @example
 * import { z } from "zod";
 * const always = defineTriggerCheck({
 *   schema: z.object({}),
 *   check: async () => ({ fired: true, payload: null }),
 * });
 */
export function defineTriggerCheck<A>(check: TriggerCheck<A>): TriggerCheck<never> {
  return check as unknown as TriggerCheck<never>;
}

/** The check of a kind made with the SDK's triggerKind(). */
export function triggerCheckOf(def: TriggerKindDefinition): TriggerCheck<never> {
  return defineTriggerCheck({ schema: def.schema, templateArgs: def.templateArgs, check: def.check });
}

/** Checks of every kind triggerKind() defined in this process (the definitions it imported). */
export function realmTriggerChecks(): Record<string, TriggerCheck<never>> {
  return Object.fromEntries(definedTriggerKinds().map((def) => [def.kind, triggerCheckOf(def)]));
}

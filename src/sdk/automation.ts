import { CronExpressionParser } from "cron-parser";
import { DefinitionError } from "../errors/index.js";
import { deepFreeze } from "./json.js";

/**
 * Declarative automation, evaluated by the reconciler. Conditions are plain
 * data so the reconciler never imports user code.
 */
export type AutomationSpec =
  | { readonly kind: "cron"; readonly cron: string; readonly timezone: string | null }
  | { readonly kind: "eager" }
  | { readonly kind: "missing" }
  | { readonly kind: "and" | "or"; readonly operands: readonly AutomationSpec[] }
  | { readonly kind: "not"; readonly operand: AutomationSpec }
  | AutomationOperand;

/**
 * The operands the built-in conditions are made of, for writing your own
 * with allOf / anyOf / not. Each is true for a set of partitions of the asset.
 */
export type AutomationOperand =
  /**
   * Not materialised (never, or its only tries failed) — literally, over all
   * of history; restrict it with inLatestWindow(n). (The built-in onMissing()
   * and eager() look at history only with `catchup: true`.)
   */
  | { readonly kind: "is_missing" }
  /** A step for it is in an active run. */
  | { readonly kind: "in_progress" }
  /** Its latest try failed for good. */
  | { readonly kind: "failed" }
  /** An upstream partition it reads was materialised (or reported) after the version it last read. */
  | { readonly kind: "upstream_updated" }
  /** Every upstream partition it reads exists and is materialised (or requested in the same tick). */
  | { readonly kind: "upstreams_ready" }
  /** A tick of the cron passed since the condition was last handled: the latest partition due at that tick. */
  | { readonly kind: "cron_tick"; readonly cron: string; readonly timezone: string | null }
  /** Among the latest `count` partitions that exist (an unpartitioned asset: always). */
  | { readonly kind: "in_latest_window"; readonly count: number }
  /** Materialised with a code version other than the asset's current `codeVersion`. */
  | { readonly kind: "code_version_changed" };

/**
 * Materialise the latest due partition once a cron tick has passed and its
 * upstreams are ready.
 * @example onCron("0 1 * * *", { timezone: "Europe/Berlin" })
 */
export function onCron(cron: string, options: { timezone?: string } = {}): AutomationSpec {
  const timezone = options.timezone ?? null;
  validateCron(cron, timezone, "automation.cron");
  return deepFreeze({ kind: "cron", cron, timezone });
}

/**
 * Materialise when any upstream partition it reads was materialised since its own last materialisation, or when
 * it is missing and its upstreams exist; never while in progress.
 * @example
 * // given orders: AssetDefinition<{ rows: number }>
 * asset({ key: "sales/summary", partitions: daily({ start: "2025-01-01" }), automation: eager(), deps: { orders } }, async () => 1);
 */
export function eager(): AutomationSpec {
  return deepFreeze({ kind: "eager" });
}

/**
 * Materialise missing partitions once their upstreams exist; not while in progress, not after a failure.
 * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }), automation: onMissing() }, async () => 1)
 */
export function onMissing(): AutomationSpec {
  return deepFreeze({ kind: "missing" });
}

/**
 * All of the conditions.
 * @example allOf(onCron("0 6 * * *"), not(hasFailed()))
 */
export function allOf(...operands: AutomationSpec[]): AutomationSpec {
  return deepFreeze({ kind: "and", operands: [...operands] });
}

/**
 * Any of the conditions.
 * @example anyOf(onCron("0 1 * * *"), allOf(isMissing(), inLatestWindow(14), not(isInProgress())))
 */
export function anyOf(...operands: AutomationSpec[]): AutomationSpec {
  return deepFreeze({ kind: "or", operands: [...operands] });
}

/**
 * The condition does not hold.
 * @example allOf(upstreamUpdated(), not(isInProgress()), not(hasFailed()))
 */
export function not(operand: AutomationSpec): AutomationSpec {
  return deepFreeze({ kind: "not", operand });
}

/**
 * Operand: the partition is not materialised, over all of history (combine
 * with inLatestWindow(n) and not(isInProgress())).
 * @example allOf(isMissing(), inLatestWindow(14), not(isInProgress()), not(hasFailed()))
 */
export function isMissing(): AutomationSpec {
  return deepFreeze({ kind: "is_missing" });
}

/**
 * Operand: a step for the partition is in an active run.
 * @example allOf(upstreamUpdated(), not(isInProgress()))
 */
export function isInProgress(): AutomationSpec {
  return deepFreeze({ kind: "in_progress" });
}

/**
 * Operand: the partition's latest try failed for good.
 * @example allOf(isMissing(), inLatestWindow(3), not(hasFailed()))
 */
export function hasFailed(): AutomationSpec {
  return deepFreeze({ kind: "failed" });
}

/**
 * Operand: an upstream partition it reads was materialised after the version it last read.
 * @example allOf(upstreamUpdated(), upstreamsReady(), not(isInProgress()))
 */
export function upstreamUpdated(): AutomationSpec {
  return deepFreeze({ kind: "upstream_updated" });
}

/**
 * Operand: every upstream partition it reads exists and is materialised.
 * @example allOf(isMissing(), upstreamsReady(), not(isInProgress()))
 */
export function upstreamsReady(): AutomationSpec {
  return deepFreeze({ kind: "upstreams_ready" });
}

/**
 * Operand: a cron tick passed since this was last handled (the latest
 * partition due at each tick).
 * @example allOf(cronTickPassed("0 6 * * 1-5"), upstreamsReady(), not(isInProgress()))
 */
export function cronTickPassed(cron: string, options: { timezone?: string } = {}): AutomationSpec {
  const timezone = options.timezone ?? null;
  validateCron(cron, timezone, "automation.cron_tick");
  return deepFreeze({ kind: "cron_tick", cron, timezone });
}

/**
 * Operand: among the latest `count` partitions that exist (default 1).
 * @example allOf(isMissing(), inLatestWindow(14), not(isInProgress()), not(hasFailed()))
 */
export function inLatestWindow(count = 1): AutomationSpec {
  if (!Number.isInteger(count) || count < 1) {
    throw new DefinitionError(`field "automation.in_latest_window": count must be a whole number ≥ 1, got ${String(count)}`, {
      location: { field: "automation.in_latest_window" },
    });
  }
  return deepFreeze({ kind: "in_latest_window", count });
}

/**
 * Operand: materialised with a code version other than the asset's current one (`codeVersion`).
 * @example allOf(codeVersionChanged(), inLatestWindow(30), not(isInProgress()))
 */
export function codeVersionChanged(): AutomationSpec {
  return deepFreeze({ kind: "code_version_changed" });
}

const LEAF_KINDS = [
  "eager",
  "missing",
  "is_missing",
  "in_progress",
  "failed",
  "upstream_updated",
  "upstreams_ready",
  "code_version_changed",
] as const;

/**
 * Checks a condition tree (it may come from a hand-written object rather than
 * the constructors). Throws DefinitionError naming the path of the bad node,
 * e.g. `automation.operands[1].operand`.
 * @example
 * const condition: unknown = JSON.parse('{"kind":"and","operands":[{"kind":"is_missing"}]}');
 * validateAutomation(condition); // condition is an AutomationSpec from here on
 */
export function validateAutomation(spec: unknown, path = "automation"): asserts spec is AutomationSpec {
  const bad = (what: string): never => {
    throw new DefinitionError(`field "${path}": ${what}`, { location: { field: path }, code: "DEFINITION_INVALID_AUTOMATION" });
  };
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
    return bad('expected a condition such as onCron("0 1 * * *"), eager(), onMissing() or allOf(...)');
  }
  const node = spec as Record<string, unknown>;
  switch (node.kind) {
    case "cron":
    case "cron_tick":
      if (node.timezone !== null && typeof node.timezone !== "string") bad("timezone must be an IANA name or null");
      validateCron(node.cron, (node.timezone as string | null) ?? null, `${path}.cron`);
      return;
    case "and":
    case "or":
      if (!Array.isArray(node.operands) || node.operands.length === 0) {
        return bad(`${node.kind === "and" ? "allOf" : "anyOf"}() needs at least one condition`);
      }
      node.operands.forEach((o, i) => validateAutomation(o, `${path}.operands[${i}]`));
      return;
    case "not":
      return validateAutomation(node.operand, `${path}.operand`);
    case "in_latest_window":
      if (!Number.isInteger(node.count) || (node.count as number) < 1) bad("count must be a whole number ≥ 1");
      return;
    default:
      if (!(LEAF_KINDS as readonly unknown[]).includes(node.kind)) {
        return bad(
          `unknown condition kind ${JSON.stringify(node.kind)}; build conditions with onCron, eager, onMissing, allOf, anyOf, not and the operands`,
        );
      }
  }
}

/**
 * Checks a 5-field cron expression in a timezone (null: the process's own); throws DefinitionError naming `field`.
 * @example validateCron("0 1 * * *", "Europe/Berlin", "automation.cron")
 */
export function validateCron(cron: unknown, timezone: string | null, field: string): void {
  if (typeof cron !== "string" || cron.trim() === "") {
    throw new DefinitionError(`field "${field}": a cron expression is required, e.g. "0 1 * * *"`, {
      location: { field },
    });
  }
  if (cron.trim().split(/\s+/).length !== 5) {
    throw new DefinitionError(`field "${field}": "${cron}" is not a 5-field cron expression (minute hour day-of-month month day-of-week)`, {
      location: { field },
      code: "DEFINITION_INVALID_CRON",
    });
  }
  try {
    CronExpressionParser.parse(cron, timezone ? { tz: timezone } : {});
  } catch (cause) {
    throw new DefinitionError(`field "${field}": "${cron}" is not a valid cron expression (${(cause as Error).message})`, {
      location: { field },
      code: "DEFINITION_INVALID_CRON",
      cause,
    });
  }
}

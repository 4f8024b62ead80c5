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
  | { readonly kind: "not"; readonly operand: AutomationSpec };

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

/** Materialise when any upstream partition it reads was materialised since its own last materialisation. */
export function eager(): AutomationSpec {
  return deepFreeze({ kind: "eager" });
}

/** Materialise missing partitions once their upstreams exist. */
export function onMissing(): AutomationSpec {
  return deepFreeze({ kind: "missing" });
}

/** All of the conditions. */
export function allOf(...operands: AutomationSpec[]): AutomationSpec {
  return deepFreeze({ kind: "and", operands: [...operands] });
}

/** Any of the conditions. */
export function anyOf(...operands: AutomationSpec[]): AutomationSpec {
  return deepFreeze({ kind: "or", operands: [...operands] });
}

export function not(operand: AutomationSpec): AutomationSpec {
  return deepFreeze({ kind: "not", operand });
}

export function validateCron(cron: unknown, timezone: string | null, field: string): void {
  if (typeof cron !== "string" || cron.trim() === "") {
    throw new DefinitionError(`field "${field}": a cron expression is required, e.g. "0 1 * * *"`, {
      location: { field },
    });
  }
  if (cron.trim().split(/\s+/).length !== 5) {
    throw new DefinitionError(
      `field "${field}": "${cron}" is not a 5-field cron expression (minute hour day-of-month month day-of-week)`,
      { location: { field }, code: "DEFINITION_INVALID_CRON" },
    );
  }
  try {
    CronExpressionParser.parse(cron, timezone ? { tz: timezone } : {});
  } catch (cause) {
    throw new DefinitionError(
      `field "${field}": "${cron}" is not a valid cron expression (${(cause as Error).message})`,
      { location: { field }, code: "DEFINITION_INVALID_CRON", cause },
    );
  }
}

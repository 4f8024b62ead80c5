import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import type { AssetDefinition, OutputOf } from "./asset.js";
import type { AssetContext } from "./context.js";
import { callerFile, DEFINITION_BRAND, type Branded } from "./definition.js";
import { deepFreeze, type JsonValue } from "./json.js";
import type { CheckSpec } from "./spec.js";
import { definitionErrorFromZod } from "./zod-issues.js";

export interface CheckResult {
  passed: boolean;
  metadata?: Record<string, JsonValue>;
}

export interface CheckDefinition extends Branded {
  readonly spec: CheckSpec;
  readonly fn: (ctx: AssetContext, value: unknown) => CheckResult | Promise<CheckResult>;
  readonly definedIn: string | undefined;
}

const checkConfigSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '_', '.' and '-' only"),
  blocking: z.boolean().optional(),
  severity: z.enum(["warn", "error"]).optional(),
  description: z.string().optional(),
});

/**
 * A data-quality check of an asset's partitions; a failing blocking check
 * stops downstream materialisation of that partition.
 * @example check(orders, { name: "not_empty", blocking: true }, (_ctx, value) => ({ passed: value.rows > 0 }))
 */
export function check<A extends AssetDefinition>(
  target: A | string,
  config: { name: string; blocking?: boolean; severity?: "warn" | "error"; description?: string },
  fn: (ctx: AssetContext, value: OutputOf<A>) => CheckResult | Promise<CheckResult>,
): CheckDefinition {
  const assetKey = typeof target === "string" ? target : target?.key;
  if (typeof assetKey !== "string") {
    throw new DefinitionError("check(): the first argument must be an asset or an asset key", {
      location: { field: "asset" },
    });
  }
  const parsed = checkConfigSchema.safeParse(config);
  if (!parsed.success) throw definitionErrorFromZod("check()", parsed.error, { assetKey });
  if (typeof fn !== "function") {
    throw new DefinitionError(`check "${parsed.data.name}" of asset "${assetKey}": the third argument must be the check function`, {
      location: { assetKey, field: "fn" },
    });
  }
  const spec: CheckSpec = deepFreeze({
    assetKey,
    name: parsed.data.name,
    blocking: parsed.data.blocking ?? false,
    severity: parsed.data.severity ?? "error",
    description: parsed.data.description ?? null,
  });
  return Object.freeze({
    [DEFINITION_BRAND]: "check" as const,
    spec,
    fn: fn as CheckDefinition["fn"],
    definedIn: callerFile(),
  });
}

import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import type { AssetDefinition, OutputOf, Upstream } from "./asset.js";
import type { AssetContext } from "./context.js";
import { callerFile, DEFINITION_BRAND, type Branded } from "./definition.js";
import { deepFreeze, type JsonValue } from "./json.js";
import type { CheckPartitionsSpec, CheckSpec } from "./spec.js";
import { rememberCheck } from "./upstream-definitions.js";
import { definitionErrorFromZod } from "./zod-issues.js";

export interface CheckResult {
  passed: boolean;
  metadata?: Record<string, JsonValue>;
}

/** The config of a check: see check(). */
export interface CheckConfig {
  /**
   * Unique among the asset's checks: letters, digits, `_`, `.` and `-`.
   * @example
   * // given orders: AssetDefinition<{ rows: number }>
   * check(orders, { name: "not_empty" }, (_ctx, value) => ({ passed: (value?.rows ?? 0) > 0 }));
   */
  name: string;
  /**
   * A failing blocking check keeps the partition's readers from running (they end `upstream_failed`, naming the
   * check); default false.
   * @example
   * // given orders: AssetDefinition<{ rows: number }>
   * check(orders, { name: "not_empty", blocking: true }, (_ctx, value) => ({ passed: (value?.rows ?? 0) > 0 }));
   */
  blocking?: boolean;
  /**
   * How a failure is shown and alerted on: `error` (the default) or `warn`.
   * @example
   * // given orders: AssetDefinition<{ rows: number }>
   * check(orders, { name: "usual_volume", severity: "warn" }, (_ctx, value) => ({ passed: (value?.rows ?? 0) > 1000 }));
   */
  severity?: "warn" | "error";
  /**
   * What the check makes sure of, for the people reading its results.
   * @example
   * // given orders: AssetDefinition<{ rows: number }>
   * check(orders, { name: "not_empty", description: "The day has at least one order" }, (_ctx, v) => ({ passed: (v?.rows ?? 0) > 0 }));
   */
  description?: string;
  /**
   * Only these partitions (keys, or a range of a time-partitioned asset, either end open); every partition by default.
   * @example
   * // given orders: AssetDefinition<{ rows: number }>
   * check(orders, { name: "since_migration", partitions: { from: "2025-03-01" } }, (_ctx, v) => ({ passed: v !== null }));
   */
  partitions?: readonly string[] | { from?: string; to?: string };
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
  partitions: z
    .union([
      z.array(z.string()).min(1, "list at least one partition key (or leave partitions out: every partition)"),
      z
        .strictObject({ from: z.string().min(1).optional(), to: z.string().min(1).optional() })
        .refine((r) => r.from !== undefined || r.to !== undefined, "give from, to or both"),
    ])
    .optional(),
});

/**
 * A data-quality check of an asset's partitions; a failing blocking check
 * stops downstream materialisation of that partition. The check receives the partition's stored value: null
 * for a partition an outside producer reported (see {@link Upstream}).
 * @example
 * // given orders: AssetDefinition<{ rows: number }>
 * check(orders, { name: "not_empty", blocking: true }, (_ctx, value) => ({ passed: (value?.rows ?? 0) > 0 }))
 */
export function check<A extends AssetDefinition>(
  target: A | string,
  config: CheckConfig,
  fn: (ctx: AssetContext, value: Upstream<OutputOf<A>>) => CheckResult | Promise<CheckResult>,
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
    partitions: checkPartitions(parsed.data.partitions),
  });
  const definition: CheckDefinition = Object.freeze({
    [DEFINITION_BRAND]: "check" as const,
    spec,
    fn: fn as CheckDefinition["fn"],
    definedIn: callerFile(),
  });
  if (typeof target !== "string") rememberCheck(target, definition);
  return definition;
}

function checkPartitions(
  p: readonly string[] | { from?: string | undefined; to?: string | undefined } | undefined,
): CheckPartitionsSpec | null {
  if (p === undefined) return null;
  if (Array.isArray(p)) return { keys: [...new Set(p as readonly string[])] };
  const range = p as { from?: string | undefined; to?: string | undefined };
  return { from: range.from ?? null, to: range.to ?? null };
}

/**
 * Whether a check runs on this partition of its asset (see CheckSpec.partitions).
 * @example checkAppliesTo({ partitions: { from: "2025-03-01", to: null } }, "2025-03-10") // true
 */
export function checkAppliesTo(spec: Pick<CheckSpec, "partitions">, partitionKey: string): boolean {
  const p = spec.partitions;
  if (!p) return true;
  if ("keys" in p) return p.keys.includes(partitionKey);
  // Ranges are allowed on time partitions only, whose keys sort as their windows do.
  return (p.from === null || partitionKey >= p.from) && (p.to === null || partitionKey <= p.to);
}

import { z } from "zod";
import { InputError } from "../errors/index.js";
import type { MissingUpstream, PlannedStep, RunPlan } from "./run-plan.js";

/** Bumped when the stored shape changes. */
export const PLAN_FORMAT = 1;

/**
 * A plan as stored (`runs.plan`): asset keys once, steps as arrays.
 *
 * ```json
 * { "format": 1, "version": 7,
 *   "assets": ["sales/orders", "sales/revenue_7d"],
 *   "steps": [[0, "2025-03-01", []], [0, "2025-03-02", []], [1, "2025-03-02", [0, 2]]],
 *   "missing": [{ "assetKey": "…", "neededBy": "…", "reason": "not_materialized", "count": 5, "sample": ["…"], "detail": "…" }] }
 * ```
 *
 * A step is `[asset index, partition key, upstream]` (a check's step adds its
 * name: `[asset index, partition key, upstream, check]`); its index is its
 * position. `upstream` lists the steps it reads as half-open ranges, flat:
 * `[0, 2]` is steps 0 and 1, `[0, 7, 9, 10]` steps 0–6 and 9, so a step
 * reading a week of dailies costs two numbers, not seven.
 */
export interface SerializedPlan {
  readonly format: typeof PLAN_FORMAT;
  readonly version: number;
  readonly assets: readonly string[];
  readonly steps: readonly SerializedStep[];
  readonly missing: readonly MissingUpstream[];
}

export type SerializedStep =
  | readonly [assetIndex: number, partitionKey: string, upstream: readonly number[]]
  /** The step of an asset check (see PlannedStep.check). */
  | readonly [assetIndex: number, partitionKey: string, upstream: readonly number[], check: string];

/** The compact, JSON-ready form of a plan; {@link parsePlan} reads it back. */
export function serializePlan(plan: RunPlan): SerializedPlan {
  const assets: string[] = [];
  const assetIndex = new Map<string, number>();
  const steps = plan.steps.map((step): SerializedStep => {
    let a = assetIndex.get(step.assetKey);
    if (a === undefined) {
      a = assets.length;
      assets.push(step.assetKey);
      assetIndex.set(step.assetKey, a);
    }
    return step.check === undefined
      ? [a, step.partitionKey, toRanges(step.upstream)]
      : [a, step.partitionKey, toRanges(step.upstream), step.check];
  });
  return { format: PLAN_FORMAT, version: plan.version, assets, steps, missing: plan.missing.map((m) => ({ ...m, sample: [...m.sample] })) };
}

const index = z.number().int().nonnegative();

const planSchema = z.strictObject({
  format: z.literal(PLAN_FORMAT),
  version: index,
  assets: z.array(z.string().min(1)),
  steps: z.array(z.union([z.tuple([index, z.string(), z.array(index)]), z.tuple([index, z.string(), z.array(index), z.string().min(1)])])),
  missing: z.array(
    z.strictObject({
      assetKey: z.string().min(1),
      neededBy: z.string().min(1),
      reason: z.enum(["not_materialized", "not_existing"]),
      count: index,
      sample: z.array(z.string()),
      detail: z.string(),
    }),
  ),
});

/**
 * Reads a stored plan back: JSON text or the parsed value (a jsonb column).
 * InputError `PLAN_INVALID` naming the offending field when it is not one
 * {@link serializePlan} could have written (including a step reading a step
 * that does not come before it).
 */
export function parsePlan(json: unknown): RunPlan {
  let value: unknown = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch (cause) {
      throw invalid(`not JSON: ${(cause as Error).message}`, undefined, cause);
    }
  }
  const parsed = planSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw invalid(issue.message, issue.path.map(String).join("."));
  }
  const { version, assets, steps, missing } = parsed.data;
  const out: PlannedStep[] = steps.map(([a, partitionKey, ranges, check], i) => {
    const assetKey = assets[a];
    if (assetKey === undefined) throw invalid(`asset index ${a} is not below ${assets.length}`, `steps.${i}.0`);
    const step = { index: i, assetKey, partitionKey, upstream: fromRanges(ranges, i) };
    return check === undefined ? step : { ...step, check };
  });
  return { version, steps: out, missing };
}

function invalid(detail: string, field: string | undefined, cause?: unknown): InputError {
  const where = field ? ` at "${field}"` : "";
  return new InputError(`invalid stored run plan${where}: ${detail}`, {
    code: "PLAN_INVALID",
    ...(field ? { location: { field } } : {}),
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Ascending indices → flat half-open ranges. */
function toRanges(indices: readonly number[]): number[] {
  const out: number[] = [];
  for (const i of indices) {
    if (out.length > 0 && out[out.length - 1] === i) out[out.length - 1] = i + 1;
    else out.push(i, i + 1);
  }
  return out;
}

/** Flat half-open ranges → ascending indices, each below the step's own. */
function fromRanges(ranges: readonly number[], step: number): number[] {
  const field = `steps.${step}.2`;
  if (ranges.length % 2 !== 0) throw invalid("upstream ranges must come in [start, end) pairs", field);
  const out: number[] = [];
  let previousEnd = -1;
  for (let r = 0; r < ranges.length; r += 2) {
    const start = ranges[r]!;
    const end = ranges[r + 1]!;
    if (start >= end || start <= previousEnd)
      throw invalid("upstream ranges must be ascending, disjoint and non-adjacent with start < end", field);
    if (end > step) throw invalid(`step ${step} reads step ${end - 1}, which does not come before it`, field);
    for (let i = start; i < end; i++) out.push(i);
    previousEnd = end;
  }
  return out;
}

import type { AccessScope } from "../../access/index.js";
import type { PlannedStep, RunPlan } from "../../planner/index.js";

/** What a planned run acts on, for its authorisation and audit record: its assets and their partition keys. */
export function planScope(plan: RunPlan | readonly PlannedStep[]): AccessScope {
  const steps = "steps" in plan ? plan.steps : plan;
  const partitions = new Set<string>();
  for (const s of steps) if (s.partitionKey !== "") partitions.add(s.partitionKey);
  return { assets: [...new Set(steps.map((s) => s.assetKey))], partitions: [...partitions] };
}

/** A backfill's scope: its assets; its partitions are counted (a backfill may span 100 000 of them), not listed. */
export function backfillScope(
  assetKeys: Iterable<string>,
  partitionCount: number,
  selection: { from?: string | undefined; to?: string | undefined; retryOf?: string },
): AccessScope {
  return {
    assets: [...assetKeys],
    detail: {
      partitionCount,
      ...(selection.from !== undefined ? { from: selection.from } : {}),
      ...(selection.to !== undefined ? { to: selection.to } : {}),
      ...(selection.retryOf !== undefined ? { retryOf: selection.retryOf } : {}),
    },
  };
}

import type { AssetGraph, SnapshotAsset } from "../graph/index.js";
import type { RetryPolicySpec, TriggerRule } from "../sdk/index.js";
import type { RunPlan } from "./run-plan.js";

/** How the steps of one asset behave, fixed when the run is planned. */
export interface StepSettings {
  readonly triggerRule: TriggerRule;
  readonly retries: RetryPolicySpec;
  readonly pool: string | null;
  readonly poolSlots: number;
  readonly priority: number;
  readonly executor: string;
  readonly queue: string | null;
  readonly timeoutMs: number | null;
  readonly maxConcurrency: number | null;
}

/** The asset's run-time settings, fixed into its steps when the run is created. */
export function stepSettings(asset: SnapshotAsset): StepSettings {
  return {
    triggerRule: asset.triggerRule,
    retries: asset.retries,
    pool: asset.pool,
    poolSlots: asset.poolSlots,
    priority: asset.priority,
    executor: asset.executor,
    queue: asset.queue,
    timeoutMs: asset.timeoutMs,
    maxConcurrency: asset.maxConcurrency,
  };
}

/** What a run of this plan needs besides the plan: its job limits and each asset's step settings. */
export interface RunShape {
  readonly jobName: string | null;
  readonly maxActiveRuns: number | null;
  readonly settings: (assetKey: string) => StepSettings;
}

/**
 * A run belongs to the job of its first asset (group + partitions): with
 * maxActiveRuns on any of its assets, runs of that job wait their turn.
 */
export function runShape(graph: AssetGraph, plan: RunPlan): RunShape {
  const keys = [...new Set(plan.steps.map((s) => s.assetKey))];
  const settings = (key: string) => stepSettings(graph.require(key));
  const limits = keys.map((k) => graph.get(k)?.maxActiveRuns).filter((n): n is number => typeof n === "number");
  if (limits.length === 0) return { jobName: null, maxActiveRuns: null, settings };
  const first = graph.get(keys[0]!);
  return { jobName: first ? `${first.group}:${first.key}` : null, maxActiveRuns: Math.min(...limits), settings };
}

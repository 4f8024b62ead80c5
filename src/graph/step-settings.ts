import type { RetryPolicySpec, TriggerRule } from "../sdk/index.js";
import type { SnapshotAsset } from "./snapshot.js";

/** How the steps of one asset behave, fixed into its steps when a run is created. */
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

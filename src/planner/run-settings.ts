import { stepSettings, type AssetGraph, type StepSettings } from "../graph/index.js";
import type { RunPlan } from "./run-plan.js";
import { serializePlan, type SerializedPlan } from "./serialize-plan.js";

/** What storing a run of this plan needs: its steps, its stored form, its job limits and each asset's step settings. */
export interface RunShape {
  readonly steps: RunPlan["steps"];
  readonly plan: SerializedPlan;
  readonly snapshotVersion: number;
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
  const stored = { steps: plan.steps, plan: serializePlan(plan), snapshotVersion: plan.version, settings };
  if (limits.length === 0) return { ...stored, jobName: null, maxActiveRuns: null };
  const first = graph.get(keys[0]!);
  return { ...stored, jobName: first ? `${first.group}:${first.key}` : null, maxActiveRuns: Math.min(...limits) };
}

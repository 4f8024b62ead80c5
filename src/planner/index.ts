// The planner: graph + partition selection + current state → run plan; the
// trigger rules, retry delays and step/run state rules the reconciler
// applies to it. Pure: no I/O, no clock, no randomness of its own.
export { planRun, planPartitions } from "./plan-run.js";
export type { PlanRunRequest, PlannedPartitions } from "./plan-run.js";
export { resolveSelection, describeExisting } from "./resolve-selection.js";
export type { PartitionSelection, SelectionScope } from "./resolve-selection.js";
export { stepReads } from "./step-reads.js";
export type { StepRead } from "./step-reads.js";
export { dimensionSliceKeys, MAX_SLICE_PARTITIONS } from "./dimension-slice.js";
export type { DimensionSlice } from "./dimension-slice.js";
export type { RunPlan, PlannedStep, MissingUpstream } from "./run-plan.js";
export { serializePlan, parsePlan, PLAN_FORMAT } from "./serialize-plan.js";
export type { SerializedPlan, SerializedStep } from "./serialize-plan.js";
export { evaluateTriggerRule, countUpstreamStates } from "./trigger-rules.js";
export type { UpstreamCounts, TriggerDecision } from "../sdk/index.js";
export {
  retryDelayMs,
  shouldRetry,
  maxTries,
  decideRetry,
  checkInfrastructureRetryPolicy,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_INFRASTRUCTURE_RETRY_POLICY,
} from "./retry.js";
export type { InfrastructureRetryPolicy } from "./retry.js";
export type { FailedTry, RetryDecision } from "../sdk/index.js";
export { STEP_STATES, TERMINAL_STEP_STATES, STEP_TRANSITIONS, isTerminal, canTransition } from "./step-states.js";
export type { StepState } from "./step-states.js";
export { deriveRunState } from "./run-state.js";
export type { DerivedRunState } from "./run-state.js";
export { runShape } from "./run-settings.js";
export type { RunShape } from "./run-settings.js";
export { plannedRun } from "./planned-run.js";
export type { PlannedRun, PlannedRunOptions } from "./planned-run.js";
export { planBackfill } from "./plan-backfill.js";
export type { BackfillPlanRequest, BackfillPlan } from "./plan-backfill.js";
export { BackfillChunks } from "./backfill-chunks.js";
export type { AssetSubsets } from "./backfill-chunks.js";
export { serializeLayout, parseLayout, layoutVersion } from "./backfill-layout.js";
export type { BackfillLayout, SerializedBackfillLayout } from "./backfill-layout.js";
// The decisions the run store's transactions apply (storage's RunDecisions), made here.
export { RUN_DECISIONS, runDecisions } from "./run-decisions.js";

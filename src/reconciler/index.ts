// The scheduler loop. It hands runnable steps to executors (through their
// interface) and otherwise talks to the rest of Tributary only through storage.
export { Reconciler } from "./reconciler.js";
export type { ReconcilerOptions, ReconcilerPassStats, ReconcilerTask } from "./reconciler.js";
export { runAutomationTick, DEFAULT_GAP_MS, DEFAULT_MAX_REQUESTED } from "./automation/automation-tick.js";
export type { AutomationTickInput, AutomationTickResult, RunRequest } from "./automation/automation-tick.js";
export { evaluateAsset } from "./automation/evaluate-asset.js";
export { latestDue } from "./automation/latest-due.js";
export type { AssetView, UpdateCause, EvaluationReason, EvaluationRecord } from "./automation/evaluate-asset.js";
export { toKeyRanges, fromKeyRanges } from "./automation/automation-state.js";
export type { AssetAutomationState, KeyRanges } from "./automation/automation-state.js";
export { describeCondition } from "./automation/describe-condition.js";
export { cronTicks, latestTick } from "./automation/cron-ticks.js";
export { AlertsTask } from "./alerts/alerts-task.js";
export type { AlertsTaskOptions } from "./alerts/alerts-task.js";
export { AlertRouter } from "./alerts/alert-router.js";
export { AlertDelivery } from "./alerts/alert-delivery.js";
export { DeadlineMonitor } from "./alerts/deadline-monitor.js";
export { WebhookSink } from "./alerts/webhook-sink.js";
export { LogSink } from "./alerts/log-sink.js";
export { alertText, alertFields } from "./alerts/alert-sink.js";
export type { AlertSink, AlertFields } from "./alerts/alert-sink.js";
export { parseAlertsConfig, DEFAULT_ALERTS_CONFIG, ALERTS_CONFIG_ENV } from "./alerts/alerts-config.js";
export type { AlertsConfig, SinkConfig, WebhookSinkConfig, LogSinkConfig } from "./alerts/alerts-config.js";
export { AutomationTask } from "./automation/automation-task.js";
export type { AutomationTaskOptions, AutomationTickStats } from "./automation/automation-task.js";
export { BackfillTask } from "./backfills/index.js";
export type { BackfillTaskOptions } from "./backfills/index.js";
export { ObservationsTask } from "./observations/index.js";
export { OutputDeletionsTask } from "./output-deletions/output-deletions-task.js";
export type { OutputDeletionsTaskOptions } from "./output-deletions/output-deletions-task.js";
export { OutputRetentionTask } from "./output-deletions/output-retention-task.js";
export type { OutputRetentionTaskOptions } from "./output-deletions/output-retention-task.js";
export { ErasureTask } from "./erasures/erasure-task.js";
export type { ErasureTaskOptions, Rematerialisation, RematerialisationBackfills } from "./erasures/erasure-task.js";
export type { ObservationsTaskOptions } from "./observations/index.js";
// OpenLineage run events.
export * from "./openlineage/index.js";

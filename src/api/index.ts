export { createApiApp, preloadGraphql } from "./app.js";
export type { ApiOptions, ServerIdentity } from "./app.js";
// Browser safety and request limits (docs/security.md).
export type { HttpSafetyOptions } from "./http/http-safety.js";
export { isSameOrigin, requestOrigin, type OriginOptions } from "./http/same-origin.js";
export { listenHostName, LOOPBACK_HOSTS } from "./http/host-check.js";
export { defaultCallerKey, type CallerKey } from "./http/caller-key.js";
export type { RequestLimitOptions } from "./graphql/request-limits.js";
export {
  DEFAULT_MAX_MUTATIONS,
  DEFAULT_MUTATION_RATE,
  DEFAULT_QUERY_LIMITS,
  type MutationRate,
  type QueryLimits,
} from "./graphql/limit-defaults.js";
export type { OidcOptions } from "./auth/oidc-routes.js";
// /metrics and /readyz.
export { metricsApp, observabilityOf, observabilityRoutes } from "./metrics/observability-routes.js";
export type { Observability, ObservabilityStores, ReadinessProblem } from "./metrics/observability-routes.js";
export { TributaryMetrics } from "./metrics/tributary-metrics.js";
export type { TributaryMetricsOptions, PassReport } from "./metrics/tributary-metrics.js";
export { Catalog } from "./catalog.js";
export type { CatalogView } from "./catalog.js";
export type { ApiServices, RunsApi, BackfillsApi, AssetsApi, AutomationApi, LineageApi, DefinitionFileView } from "./services.js";
export { listPartitions, staleReasonView } from "./partition-listing.js";
export type { PartitionRow, PartitionListing, PartitionStatusRow, StaleReasonView } from "./partition-listing.js";
export { partitionStatusSummary } from "./partition-status-summary.js";
export type { PartitionStatusCounts, PartitionStatusRange, PartitionStatusSummary } from "./partition-status-summary.js";
export { launchRun } from "./commands/launch-run.js";
export type { LaunchRunRequest, LaunchedRun, LaunchServices } from "./commands/launch-run.js";
export { runChecks } from "./commands/run-checks.js";
export type { RunChecksRequest } from "./commands/run-checks.js";
export { reportAssetEvent, MAX_EVENT_METADATA_BYTES } from "./commands/report-event.js";
export type { ReportAssetEventRequest, ReportedAssetEvent, ReportEventServices } from "./commands/report-event.js";
export { clearPartitions } from "./commands/clear-partitions.js";
export { wipePartitions, MAX_WIPE_PARTITIONS, MAX_WIPE_REASON_LENGTH } from "./commands/wipe-partitions.js";
export { DEFAULT_RESTORE_HOLD_MS, historyArchiveDays, restoreHistory } from "./commands/restore-history.js";
export type { HistoryServices, RestoreHistoryInput } from "./commands/restore-history.js";
export type { PartitionWipeResult, WipePartitionsRequest, WipePartitionsServices } from "./commands/wipe-partitions.js";
export type { ClearPartitionsRequest, ClearedRun, ClearedAsset, ClearServices } from "./commands/clear-partitions.js";
export { addDynamicPartitions, MAX_DYNAMIC_KEYS_PER_CALL } from "./commands/add-dynamic-partitions.js";
export type { AddedDynamicPartitions } from "./commands/add-dynamic-partitions.js";
export { launchBackfill, retryBackfillFailures, failedPartitionRanges, DEFAULT_BACKFILL_PRIORITY } from "./commands/launch-backfill.js";
export type { LaunchBackfillRequest, BackfillServices } from "./commands/launch-backfill.js";
// Lineage and erasure impact.
export { lineage, checkLineageDepth, DEFAULT_LINEAGE_DEPTH, MAX_LINEAGE_DEPTH, MAX_LINEAGE_NODES } from "./lineage/lineage.js";
export type { Lineage, LineageRequest, LineageAsset, LineageDependency } from "./lineage/lineage.js";
export { erasureImpact, MAX_ERASURE_IMPACT, MAX_ERASURE_SOURCE_PARTITIONS } from "./lineage/erasure-impact.js";
export type { ErasureImpact, ErasureImpactRequest, ErasureImpactAsset, AssetPartitionKeys } from "./lineage/erasure-impact.js";
export type { LineageServices } from "./lineage/lineage-services.js";
export {
  requestErasure,
  erasureReport,
  listErasures,
  retryErasure,
  MAX_ERASURE_REASON_LENGTH,
  MAX_ERASURE_LIST,
} from "./commands/request-erasure.js";
export type { RequestErasureInput, ErasurePlan, ErasurePlanAsset, ErasureServices } from "./commands/request-erasure.js";
export {
  automationEvaluations,
  formatKeyRanges,
  DEFAULT_EVALUATIONS_LIMIT,
  MAX_EVALUATIONS_LIMIT,
} from "./commands/automation-evaluations.js";
export type {
  AutomationEvaluations,
  AutomationEvaluationsRequest,
  AutomationEvaluationsServices,
  AutomationEvaluationView,
  EvaluationReasonView,
  KeyRange,
} from "./commands/automation-evaluations.js";
// The execution API workers report through (docs/execution-api.md).
export { executionRoutes, MAX_FINISH_BODY_BYTES, MAX_LOG_CHUNK_BYTES } from "./execution/execution-routes.js";
export { ExecutionApiError } from "./execution/execution-requests.js";
export type { ExecutionApiServices } from "./execution/execution-routes.js";

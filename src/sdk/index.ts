export { asset, dep, buildSpec } from "./asset.js";
export type { AssetConfig, AssetConfigBase, MappedAssetConfig, RetryConfig } from "./asset-config.js";
export { sourceAsset } from "./source-asset.js";
export type { SourceAssetConfig, SourceObservation } from "./source-asset.js";
export type { AssetDefinition, AssetFunction, Dep, DepsRecord, InputsOf, OutputOf, Upstream, SingleMapping, ManyMapping } from "./asset.js";
export { DEFAULT_MAX_MAP_ITEMS, MAX_MAP_ITEMS_LIMIT, MAX_MAP_LABEL_LENGTH, isExpansion, makeExpansion } from "./fan-out.js";
export type { MapItem, MapLabel, Expansion, GatheredOutput, FanOutFunctions } from "./fan-out.js";
export { check, checkAppliesTo } from "./check.js";
export type { CheckConfig, CheckDefinition, CheckResult } from "./check.js";
export {
  onCron,
  eager,
  onMissing,
  allOf,
  anyOf,
  not,
  isMissing,
  isInProgress,
  hasFailed,
  upstreamUpdated,
  upstreamsReady,
  cronTickPassed,
  inLatestWindow,
  codeVersionChanged,
  validateCron,
  validateAutomation,
} from "./automation.js";
export type { AutomationSpec, AutomationOperand } from "./automation.js";
export { describeCondition, conditionInWords } from "./describe-condition.js";
export type { ConditionSubject } from "./describe-condition.js";
export {
  at,
  fileExists,
  s3ObjectExists,
  httpOk,
  sqlReturnsRows,
  assetMaterialized,
  triggerKind,
  isTriggerKindKnown,
  definedTriggerKinds,
  BUILT_IN_TRIGGER_KINDS,
  PERMANENT_TRIGGER_ERRORS,
} from "./triggers.js";
export type { TriggerSpec, TriggerKindConfig, TriggerKindContext, TriggerKindDefinition, TriggerKindResult } from "./triggers.js";
export { resolveWait, WAIT_MODES, DEFAULT_WAIT_TIMEOUT_MS } from "./wait.js";
export type { WaitMode, WaitOptions, WaitOptions as DeferOptions, WaitForOptions, ResolvedWait } from "./wait.js";
export { parseDuration } from "./duration.js";
export type { Duration } from "./duration.js";
export { definitionKind, DEFINITION_BRAND } from "./definition.js";
export { declaredChecks, declaredUpstreams } from "./upstream-definitions.js";
export type { DefinitionKind } from "./definition.js";
export type { AssetContext, MappedContext, PartitionContext, StepLogger, Secrets } from "./context.js";
export { DEFAULT_CALLBACK_TIMEOUT_MS } from "./callbacks.js";
export { DEFAULT_ERASE_TIMEOUT_MS } from "./erase.js";
export type { EraseContext, EraseHook, EraseTarget } from "./erase.js";
export type { AssetCallbacks, DefinitionCallbacks, RetryInfo, StepFailure } from "./callbacks.js";
export { TRIGGER_RULES, EXECUTORS } from "./spec.js";
export type {
  AssetSpec,
  CheckPartitionsSpec,
  CheckSpec,
  DepSpec,
  RetryPolicySpec,
  FailedTry,
  RetryDecision,
  TriggerRule,
  TriggerDecision,
  UpstreamCounts,
  ExecutorKind,
} from "./spec.js";
export type { JsonValue } from "./json.js";
export { findNonJson, deepFreeze } from "./json.js";
export { hourly, daily, weekly, monthly, timeWindows, staticPartitions, dynamicPartitions, multiPartitions } from "../partitions/index.js";
export { identity, timeWindow, allPartitions, lastPartition, staticMapping, multiMapping } from "./mappings.js";

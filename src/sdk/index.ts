export { asset, sourceAsset, dep, buildSpec } from "./asset.js";
export type {
  AssetDefinition,
  AssetConfig,
  AssetConfigBase,
  AssetFunction,
  SourceAssetConfig,
  SourceObservation,
  Dep,
  DepsRecord,
  InputsOf,
  OutputOf,
  RetryConfig,
  SingleMapping,
  ManyMapping,
} from "./asset.js";
export { check } from "./check.js";
export type { CheckDefinition, CheckResult } from "./check.js";
export { onCron, eager, onMissing, allOf, anyOf, not, validateCron } from "./automation.js";
export type { AutomationSpec } from "./automation.js";
export { at, fileExists, s3ObjectExists, httpOk, sqlReturnsRows, assetMaterialized } from "./triggers.js";
export type { TriggerSpec, DeferOptions } from "./triggers.js";
export { parseDuration } from "./duration.js";
export type { Duration } from "./duration.js";
export { definitionKind, DEFINITION_BRAND } from "./definition.js";
export type { DefinitionKind } from "./definition.js";
export type { AssetContext, PartitionContext, StepLogger, Secrets } from "./context.js";
export { TRIGGER_RULES, EXECUTORS } from "./spec.js";
export type { AssetSpec, CheckSpec, DepSpec, RetryPolicySpec, TriggerRule, ExecutorKind } from "./spec.js";
export type { JsonValue } from "./json.js";
export { findNonJson } from "./json.js";
export {
  hourly,
  daily,
  weekly,
  monthly,
  timeWindows,
  staticPartitions,
  dynamicPartitions,
  multiPartitions,
} from "../partitions/index.js";
export { identity, timeWindow, allPartitions, lastPartition, staticMapping, multiMapping } from "./mappings.js";

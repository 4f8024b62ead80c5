// The asset graph of a definitions snapshot: validation, snapshot assembly,
// lookups, selection and topological order. Pure: no I/O, no user code.
export { AssetGraph } from "./asset-graph.js";
export type { DownstreamEdge, ExpandOptions } from "./asset-graph.js";
export { buildSnapshot } from "./build-snapshot.js";
export type { BuiltSnapshot, FileDefinitions, PreviousDefinitions } from "./build-snapshot.js";
export { canonicalJson, hashSnapshot } from "./canonical-json.js";
export { graphProblemToError } from "./graph-problem.js";
export type { GraphProblem, GraphProblemCode } from "./graph-problem.js";
export { checkDependencyMapping, readsMany } from "./partition-deps.js";
export { explainAsset } from "./explain-asset.js";
export type {
  AssetExplanation,
  CheckExplanation,
  DependencyExplanation,
  DownstreamExplanation,
  ExplainOptions,
  PartitionReads,
} from "./explain-asset.js";
export { SNAPSHOT_FORMAT_VERSION } from "./snapshot.js";
export type { DefinitionsSnapshot, SnapshotAsset, SnapshotCheck } from "./snapshot.js";
export { stepSettings } from "./step-settings.js";
export type { StepSettings } from "./step-settings.js";
export { suggestKey } from "./suggest-key.js";
export { analyzeGraph, validateGraph } from "./validate-graph.js";
export type { GraphAnalysis, ValidateGraphOptions } from "./validate-graph.js";

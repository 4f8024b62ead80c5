// Testing asset functions in the test's own process: `import { materializeInMemory, buildContext } from "tributary/testing"`.
export { materializeInMemory } from "./materialize.js";
export { MaterializeError } from "./materialize-types.js";
export type {
  MaterializeOptions,
  MaterializeResult,
  StepReport,
  StepStatus,
  CheckReport,
  StepRef,
  TriggerPayload,
  UpstreamValue,
} from "./materialize-types.js";
export { buildContext } from "./build-context.js";
export type { BuildContextOptions, TestContext } from "./build-context.js";
export type { LogEntry } from "./memory-log.js";

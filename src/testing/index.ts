// Testing asset functions in the test's own process: `import { materializeInMemory, buildContext } from "tributary/testing"`.
export { materializeInMemory, MaterializeError } from "./materialize.js";
export type {
  MaterializeOptions,
  MaterializeResult,
  StepReport,
  StepStatus,
  CheckReport,
  StepRef,
  TriggerPayload,
  UpstreamValue,
} from "./materialize.js";
export { buildContext } from "./build-context.js";
export type { BuildContextOptions, TestContext } from "./build-context.js";
export type { LogEntry } from "./memory-log.js";

/**
 * The execution contract: what executors, the reconciler, storage-backed and remote backends and the execution
 * API exchange about step tries, defined once, and the one way claimed steps become dispatches.
 */
export type {
  Executor,
  ExecutionBackend,
  StepDispatch,
  InputsRequest,
  ResumedTrigger,
  DeferRequest,
  StepStarted,
  StepOutcome,
  StepResult,
  StepInputs,
} from "./contract.js";
export { buildDispatch, definitionOfClaim, dispatchClaims } from "./dispatch.js";
export type { ClaimDefinition, ClaimDispatches, DispatchDirs } from "./dispatch.js";

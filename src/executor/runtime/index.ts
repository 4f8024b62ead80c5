// What runs one try in the current process — the step runtime, its logs, secrets and console capture — without the
// executors, the stores and their drivers: for running asset functions in a test's own process (tributary/testing).
export { StepRuntime, standaloneTry } from "../step-runtime.js";
export type { CheckOutput, RuntimeHost } from "../step-runtime.js";
export { StepLog } from "../step-log.js";
export type { LogLevel } from "../step-log.js";
export { ChainSecretBackend, EnvSecretBackend, SecretResolver } from "../secrets.js";
export type { SecretBackend } from "../secrets.js";
export { captureConsole } from "../process-guards.js";
export { timeoutError } from "../step-errors.js";

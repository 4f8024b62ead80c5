// Executors run step tries and report through an ExecutionBackend (the execution contract); they talk
// to the rest of Tributary only through that seam.
export { LocalExecutor } from "./local-executor.js";
export type { LocalExecutorOptions } from "./local-executor.js";
export { InProcessExecutor } from "./in-process-executor.js";
export type { InProcessExecutorOptions } from "./in-process-executor.js";
export { STEP_ERROR_CODES } from "./step-errors.js";
export { formatLogLine } from "./step-log.js";
export type { LogLevel } from "./step-log.js";
export { StoreExecutionBackend, OUTPUT_STORE_SETTING } from "./store-backend.js";
export type { StoreBackendOptions } from "./store-backend.js";
export { TransactionalExecutor, TRANSACTIONAL_NEEDS_POSTGRES, TRANSACTION_FAILED } from "./transactional-executor.js";
export { definitionsImporter } from "./definitions-importer.js";
export type { TransactionalExecutorOptions, TransactionalBackend } from "./transactional-executor.js";
export { arm, disarm, disarmAll, hit, FAULTS_ENV, FAULT_INJECTED, TX_FAULT_POINTS } from "./fault-points.js";
export type { FaultAction } from "./fault-points.js";
// A remote worker's backend: the execution API over HTTP, with per-try tokens and log shipping.
export { HttpExecutionBackend, ExecutionApiCallError } from "./http-execution-backend.js";
export type { HttpExecutionBackendOptions } from "./http-execution-backend.js";
export { TryLogShipper } from "./try-log-shipper.js";
export type { TryLogShipperOptions } from "./try-log-shipper.js";
/** The BullMQ executor and worker, loaded when asked for: only a process that uses Redis loads BullMQ and ioredis. */
export const loadBullmq = (): Promise<typeof import("./bullmq.js")> => import("./bullmq.js");
export type { BullmqExecutor, BullmqExecutorOptions, QueueDepth, BullmqStepWorker, BullmqStepWorkerOptions } from "./bullmq.js";

// The BullMQ fleet's executor and worker. Imported through loadBullmq (index.ts): only a process that uses Redis
// loads BullMQ and ioredis.
export { BullmqExecutor } from "./bullmq-executor.js";
export type { BullmqExecutorOptions, QueueDepth } from "./bullmq-executor.js";
export { BullmqStepWorker } from "./bullmq-worker.js";
export type { BullmqStepWorkerOptions } from "./bullmq-worker.js";

// The scheduler loop. It hands runnable steps to executors (through their
// interface) and otherwise talks to the rest of Tributary only through storage.
export { Reconciler } from "./reconciler.js";
export type { ReconcilerOptions } from "./reconciler.js";
export { buildDispatch, partitionInfo } from "./dispatch-builder.js";

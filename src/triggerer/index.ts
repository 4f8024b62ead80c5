/**
 * Triggerer: claims the due triggers of deferred steps and source observations, checks them (with the trigger
 * checks) and records what they found. Custom trigger kinds are checked in a child process of their own.
 */
export { Triggerer, type TriggererOptions } from "./triggerer.js";
export { TriggerKindProcess, type TriggerKindProcessOptions } from "./trigger-kind-process.js";

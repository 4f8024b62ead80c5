import type { ErrorLocation, SerializedError } from "../errors/index.js";
import type { StepDispatch, StepOutcome } from "../execution/index.js";

// Messages between LocalExecutor and its worker child processes (JSON over
// the IPC channel). Both directions batch: one message carries every step
// placed on, or finished in, one child during one turn of the event loop.

/** Parent → child. */
export type ToWorker =
  /**
   * Steps to run. An input value several steps of the message read (one upstream output, read by every mapped
   * step of a fan-out, or by many partitions) travels once, in `shared`; a step names it in `sharedInputs`
   * (input name → index) and receives its own copy.
   */
  | {
      readonly t: "run";
      readonly steps: readonly {
        readonly d: StepDispatch;
        readonly inputs: Readonly<Record<string, unknown>>;
        readonly sharedInputs?: Readonly<Record<string, number>>;
      }[];
      readonly shared?: readonly unknown[];
    }
  /** Abort the step's ctx.signal with this error (a timeout, a cancel, a close). */
  | {
      readonly t: "abort";
      readonly stepId: number;
      readonly code: string;
      readonly message: string;
      readonly location: ErrorLocation | undefined;
    }
  /** The answer to a `call`: its value, or the error it failed with. */
  | { readonly t: "call-done"; readonly id: number; readonly value?: unknown; readonly error?: SerializedError };

/** One event inside a child's batch. Times are epoch milliseconds. */
export type WorkerEvent =
  | { readonly t: "started"; readonly stepId: number; readonly tryNumber: number; readonly at: number }
  | {
      readonly t: "done";
      readonly stepId: number;
      readonly tryNumber: number;
      readonly outcome: StepOutcome;
      readonly startedAt: number;
      readonly endedAt: number;
    }
  /** A RuntimeHost method the parent answers through its backend; answered by `call-done`. */
  | { readonly t: "call"; readonly id: number; readonly call: HostCall };

/** What a step's code asks of the parent: ctx.addDynamicPartitions, and assetMaterialized checks of poke/reschedule waits. */
export type HostCall =
  | { readonly method: "addDynamicPartitions"; readonly name: string; readonly keys: readonly string[] }
  | { readonly method: "materialized"; readonly assetKey: string; readonly partitionKey: string };

/** Child → parent. */
export type FromWorker = { readonly t: "ready" } | { readonly t: "events"; readonly events: readonly WorkerEvent[] };

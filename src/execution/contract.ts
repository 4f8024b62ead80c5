import type { FailureClass, SerializedError } from "../errors/index.js";
import type { HandedOutTry, StepStart } from "../storage/index.js";

/**
 * One step try handed to an executor: everything needed to run it without
 * reading the metadata database (a worker needs no database credentials).
 */
export interface StepDispatch {
  readonly stepId: number;
  readonly runId: string;
  /** 1-based; counts across retries and clears. */
  readonly tryNumber: number;
  /**
   * The last try the step may reach: a retryable user failure of an earlier
   * try is retried (onRetry), of this one it is final (onFailure). An
   * infrastructure failure does not count: it runs again on its own budget,
   * and the last try moves one later. Absent: the asset's `retries.max + 1`,
   * right for a step never cleared nor lost to the infrastructure.
   */
  readonly lastTry?: number;
  readonly assetKey: string;
  /** `""` for an unpartitioned asset. */
  readonly partitionKey: string;
  readonly mapIndex: number;
  /** The partition's data interval (ISO instants) and per-dimension keys. */
  readonly partition: {
    readonly window: { readonly start: string; readonly end: string } | null;
    readonly dimensions: Readonly<Record<string, string>> | null;
  };
  /** Absolute path of the definitions file that exports the asset (or the check), and the export name. */
  readonly file: string;
  readonly exportName: string;
  /**
   * The version of that file's code the step was planned with (see SnapshotAsset.codeHash): the worker runs
   * exactly that code. Absent: the file as it is when the step starts.
   */
  readonly codeHash?: string;
  /** A mapped step (mapIndex >= 0): the item it runs on, as `ctx.map`. */
  readonly map?: { readonly index: number; readonly item: unknown; readonly label: string | null };
  /** Set when the step runs an asset check on the partition instead of the asset's function. */
  readonly check?: { readonly name: string; readonly blocking: boolean; readonly severity: "warn" | "error" };
  /** Aborts ctx.signal after this long, then kills the step's process after the grace period. */
  readonly timeoutMs: number | null;
  /** The asset's queue (the BullMQ executor routes the step to the workers of that queue); absent: the default. */
  readonly queue?: string | null;
  /** Where this try's log goes (a file path in local mode). */
  readonly logRef: string;
  /** Triggers this step deferred on that have fired, oldest first: ctx.defer on the same trigger returns the payload. */
  readonly resumed?: readonly ResumedTrigger[];
  /** A reschedule-mode wait in progress: when it began (ISO), its timeout counts from here. */
  readonly waitStartedAt?: string | null;
  /** The try's execution-API bearer token, for a worker that reports over HTTP (HttpExecutionBackend). */
  readonly token?: string;
}

/**
 * What reading a try's inputs needs of its dispatch: a worker sends it, and the execution API rebuilds it from the
 * database for a worker that reports over HTTP.
 */
export type InputsRequest = Pick<
  StepDispatch,
  "stepId" | "runId" | "tryNumber" | "assetKey" | "partitionKey" | "mapIndex" | "partition" | "check" | "timeoutMs" | "logRef"
>;

/** A fired trigger of a deferred step, handed back to the re-entered function. */
export interface ResumedTrigger {
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly payload: unknown;
}

/** What a deferring try asks the triggerer to wait for. */
export interface DeferRequest {
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly timeoutMs: number;
  readonly pollIntervalMs: number;
  readonly softFail: boolean;
}

/** A try's start as a worker reports it: the run store's StepStart. */
export type StepStarted = StepStart;

export type StepOutcome =
  | { readonly kind: "success"; readonly outputJson: string; readonly sizeBytes: number }
  /**
   * The try failed. `failureClass` says whose fault: `user` when the asset's code threw, ran past its own timeout,
   * called process.exit, ran its process out of memory, or returned something that cannot be stored;
   * `infrastructure` when the try ended for a reason outside that code (its worker was stopped, killed from outside
   * or lost, the backend, execution API or output store could not be reached). Only user failures count against
   * the asset's `retries`.
   */
  | { readonly kind: "failed"; readonly error: SerializedError; readonly retryable: boolean; readonly failureClass: FailureClass }
  | { readonly kind: "skipped"; readonly reason: string }
  /** ctx.defer / waitFor deferrable: the try ends, the step waits on a trigger without a slot. */
  | { readonly kind: "deferred"; readonly trigger: DeferRequest }
  /** waitFor reschedule: not there yet; the step is checked again in a new try at `nextCheckAt` (epoch ms). */
  | { readonly kind: "rescheduled"; readonly nextCheckAt: number; readonly waitStartedAt: number }
  /**
   * The step fans out: one mapped step per item (`itemsJson` is the JSON array of the items, validated),
   * with a label each when the asset gives them.
   */
  | { readonly kind: "expanded"; readonly count: number; readonly itemsJson: string; readonly labels: readonly (string | null)[] | null };

export interface StepResult {
  readonly stepId: number;
  readonly runId: string;
  readonly tryNumber: number;
  readonly outcome: StepOutcome;
  readonly startedAt: Date | null;
  readonly endedAt: Date;
  readonly workerId: string;
  readonly logRef: string;
  /** Set when the try's `started` report was folded into this one (it never went out on its own). */
  readonly hostname?: string;
  readonly pid?: number;
}

/** Inputs of one step: per dependency name, the upstream output (or an array of them, in partition order). */
export type StepInputs =
  | { readonly ok: true; readonly inputs: Readonly<Record<string, unknown>> }
  /**
   * The inputs cannot be read: `user` when the step's own definition is at fault (an upstream it reads was never
   * materialised), `infrastructure` when the store holding them could not be reached. The try then fails unstarted.
   */
  | { readonly ok: false; readonly error: SerializedError; readonly failureClass: FailureClass };

/**
 * What an executor needs from the rest of Tributary. The local executor gets
 * a storage-backed implementation; a remote worker gets one over the
 * execution API. Every method takes batches: executors coalesce calls.
 */
export interface ExecutionBackend {
  loadInputs(steps: readonly InputsRequest[]): Promise<ReadonlyMap<number, StepInputs>>;
  started(events: readonly StepStarted[]): Promise<void>;
  heartbeat(steps: readonly { readonly stepId: number; readonly tryNumber: number }[]): Promise<void>;
  /**
   * Records results. With `freeSlots`, the backend may hand back steps that
   * became runnable because of these results and that it has already claimed
   * for this executor (the "mini-scheduler" fast path: the downstream step
   * starts without waiting for a reconciler); the executor runs them as if
   * submitted.
   */
  finished(results: readonly StepResult[], options?: { readonly freeSlots: number }): Promise<readonly StepDispatch[] | void>;
  addDynamicPartitions(name: string, keys: readonly string[]): Promise<void>;
  /** The latest materialisation of an asset partition, for assetMaterialized checks in a worker. */
  materialized(assetKey: string, partitionKey: string): Promise<{ eventId: number } | undefined>;
}

/** Runs step tries somewhere. Results flow back through the ExecutionBackend. */
export interface Executor {
  readonly kind: string;
  /** How many more steps it accepts now (the reconciler never hands over more). */
  freeSlots(): number;
  /** Accepts steps to run; returns at once. */
  submit(steps: readonly StepDispatch[]): void;
  /** Aborts these steps' signals; kills their process if they do not end within the grace period. */
  cancel(stepIds: readonly number[], reason: string): void;
  /** Stops taking steps, lets running ones finish (up to graceMs), then kills what is left. */
  close(options?: { graceMs?: number }): Promise<void>;
  /**
   * Of these tries handed to the executor kind and not started, those it no longer holds (a queue that lost its
   * jobs): the reconciler hands them out again at once. Executors whose queue cannot lose a try leave it out.
   */
  lostTries?(tries: readonly HandedOutTry[]): Promise<readonly HandedOutTry[]>;
}

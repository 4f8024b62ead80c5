// What materializeInMemory takes and answers: its options, the report of each step and check, and the result.
import { TributaryError, type SerializedError } from "../errors/index.js";
import type { AssetDefinition, JsonValue, OutputOf } from "../sdk/index.js";
import type { LogEntry } from "./memory-log.js";

/** The name errors of an in-memory materialisation start with. */
export const WHAT = "materializeInMemory";

/** The value of an upstream the test provides: the same for every partition, or a function of the partition key. */
export type UpstreamValue = unknown;

/** A fired trigger's payload for a deferred wait: one for every wait, or a function of the trigger and the step. */
export type TriggerPayload =
  JsonValue | ((trigger: { readonly kind: string; readonly args: Readonly<Record<string, unknown>> }, step: StepRef) => unknown);

export interface StepRef {
  readonly assetKey: string;
  readonly partitionKey: string;
}

export interface MaterializeOptions {
  /** One partition, in the partitions definition of the selection's roots (as `tributary materialize --partition`). */
  readonly partition?: string;
  /** Several partitions. */
  readonly partitions?: readonly string[];
  /** A range of partitions, both ends included; give both. */
  readonly from?: string;
  readonly to?: string;
  /**
   * Values of the upstream assets the test provides instead of materialising them, by key: the value for every
   * partition, or a function `(partitionKey) => value`. Every asset given here is read, never run. Values go
   * through JSON, as stored outputs do.
   */
  readonly upstreams?: Readonly<Record<string, UpstreamValue>>;
  /** What `ctx.secrets.get(name)` answers. Without it, secrets come from the environment, as in a worker. */
  readonly secrets?: Readonly<Record<string, string>>;
  /** The clock of the plan: which partitions exist. Default: now. */
  readonly now?: Date | string;
  /**
   * Deferred waits (`ctx.defer`, `ctx.waitFor` in `deferrable` mode) resolve with this payload and the function is
   * entered again, as after the triggerer fires; `poke` and `reschedule` waits pass at once with it. Without it, a
   * step that defers ends `deferred`, and poke and reschedule waits check their trigger for real, as on a worker.
   */
  readonly triggers?: { readonly resolve: TriggerPayload };
  /** Keys of dynamic partition sets the plan needs, by name. */
  readonly dynamicPartitions?: Readonly<Record<string, readonly string[]>>;
  /** Throw a MaterializeError when a step fails (the result is on the error). Default true. */
  readonly raiseOnError?: boolean;
}

export type StepStatus = "success" | "failed" | "skipped" | "upstream_failed" | "deferred" | "rescheduled" | "pending";

/** How one step ended: an asset's partition, one item of a fan-out, or a check on a partition. */
export interface StepReport {
  readonly assetKey: string;
  readonly partitionKey: string;
  /** Set on a check's step. */
  readonly check?: string;
  /** Set on a fan-out's mapped step: its item's position. */
  readonly mapIndex?: number;
  readonly status: StepStatus;
  /** The output as a reader receives it (after JSON); a fan-out's step holds the gathered array. */
  readonly output?: unknown;
  readonly error?: SerializedError;
  /** Why it skipped (`ctx.skip`), or which trigger rule skipped it. */
  readonly reason?: string;
  /** What a deferred step waits for. */
  readonly trigger?: { readonly kind: string; readonly args: Readonly<Record<string, unknown>> };
  /** What the function logged, every entry of every entry into it. */
  readonly logs: readonly LogEntry[];
}

export interface CheckReport {
  readonly assetKey: string;
  readonly name: string;
  readonly partitionKey: string;
  readonly blocking: boolean;
  readonly passed: boolean;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** What the check threw, or why its answer was not a verdict. */
  readonly error: SerializedError | null;
}

export type AssetRef<A extends AssetDefinition = AssetDefinition> = A | string;

export interface MaterializeResult {
  /** No step failed, and every planned step ran to its end. */
  readonly success: boolean;
  /** Every step in the order it ran (dependency order). */
  readonly steps: readonly StepReport[];
  readonly checks: readonly CheckReport[];
  /** A partition's output; throws naming its status when it has none. `partition` may be left out for an unpartitioned asset. */
  output<A extends AssetDefinition>(asset: AssetRef<A>, partition?: string): OutputOf<A>;
  /** Every materialised partition's output, in partition order. */
  outputs<A extends AssetDefinition>(asset: AssetRef<A>): ReadonlyMap<string, OutputOf<A>>;
  /** The report of an asset partition's step. */
  step(asset: AssetRef, partition?: string): StepReport;
  /** What an asset partition's step logged. */
  logs(asset: AssetRef, partition?: string): readonly LogEntry[];
}

/** A step failed under `raiseOnError`; the whole result is on `result`. */
export class MaterializeError extends TributaryError {
  constructor(
    message: string,
    readonly result: MaterializeResult,
  ) {
    super("MATERIALIZE_FAILED", message);
  }
}

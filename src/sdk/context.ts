import type { TimeWindow } from "../partitions/index.js";
import type { DeferOptions, TriggerSpec } from "./triggers.js";

export interface PartitionContext {
  /** The partition key, `""` for an unpartitioned asset. */
  readonly key: string;
  /** The data interval of a time partition (or of the time dimension of a multi-partition). */
  readonly window: TimeWindow | undefined;
  /** Per-dimension keys of a multi-partition. */
  readonly dimensions: Readonly<Record<string, string>> | undefined;
}

export interface StepLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface Secrets {
  /** Resolves a secret at run time; throws naming the secret when it is missing. */
  get(name: string): Promise<string>;
}

/** What an asset function receives besides its upstream values. */
export interface AssetContext {
  readonly assetKey: string;
  readonly partition: PartitionContext;
  readonly run: { readonly id: string };
  readonly tryNumber: number;
  readonly log: StepLogger;
  /** Aborts on timeout or cancellation: pass it to fetch, database drivers, streams. */
  readonly signal: AbortSignal;
  readonly secrets: Secrets;
  /** Ends the step as `skipped` with a reason; downstream follows its trigger rule. */
  skip(reason: string): never;
  /** Frees the worker slot until the trigger fires; resolves with the trigger's payload. */
  defer<T = unknown>(trigger: TriggerSpec, options?: DeferOptions): Promise<T>;
  addDynamicPartitions(name: string, keys: readonly string[]): Promise<void>;
}

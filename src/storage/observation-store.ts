import type { JsonValue } from "./json.js";

/** A source partition that should be observed: the waiting trigger it needs. */
export interface ObservationTarget {
  readonly assetKey: string;
  /** '' for an unpartitioned source. */
  readonly partitionKey: string;
  /** The asset's `observe` trigger, templates unrendered. */
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** The partition's window (ISO, in the asset's timezone) for `{start}`/`{end}`; null when untimed. */
  readonly partitionWindow: { readonly start: string; readonly end: string } | null;
  readonly pollIntervalMs: number;
  /** When the wait gives up (partition status `timed_out`); null: never. */
  readonly timeoutAt: Date | null;
}

/** One observation trigger that fired: the partition appeared. */
export interface FiredObservation {
  readonly triggerId: number;
  readonly assetKey: string;
  /** '' (or null) for an unpartitioned source. */
  readonly partitionKey: string | null;
  /** What the check found (e.g. the file's size and mtime). */
  readonly payload: JsonValue;
}

/** One observation trigger that timed out before its partition appeared. */
export interface TimedOutObservation {
  readonly triggerId: number;
  readonly assetKey: string;
  readonly partitionKey: string | null;
}

/** A source asset and the partitions it should be observed on now. */
export interface ObservedSource {
  readonly assetKey: string;
  /** Its partitions to observe now; its waiting triggers for any other partition end (canceled). */
  readonly targets: readonly ObservationTarget[];
}

export interface EnsureObservationsResult {
  /** Triggers created (partitions that had no waiting trigger). */
  readonly created: number;
  /** Waiting triggers canceled: their partition left the lookback, or the source's `observe` or poll interval changed. */
  readonly canceled: number;
}

/**
 * Observation triggers of source assets. The reconciler's observations task
 * keeps one waiting trigger on each due, unobserved source partition; the
 * triggerer fires or expires it (see recordObservationsIn and
 * recordObservationTimeoutsIn in pg-observation-store.ts, which it calls inside
 * its own transactions).
 */
export interface ObservationStore {
  /**
   * In one transaction, per source: cancels its waiting observation triggers
   * that are not among its targets or differ from them (kind, args, poll
   * interval), then creates the waiting trigger of each target unless the
   * partition is already observed (materialized) or timed out, already has a
   * waiting trigger, or its identical trigger failed for good (a broken
   * template would only fail again). Idempotent, and safe with several
   * reconcilers at once.
   */
  ensureObservationTriggers(sources: readonly ObservedSource[], now: Date): Promise<EnsureObservationsResult>;
  /** Cancels the waiting observation triggers of every asset but these (sources removed, or no longer observed); returns how many. */
  cancelObservationsExcept(assetKeys: readonly string[], now: Date): Promise<number>;
}

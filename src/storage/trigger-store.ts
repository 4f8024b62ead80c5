import type { SerializedError } from "../errors/index.js";
import type { JsonValue } from "./json.js";
import type { TriggerStatus } from "./database.js";

/**
 * A wait to create: either a deferred step's (stepId) or a source-asset
 * observation (assetKey/partitionKey, no step). Creating the same waiting
 * trigger twice returns the existing one.
 */
export type NewTrigger = {
  readonly kind: string;
  readonly args?: Readonly<Record<string, unknown>>;
  /** First check; defaults to `now`. */
  readonly nextCheckAt?: Date;
  readonly timeoutAt?: Date | null;
  /** The partition's time window, for `{start}`/`{end}` templates (null: untimed). */
  readonly partitionWindow?: TriggerWindow | null;
  /** Time between checks while the awaited thing is not there (default 5 s). */
  readonly pollIntervalMs?: number;
  /** A timeout skips the deferred step instead of failing it. */
  readonly softFail?: boolean;
} & (
  | { readonly stepId: number; readonly assetKey?: undefined; readonly partitionKey?: undefined }
  | { readonly stepId?: undefined; readonly assetKey: string; readonly partitionKey?: string | null }
);

export interface CreatedTrigger {
  readonly id: number;
  /** False when an identical waiting trigger already existed. */
  readonly created: boolean;
}

/** A time partition's window as ISO instants. */
export interface TriggerWindow {
  readonly start: string;
  readonly end: string;
}

/** What a trigger checks and for whom: a deferred step, or an observed source partition. */
interface TriggerBase {
  readonly id: number;
  readonly kind: string;
  readonly args: Record<string, unknown>;
  readonly stepId: number | null;
  readonly assetKey: string | null;
  readonly partitionKey: string | null;
  readonly partitionWindow: TriggerWindow | null;
  readonly pollIntervalMs: number;
  readonly softFail: boolean;
  /** For a deferred step: the try that deferred. */
  readonly tryNumber: number | null;
  readonly attempts: number;
  readonly nextCheckAt: Date;
  readonly timeoutAt: Date | null;
  readonly lastResult: JsonValue | null;
}

/** A trigger leased to one triggerer until `leaseExpiresAt`. */
export interface ClaimedTrigger extends TriggerBase {
  readonly leaseExpiresAt: Date;
}

/**
 * The outcome of the latest check of a claimed trigger. `checks` counts the
 * checks it stands for (default 1): a triggerer writes an unchanged
 * "waiting" only now and then, and the checks in between count too.
 */
export type TriggerCheckResult = { readonly checks?: number } & (
  | { readonly triggerId: number; readonly outcome: "fired"; readonly payload: JsonValue }
  /** Checked fine, not there yet: checked again after the poll interval. */
  | { readonly triggerId: number; readonly outcome: "waiting"; readonly result?: JsonValue; readonly pollIntervalMs: number }
  /** The check itself failed (threw, timed out): retried with exponential backoff. */
  | { readonly triggerId: number; readonly outcome: "error"; readonly error: SerializedError; readonly pollIntervalMs: number }
  /**
   * The trigger can never be checked (unknown kind, invalid args or template):
   * it ends `failed`, and its deferred step fails for good with the error.
   */
  | { readonly triggerId: number; readonly outcome: "failed"; readonly error: SerializedError }
);

export interface RecordChecksResult {
  /** Results applied (the trigger was still leased to the owner and waiting). */
  readonly applied: number;
  /** Results dropped: the lease was lost (taken over) or the trigger is no longer waiting. */
  readonly ignored: readonly number[];
  readonly fired: readonly number[];
  /** Fired triggers whose step was no longer deferred (e.g. its run was canceled). */
  readonly canceled: readonly number[];
  /** Deferred steps moved back to `scheduled`. */
  readonly scheduledSteps: readonly number[];
  /** Triggers ended `failed` (permanent errors). */
  readonly failed: readonly number[];
  /** Deferred steps failed because their trigger failed. */
  readonly failedSteps: readonly number[];
}

export interface ExpireResult {
  readonly timedOut: readonly number[];
  /** Deferred steps failed (TRIGGER_TIMED_OUT) or skipped (softFail). */
  readonly failedSteps: readonly number[];
  readonly skippedSteps: readonly number[];
}

export interface TriggerRecord extends TriggerBase {
  readonly status: TriggerStatus;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: Date | null;
  readonly lastCheckedAt: Date | null;
  readonly payload: JsonValue | null;
  readonly error: JsonValue | null;
  readonly endedAt: Date | null;
}

/**
 * Storage of triggers, the async checks a triggerer runs for deferred steps
 * and source observations. Work is claimed with a lease (SKIP LOCKED), and
 * every write by a triggerer only touches rows it still holds, so a
 * triggerer that lost its lease (takeover after a pause) cannot overwrite.
 */
export interface TriggerStore {
  createTriggers(rows: readonly NewTrigger[], now: Date): Promise<CreatedTrigger[]>;
  /** Due (next_check_at <= now) waiting triggers with a free or lapsed lease, leased to `owner`. */
  claimDue(owner: string, now: Date, options: { limit: number; leaseMs: number }): Promise<ClaimedTrigger[]>;
  /** Heartbeat: extends every lease `owner` still holds; returns how many. */
  renewLeases(owner: string, now: Date, leaseMs: number): Promise<number>;
  /** Gives back every lease of `owner` (on shutdown), so others can claim at once. */
  releaseLeases(owner: string): Promise<number>;
  recordChecks(owner: string, results: readonly TriggerCheckResult[], now: Date): Promise<RecordChecksResult>;
  /** Waiting triggers past timeout_at become timed_out; their deferred steps fail (or skip with softFail). */
  expire(now: Date, options?: { limit?: number }): Promise<ExpireResult>;
  getTriggers(ids: readonly number[]): Promise<TriggerRecord[]>;
}

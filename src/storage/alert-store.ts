import type { AlertStatus } from "./database.js";
import type { JsonValue } from "./json.js";

/** What caused an alert; the first part of its cause key. */
export type AlertKind = "step_failed" | "check_failed" | "deadline_missed" | "load_error" | "observation_timed_out";

/** One stored alert, as the API and the sinks see it. */
export interface AlertRecord {
  readonly id: number;
  /** Unique per cause (`step_failed:<step>:<try>`, `check_failed:<step>:<try>`, `deadline:<asset>:<partition>`, `load_error:<path>:<hash>`, `observation_timed_out:<trigger>`): one alert per cause. */
  readonly causeKey: string;
  readonly kind: string;
  readonly assetKey: string | null;
  /** null for an unpartitioned asset and for alerts about no asset. */
  readonly partitionKey: string | null;
  readonly runId: string | null;
  /** The asset's `owner:` (for a load error: the first of the file's owners; all are in payload.owners). */
  readonly owner: string | null;
  readonly payload: { readonly [key: string]: JsonValue };
  readonly status: AlertStatus;
  /** Delivery attempts started so far. */
  readonly attempts: number;
  readonly nextAttemptAt: Date;
  readonly lastError: JsonValue | null;
  readonly sentAt: Date | null;
  /** Sinks that accepted it. */
  readonly sentTo: readonly string[];
  readonly createdAt: Date;
}

/** One partition whose deadline passed, to alert about unless it was materialised. */
export interface DeadlineCandidate {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly owner: string | null;
  /** The partition's window (ISO instants) and when its deadline passed. */
  readonly windowStart: string;
  readonly windowEnd: string;
  readonly deadlineAt: string;
  readonly deadlineMs: number;
}

/** How one delivery attempt ended. */
export interface AlertSettlement {
  readonly id: number;
  /** The `attempts` value the claim returned: a settlement for an older claim is ignored. */
  readonly attempt: number;
  /** Every sink it had to reach has it now. */
  readonly sent: boolean;
  /** Sinks that accepted it so far (including earlier attempts). */
  readonly sentTo: readonly string[];
  /** Why the attempt failed (when not sent). */
  readonly error?: JsonValue;
  /** When not sent: the next attempt, or null to give up (status failed). */
  readonly nextAttemptAt?: Date | null;
}

export interface ListAlertsOptions {
  readonly assetKey?: string;
  readonly status?: AlertStatus;
  /** Most recent first; default 50. */
  readonly first?: number;
}

/**
 * Stored alerts: produced by the run store (a step failed for good) and by
 * the reconciler's alerts task (deadlines, definitions files that stopped
 * loading), delivered by that task. `cause_key` is unique, so a cause gives
 * one alert however many reconcilers notice it.
 */
export interface AlertStore {
  /**
   * One alert per definitions file whose latest load failed, per source hash
   * (a new broken version of the file alerts again). Returns how many were new.
   */
  recordLoadErrors(now: Date): Promise<number>;
  /** Per asset: the instant up to which deadlines were checked (the `cursors` table). */
  deadlineCursors(assetKeys: readonly string[]): Promise<Map<string, Date>>;
  /**
   * In one transaction: an alert for each candidate not materialised now, and
   * the assets' cursors moved forward (never back). Returns how many alerts were new.
   */
  recordDeadlineChecks(candidates: readonly DeadlineCandidate[], cursors: ReadonlyMap<string, Date>, now: Date): Promise<number>;
  /**
   * Claims up to `limit` pending alerts due at `now` (SKIP LOCKED): each gets
   * one more attempt and is leased until `now + leaseMs`, so no other claimer
   * sends it meanwhile.
   */
  claimDue(options: { now: Date; limit: number; leaseMs: number }): Promise<AlertRecord[]>;
  /** Records attempts' outcomes in one statement. */
  settle(settlements: readonly AlertSettlement[], now: Date): Promise<void>;
  list(options?: ListAlertsOptions): Promise<AlertRecord[]>;
}

/** The cursor row of an asset's deadline checks. */
export const deadlineCursorName = (assetKey: string): string => `alerts.deadline:${assetKey}`;

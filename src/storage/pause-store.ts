import type { AuditEntry } from "./audit-trail.js";
/** What to pause or resume: named assets, every asset of a group, or both (their union). */
export interface PauseTarget {
  readonly assetKeys?: readonly string[] | undefined;
  readonly group?: string | undefined;
}

export interface AssetPauseState {
  readonly assetKey: string;
  readonly group: string | null;
  readonly paused: boolean;
  /** When it was paused; null while it is not. */
  readonly pausedAt: Date | null;
  /** false when it already was in the requested state (pausing twice keeps the first pausedAt). */
  readonly changed: boolean;
}

/**
 * Whether automation and schedules may start runs for an asset
 * (`assets.paused`, which survives definition reloads). Pausing never touches
 * runs: manual and backfill runs of a paused asset go on, and new ones can be
 * launched. The automation tick reads the column itself.
 */
export interface PauseStore {
  /**
   * Pauses the target's assets in one transaction and wakes the reconciler;
   * returns every targeted asset, sorted by key. Nothing changes on error:
   * InputError PAUSE_TARGET_REQUIRED (neither keys nor a group), GraphError
   * GRAPH_UNKNOWN_ASSET (with the nearest key), InputError GROUP_UNKNOWN
   * (listing the groups there are).
   */
  pause(target: PauseTarget, now: Date, audit?: AuditEntry): Promise<AssetPauseState[]>;
  /** The inverse of {@link pause}, with the same errors. */
  resume(target: PauseTarget, now: Date, audit?: AuditEntry): Promise<AssetPauseState[]>;
  /** Pause state of these assets (keys not in the assets table are left out). One query. */
  pauseStates(assetKeys: readonly string[]): Promise<Map<string, { paused: boolean; pausedAt: Date | null }>>;
}

import type { AuditEntry } from "./audit-trail.js";
import type { QueuedObjectDeletion } from "./partition-wipe-store.js";

/** planned → erasing → rematerialising → done; `failed` until retried. */
export type ErasureState = "planned" | "erasing" | "rematerialising" | "done" | "failed";
export const ERASURE_STATES: readonly ErasureState[] = ["planned", "erasing", "rematerialising", "done", "failed"];

/** A partition a request erases, as the impact named it. */
export interface ErasureItemInput {
  readonly assetKey: string;
  readonly partitionKey: string;
  /** The materialisation that held the data (null when the partition had none). */
  readonly eventId: number | null;
  readonly runId: string | null;
  readonly stepId: number | null;
}

export interface NewErasureRequest {
  /** The source asset and partitions whose data is erased. */
  readonly assetKey: string;
  readonly partitionKeys: readonly string[];
  readonly reason: string | null;
  readonly requestedBy: string | null;
  /** The source's partitions (when Tributary materialises it) and every derived one. */
  readonly items: readonly ErasureItemInput[];
  /** The source and every asset reading it, transitively: while a step of one of them runs, nothing is erased. */
  readonly guardedAssets: readonly string[];
}

export interface ErasureRequestRecord {
  readonly id: string;
  readonly state: ErasureState;
  readonly assetKey: string;
  readonly partitionKeys: readonly string[];
  readonly reason: string | null;
  readonly requestedBy: string | null;
  readonly backfillId: string | null;
  /** Why it failed, or what it waits for. */
  readonly message: string | null;
  readonly attempts: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly finishedAt: Date | null;
  readonly itemCount: number;
  readonly erasedCount: number;
}

export interface ErasureItemRecord extends ErasureItemInput {
  readonly erasedAt: Date | null;
  readonly replacedByEventId: number | null;
  readonly replacedByRunId: string | null;
  readonly replacedAt: Date | null;
  readonly skippedReason: string | null;
}

export type ErasureDeletionKind = "output" | "object" | "log";

export interface ErasureDeletionRecord {
  readonly kind: ErasureDeletionKind;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string | null;
  readonly stepId: number | null;
  readonly tryNumber: number | null;
  /** The object's storage reference, `inline:<output id>` for an inline output, the log's `<run>/<step>-<try>`. */
  readonly ref: string | null;
  /** Null for a log the try never wrote. */
  readonly sizeBytes: number | null;
  readonly deletedAt: Date;
}

export interface ErasureHookCallRecord {
  readonly id: number;
  readonly assetKey: string;
  readonly partitionKeys: readonly string[];
  readonly attempt: number;
  readonly state: "running" | "success" | "failed";
  readonly startedAt: Date;
  readonly endedAt: Date | null;
  readonly error: string | null;
  readonly log: readonly string[];
}

/** A request with everything it did: what `tributary erase show` prints. */
export interface ErasureReport {
  readonly request: ErasureRequestRecord;
  readonly items: readonly ErasureItemRecord[];
  readonly deletions: readonly ErasureDeletionRecord[];
  readonly hookCalls: readonly ErasureHookCallRecord[];
}

/** A try whose log an erasure deletes. */
export interface ErasureTryLog {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string;
  readonly stepId: number;
  readonly tryNumber: number;
  readonly logRef: string | null;
}

/** What one batch of an erasure removed in the database. */
export type ErasureBatch =
  | {
      readonly kind: "erased";
      readonly outputs: number;
      /** Objects of the deleted outputs, queued for deletion from the object store. */
      readonly objectDeletions: readonly QueuedObjectDeletion[];
      /** Tries of the partitions whose logs are still to delete. */
      readonly logs: readonly ErasureTryLog[];
    }
  | {
      /** A run writes one of the partitions: nothing was removed; the request tries again later. */
      readonly kind: "busy";
      readonly message: string;
    };

/** How a claimed request changes when its holder lets it go. */
export interface ErasureRelease {
  readonly state?: ErasureState;
  readonly message?: string | null;
  readonly backfillId?: string | null;
  /** When a holder may take it again (default: at once). */
  readonly nextAttemptAt?: Date;
}

/** Erasure requests and their proof (erasure_requests, erasure_items, erasure_deletions, erasure_hook_calls). */
export interface ErasureStore {
  /**
   * Records a request with its items. Refuses (InputError ERASURE_PARTITIONS_IN_USE, naming runs) while a step that
   * has not finished targets one of the guarded assets (it may be writing data read from the old source); nothing
   * is recorded then.
   */
  create(request: NewErasureRequest, now: Date, audit?: AuditEntry): Promise<ErasureRequestRecord>;
  get(id: string): Promise<ErasureRequestRecord | undefined>;
  report(id: string): Promise<ErasureReport | undefined>;
  /** Newest first. */
  list(options: { readonly limit: number; readonly state?: ErasureState }): Promise<ErasureRequestRecord[]>;
  /**
   * Claims the oldest due request that is not finished and that no live lease holds (SKIP LOCKED): it is the
   * owner's until `now + leaseMs` (renew) or until it is released.
   */
  claim(owner: string, leaseMs: number, now: Date): Promise<ErasureRequestRecord | undefined>;
  /** Extends the lease; false when the owner no longer holds it. */
  renew(id: string, owner: string, leaseMs: number, now: Date): Promise<boolean>;
  release(id: string, owner: string, change: ErasureRelease, now: Date): Promise<void>;
  /** Adds partitions the request did not name yet (read from its source since it was recorded); answers how many. */
  addItems(id: string, items: readonly ErasureItemInput[]): Promise<number>;
  /** Items not erased yet, at most `limit`, by asset then partition. */
  pendingItems(id: string, limit: number): Promise<ErasureItemRecord[]>;
  /**
   * In one transaction, for the given partitions of one asset: refuses (kind `busy`) while an unfinished step
   * targets one of the guarded assets; else deletes their stored outputs (recording each), queues the outputs' objects, marks the
   * partitions `erased` and the items erased, and answers the tries whose logs are still to delete.
   */
  eraseBatch(
    id: string,
    batch: { readonly assetKey: string; readonly partitionKeys: readonly string[]; readonly guardedAssets: readonly string[] },
    now: Date,
  ): Promise<ErasureBatch>;
  /** Records deleted logs (or logs a try never wrote). */
  recordLogs(id: string, logs: readonly (ErasureTryLog & { readonly sizeBytes: number | null })[], now: Date): Promise<void>;
  /**
   * Records the objects of the request's deleted outputs that are gone from the deletion queue (deleted from the
   * object store), and answers how many are still queued with the latest error.
   */
  settleObjects(id: string, now: Date): Promise<{ readonly pending: number; readonly lastError: string | null }>;
  /** Assets whose erase hook has returned for this request. */
  hooksDone(id: string): Promise<Set<string>>;
  hookStarted(id: string, assetKey: string, partitionKeys: readonly string[], now: Date): Promise<number>;
  hookEnded(callId: number, outcome: { readonly error: string | null; readonly log: readonly string[] }, now: Date): Promise<void>;
  /** Items that will not be re-materialised, with why. */
  skipItems(
    id: string,
    items: readonly { readonly assetKey: string; readonly partitionKey: string; readonly reason: string }[],
  ): Promise<void>;
  /** Fills each erased item's replacement from its partition's latest materialisation, when there is a new one. */
  recordReplacements(id: string, now: Date): Promise<void>;
  /** A failed request goes back to where it failed (erasing, or re-materialising with a new backfill). */
  retry(id: string, now: Date, audit?: AuditEntry): Promise<ErasureRequestRecord>;
}

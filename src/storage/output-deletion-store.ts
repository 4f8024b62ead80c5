import type { QueuedObjectDeletion } from "./partition-wipe-store.js";

/** Objects of deleted outputs that the object store still holds (output_object_deletions). */
export interface OutputDeletionStore {
  /**
   * Claims up to `limit` due deletions (with `ids`, only those of them that are due) and moves them past a lease of
   * `leaseMs`, so that no other process takes them meanwhile; one that dies holding them leaves them to the next
   * claim after the lease. Rows locked by another claim are skipped, not waited for.
   */
  claim(
    options: { readonly limit: number; readonly leaseMs: number; readonly ids?: readonly number[] },
    now: Date,
  ): Promise<ClaimedObjectDeletion[]>;
  /** The objects are gone (or never existed): their rows go. */
  done(ids: readonly number[]): Promise<void>;
  /** The object could not be deleted: tried again after `retryAt`, with the error kept for `pending`. */
  failed(id: number, error: string, retryAt: Date): Promise<void>;
  /** How many objects wait to be deleted, and the latest error among them. */
  pending(): Promise<{ readonly count: number; readonly lastError: string | null }>;
}

export interface ClaimedObjectDeletion extends QueuedObjectDeletion {
  /** Earlier claims of this row, this one not counted. */
  readonly attempts: number;
}

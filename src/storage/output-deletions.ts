import type { OutputDeletionStore } from "./output-deletion-store.js";
import type { OutputStore } from "./output-store.js";

/** How long a claimed deletion is this process's before another may take it. */
const LEASE_MS = 60_000;
/** Backoff of a deletion that failed: doubling from 5 s, at most an hour. */
const FIRST_RETRY_MS = 5_000;
const MAX_RETRY_MS = 3_600_000;

export interface ObjectDeletionOutcome {
  readonly deleted: number;
  /** Objects that could not be deleted now; each is tried again later by a reconciler. */
  readonly failed: readonly { readonly storageRef: string; readonly error: string }[];
}

/**
 * Deletes queued objects of deleted outputs from the object store: claimed under a lease (so two processes never
 * delete the same object at once, and one that dies leaves it to another), removed from the queue once gone, kept
 * with the error and a growing backoff when the store refuses or does not answer. Without an object store in this
 * process, nothing is claimed: the objects wait for a process that has one.
 */
export async function deleteQueuedObjects(
  queue: OutputDeletionStore,
  store: OutputStore | null,
  now: Date,
  options: { readonly limit?: number; readonly ids?: readonly number[] } = {},
): Promise<ObjectDeletionOutcome> {
  if (!store) return { deleted: 0, failed: [] };
  const limit = options.limit ?? 100;
  if (options.ids) {
    // The named deletions, a batch at a time: a wipe of many partitions must not open thousands of requests at once.
    let deleted = 0;
    const failed: ObjectDeletionOutcome["failed"][number][] = [];
    for (let i = 0; i < options.ids.length; i += limit) {
      const batch = await deleteBatch(queue, store, now, { limit, ids: options.ids.slice(i, i + limit) });
      deleted += batch.deleted;
      failed.push(...batch.failed);
    }
    return { deleted, failed };
  }
  return deleteBatch(queue, store, now, { limit });
}

async function deleteBatch(
  queue: OutputDeletionStore,
  store: OutputStore,
  now: Date,
  options: { readonly limit: number; readonly ids?: readonly number[] },
): Promise<ObjectDeletionOutcome> {
  const claimed = await queue.claim({ limit: options.limit, leaseMs: LEASE_MS, ...(options.ids ? { ids: options.ids } : {}) }, now);
  const settled = await Promise.allSettled(claimed.map((c) => store.delete(c.storageRef)));
  const done: number[] = [];
  const failed: { storageRef: string; error: string }[] = [];
  for (const [i, outcome] of settled.entries()) {
    const c = claimed[i]!;
    if (outcome.status === "fulfilled") {
      done.push(c.id);
      continue;
    }
    const error = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
    failed.push({ storageRef: c.storageRef, error });
    const backoff = Math.min(FIRST_RETRY_MS * 2 ** Math.min(c.attempts, 20), MAX_RETRY_MS);
    await queue.failed(c.id, error, new Date(now.getTime() + backoff));
  }
  await queue.done(done);
  return { deleted: done.length, failed };
}

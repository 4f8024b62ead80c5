import { deleteQueuedObjects, type OutputDeletionStore, type OutputStore } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";

export interface OutputDeletionsTaskOptions {
  readonly queue: OutputDeletionStore;
  /** This process's object store; without one the task does nothing (another process deletes the objects). */
  readonly outputStore: OutputStore | null;
  /** At most this often (default 5 s): a queue that is usually empty costs one indexed read per interval. */
  readonly intervalMs?: number;
  /** Objects deleted per pass (default 100). */
  readonly batch?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/**
 * Deletes the objects of removed outputs that were not deleted when their outputs were (the object store did not
 * answer, the process stopped): each claimed under a lease, so any number of reconcilers may run this task, and
 * tried again with a growing backoff while the store refuses. A failure is said once per object, not per attempt.
 */
export class OutputDeletionsTask implements ReconcilerTask {
  readonly name = "output-deletions";
  #lastRun = Number.NEGATIVE_INFINITY;
  readonly #reported = new Set<string>();

  constructor(private readonly options: OutputDeletionsTaskOptions) {}

  async run(now: Date): Promise<void> {
    if (!this.options.outputStore) return;
    const since = now.getTime() - this.#lastRun;
    if (since >= 0 && since < (this.options.intervalMs ?? 5_000)) return;
    this.#lastRun = now.getTime();
    const outcome = await deleteQueuedObjects(this.options.queue, this.options.outputStore, now, { limit: this.options.batch ?? 100 });
    for (const f of outcome.failed) {
      if (this.#reported.has(f.storageRef)) continue;
      if (this.#reported.size > 10_000) this.#reported.clear();
      this.#reported.add(f.storageRef);
      this.options.log?.("warn", `could not delete ${f.storageRef} (of a removed output), trying again later: ${f.error}`);
    }
  }
}

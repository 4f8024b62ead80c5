import type { GraphCache, OutputRetentionStore } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";

export interface OutputRetentionTaskOptions {
  readonly store: OutputRetentionStore;
  /**
   * Outputs older than this are deleted (see OutputRetentionStore for what is always kept); undefined: only those of
   * assets with a retention of their own (`retention.outputs`).
   */
  readonly retentionMs: number | undefined;
  /** The current definitions, for the assets' own retention. */
  readonly graphs?: Pick<GraphCache, "current">;
  /** At most this often (default 60 s). */
  readonly intervalMs?: number;
  /** Outputs per statement (default 1 000), and statements per pass (default 10): small transactions, no long locks. */
  readonly batch?: number;
  readonly maxBatches?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/**
 * Output retention (TRIBUTARY_OUTPUT_RETENTION, and per asset `retention.outputs`): deletes outputs past the retention, oldest first, in small batches,
 * keeping what steps may still read; their objects go through the deletion queue (OutputDeletionsTask).
 */
export class OutputRetentionTask implements ReconcilerTask {
  readonly name = "output-retention";
  #lastRun = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OutputRetentionTaskOptions) {}

  async run(now: Date): Promise<void> {
    const since = now.getTime() - this.#lastRun;
    if (since >= 0 && since < (this.options.intervalMs ?? 60_000)) return;
    this.#lastRun = now.getTime();
    const batch = this.options.batch ?? 1_000;
    const { retentionMs } = this.options;
    const before = retentionMs === undefined ? null : new Date(now.getTime() - retentionMs);
    const graph = this.options.graphs ? (await this.options.graphs.current()).graph : undefined;
    const assets = (graph?.assets ?? []).flatMap((a) =>
      a.retention?.outputsMs !== undefined ? [{ assetKey: a.key, before: new Date(now.getTime() - a.retention.outputsMs) }] : [],
    );
    if (before === null && assets.length === 0) return;
    let outputs = 0;
    let objects = 0;
    for (let i = 0; i < (this.options.maxBatches ?? 10); i++) {
      const pruned = await this.options.store.prune({ before, assets, limit: batch }, now);
      outputs += pruned.outputs;
      objects += pruned.objects;
      if (pruned.outputs < batch) break;
    }
    if (outputs > 0) {
      this.options.log?.(
        "info",
        `output retention: deleted ${outputs} output(s) past their retention` +
          `${before ? ` (older than ${before.toISOString()} unless their asset sets its own)` : ""}, ${objects} object(s) queued`,
      );
    }
  }
}

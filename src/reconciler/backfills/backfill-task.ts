import type { AssetGraph } from "../../graph/index.js";
import { loadPartitionContext, type PartitionContext } from "../../partitions/index.js";
import { BackfillChunks, type BackfillLayout } from "../../planner/index.js";
import type { BackfillStore, DefinitionStore, GraphCache } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";
import { advanceBackfill } from "./advance-backfill.js";

export interface BackfillTaskOptions {
  readonly backfills: BackfillStore;
  readonly graphs: GraphCache;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  /** Most backfills advanced per pass, highest priority first (default 50). */
  readonly batch?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/**
 * The reconciler's backfill step: on every pass, each active backfill whose
 * row no other reconciler holds is advanced (see advanceBackfill). Runs
 * ending wake the reconciler (NOTIFY), so the next wave starts as soon as the
 * previous one ends, never after a sleep. With no backfill active a pass
 * costs one query on a partial index.
 */
export class BackfillTask implements ReconcilerTask {
  readonly name = "backfills";
  private readonly log: NonNullable<BackfillTaskOptions["log"]>;
  /** Chunkings by backfill, for the graph version they were computed with. */
  private readonly chunkings = new Map<string, { version: number; chunks: BackfillChunks }>();

  constructor(private readonly options: BackfillTaskOptions) {
    this.log = options.log ?? (() => undefined);
  }

  async run(now: Date): Promise<void> {
    const ids = await this.options.backfills.activeIds(this.options.batch ?? 50);
    if (ids.length === 0) {
      this.chunkings.clear();
      return;
    }
    // Everything outside the backfill's own transaction is read first: on
    // the embedded database a second connection waits for the first.
    const { version, graph } = await this.options.graphs.current();
    const ctx = await loadPartitionContext(
      graph.assets.map((a) => a.partitions),
      (name) => this.options.definitions.listDynamicPartitions(name),
    );
    for (const id of ids) {
      try {
        await this.options.backfills.advance(id, (tx) =>
          advanceBackfill(tx, {
            graph,
            version,
            ctx,
            now,
            log: this.log,
            chunksOf: (backfillId, layout) => this.chunksOf(backfillId, layout, version, graph, ctx, now),
          }),
        );
      } catch (err) {
        // One broken backfill must not hold back the others.
        this.log("error", `advancing backfill ${id} failed: ${(err as Error).stack ?? String(err)}`);
      }
    }
    for (const id of this.chunkings.keys()) if (!ids.includes(id)) this.chunkings.delete(id);
  }

  private chunksOf(
    id: string,
    layout: BackfillLayout,
    version: number,
    graph: AssetGraph,
    ctx: PartitionContext,
    now: Date,
  ): BackfillChunks {
    const cached = this.chunkings.get(id);
    if (cached && cached.version === version) return cached.chunks;
    const chunks = new BackfillChunks(graph, layout, ctx, now);
    this.chunkings.set(id, { version, chunks });
    return chunks;
  }
}

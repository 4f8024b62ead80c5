import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace } from "../../partitions/index.js";
import type { DefinitionStore, GraphCache, ObservationStore, ObservedSource } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";
import { DEFAULT_MAX_OBSERVED_PARTITIONS, DEFAULT_OBSERVE_LOOKBACK, observationTargets, observationWindow } from "./observation-targets.js";

export interface ObservationsTaskOptions {
  readonly store: Pick<ObservationStore, "ensureObservationTriggers" | "cancelObservationsExcept">;
  readonly graphs: Pick<GraphCache, "current">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  /** Time windows observed back from now (default 14). */
  readonly lookback?: number;
  /** Most partitions of one source observed at once (default 1 000). */
  readonly maxPartitionsPerAsset?: number;
  /**
   * Every source is ensured again at least this often (default 5 min), which
   * picks up partitions that lost their trigger some other way (a canceled
   * trigger, a partition cleared).
   */
  readonly refreshMs?: number;
}

/**
 * Keeps a waiting observation trigger on every due, unobserved partition of
 * each source asset that has `observe`, for the triggerer to check, and only
 * there: a partition that leaves the lookback, and a source that is removed
 * or loses `observe`, stop being observed. Cheap on a pass where nothing
 * changed: the due partitions are computed in memory and a source is written
 * only when its definition or its due range changed since this task last
 * ensured it (a new day closed, a dynamic key was added). The writes are
 * idempotent (see ObservationStore.ensureObservationTriggers), so every
 * reconciler may run this task.
 */
export class ObservationsTask implements ReconcilerTask {
  readonly name = "observations";
  /** Per source: what was last ensured (its definition and due range). */
  #ensured = new Map<string, string>();
  #definitions: { graph: AssetGraph; sources: { asset: SnapshotAsset; signature: string }[]; swept: boolean } | undefined;
  #refreshedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: ObservationsTaskOptions) {}

  async run(now: Date): Promise<void> {
    const sources = await this.#sources(now);
    if (sources.length === 0) return;
    if (now.getTime() - this.#refreshedAt >= (this.options.refreshMs ?? 300_000) || now.getTime() < this.#refreshedAt) {
      this.#ensured.clear();
      this.#refreshedAt = now.getTime();
    }
    const ctx = await loadPartitionContext(
      sources.map((s) => s.asset.partitions),
      (name) => this.options.definitions.listDynamicPartitions(name),
    );
    const limits = {
      lookback: this.options.lookback ?? DEFAULT_OBSERVE_LOOKBACK,
      maxPartitions: this.options.maxPartitionsPerAsset ?? DEFAULT_MAX_OBSERVED_PARTITIONS,
    };
    const batch: ObservedSource[] = [];
    const ensured = new Map<string, string>();
    for (const { asset, signature } of sources) {
      const space = asset.partitions ? partitionSpace(asset.partitions, ctx) : null;
      const window = space ? observationWindow(space, ctx, now, limits) : { lo: 0, hi: 1 };
      // Dynamic keys may be removed and re-added: the range alone does not say which keys it holds.
      const due = `${signature}@${window.lo}-${window.hi}:${space && window.hi > window.lo ? space.keyAt(window.hi - 1) : ""}`;
      if (this.#ensured.get(asset.key) === due) continue;
      batch.push({ assetKey: asset.key, targets: observationTargets(asset, space, window, now) });
      ensured.set(asset.key, due);
    }
    if (batch.length === 0) return;
    await this.options.store.ensureObservationTriggers(batch, now);
    for (const [key, due] of ensured) this.#ensured.set(key, due);
  }

  /**
   * The observed sources of the current definitions, recomputed when they
   * change; then the observations of any other asset end (once per change).
   */
  async #sources(now: Date): Promise<{ asset: SnapshotAsset; signature: string }[]> {
    const { version, graph } = await this.options.graphs.current();
    if (this.#definitions?.graph !== graph) {
      const sources = graph.assets
        .filter((a) => a.kind === "source" && a.observe !== null)
        .map((asset) => ({
          asset,
          signature: JSON.stringify([asset.partitions, asset.observe, asset.pollIntervalMs, asset.observeTimeoutMs]),
        }));
      // Version 0: no definitions stored yet, which says nothing about the triggers there are.
      this.#definitions = { graph, sources, swept: version === 0 };
    }
    if (!this.#definitions.swept) {
      await this.options.store.cancelObservationsExcept(
        this.#definitions.sources.map((s) => s.asset.key),
        now,
      );
      this.#definitions.swept = true;
    }
    return this.#definitions.sources;
  }
}

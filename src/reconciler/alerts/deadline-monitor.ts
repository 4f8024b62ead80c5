import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import {
  loadPartitionContext,
  partitionSpace,
  PartitionSubset,
  type PartitionContext,
  type PartitionSpace,
  type PartitionsSpec,
} from "../../partitions/index.js";
import type { AlertStore, DeadlineCandidate, DefinitionStore, GraphCache } from "../../storage/index.js";

export interface DeadlineMonitorOptions {
  readonly store: Pick<AlertStore, "deadlineCursors" | "recordDeadlineChecks">;
  readonly graphs: Pick<GraphCache, "current">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  /** Most partitions looked at per check, over all assets (a cursor far behind catches up over several checks). */
  readonly maxPartitionsPerCheck?: number;
}

/**
 * Alerts when a partition is not materialised `deadline` after its window
 * closed (`deadline_missed`, cause `deadline:<asset>:<partition>`), per
 * partition. Incremental: each asset has a cursor (in `cursors`) saying up to
 * which instant its deadlines were checked, and a check looks only at the
 * windows whose deadline passed since — usually none or one — never at the
 * asset's history.
 *
 * - An asset seen for the first time (new, or its deadline just added)
 *   starts from now: windows whose deadline passed before are not judged.
 * - Time partitions and multi-partitions with a time dimension (every key of
 *   a closed window) are judged. Unpartitioned, static and dynamic assets
 *   have no window to measure from and are ignored.
 * - "Materialised" means the partition has a materialisation (or a reported
 *   external event / observation) by the time its deadline is checked; a
 *   partition that failed after an earlier success counts as there.
 */
export class DeadlineMonitor {
  private watched: { graph: AssetGraph; assets: SnapshotAsset[] } | undefined;
  /** Per partitions spec: the same definition with endOffset 0, whose count(t) is the number of windows closed at t. */
  private readonly closedSpecs = new WeakMap<PartitionsSpec, PartitionsSpec>();

  constructor(private readonly options: DeadlineMonitorOptions) {}

  /** Records the misses whose deadline passed since the last check; returns how many alerts were new. */
  async check(now: Date): Promise<number> {
    const assets = await this.assetsWithDeadlines();
    if (assets.length === 0) return 0;
    const cursors = await this.options.store.deadlineCursors(assets.map((a) => a.key));
    const advanced = new Map<string, Date>();
    const due: SnapshotAsset[] = [];
    for (const a of assets) {
      const until = cursors.get(a.key);
      if (!until) advanced.set(a.key, now);
      else if (until.getTime() < now.getTime()) due.push(a);
    }
    const candidates: DeadlineCandidate[] = [];
    if (due.length > 0) {
      const context = await loadPartitionContext(
        due.map((a) => a.partitions),
        (name) => this.options.definitions.listDynamicPartitions(name),
      );
      let budget = this.options.maxPartitionsPerCheck ?? 10_000;
      for (const a of due) {
        if (budget <= 0) break;
        const { until, found } = this.missesOf(a, cursors.get(a.key)!, now, budget, context);
        candidates.push(...found);
        budget -= found.length;
        advanced.set(a.key, until);
      }
    }
    if (advanced.size === 0) return 0;
    return this.options.store.recordDeadlineChecks(candidates, advanced, now);
  }

  /** The partitions of `a` whose deadline passed in (from, now], at most `budget` (whole windows), and how far that got. */
  private missesOf(
    a: SnapshotAsset,
    from: Date,
    now: Date,
    budget: number,
    context: PartitionContext,
  ): { until: Date; found: DeadlineCandidate[] } {
    const deadlineMs = a.deadlineMs!;
    const space = partitionSpace(this.closedSpec(a.partitions!), context);
    const lo = space.count(new Date(from.getTime() - deadlineMs));
    let hi = space.count(new Date(now.getTime() - deadlineMs));
    let until = now;
    if (hi - lo > budget) {
      // Stop at the end of a window, so the cursor never splits one.
      const windowEnd = space.windowAt(lo + Math.max(1, budget) - 1)!.end;
      until = new Date(windowEnd.getTime() + deadlineMs);
      hi = space.count(windowEnd);
    }
    return { until, found: candidatesOf(a, space, PartitionSubset.range(lo, hi), deadlineMs) };
  }

  private closedSpec(spec: PartitionsSpec): PartitionsSpec {
    let closed = this.closedSpecs.get(spec);
    if (!closed) {
      closed =
        spec.kind === "time"
          ? { ...spec, endOffset: 0 }
          : spec.kind === "multi"
            ? {
                ...spec,
                dimensions: spec.dimensions.map((d) =>
                  d.partitions.kind === "time" ? { ...d, partitions: { ...d.partitions, endOffset: 0 } } : d,
                ),
              }
            : spec;
      this.closedSpecs.set(spec, closed);
    }
    return closed;
  }

  private async assetsWithDeadlines(): Promise<SnapshotAsset[]> {
    const { graph } = await this.options.graphs.current();
    if (this.watched?.graph !== graph) {
      this.watched = {
        graph,
        assets: graph.assets.filter((a) => a.deadlineMs !== null && a.deadlineMs >= 0 && hasTimeWindows(a.partitions)),
      };
    }
    return this.watched.assets;
  }
}

function hasTimeWindows(spec: PartitionsSpec | null): boolean {
  if (!spec) return false;
  if (spec.kind === "time") return true;
  return spec.kind === "multi" && spec.dimensions.some((d) => d.partitions.kind === "time");
}

function candidatesOf(a: SnapshotAsset, space: PartitionSpace, subset: PartitionSubset, deadlineMs: number): DeadlineCandidate[] {
  const out: DeadlineCandidate[] = [];
  for (const i of subset) {
    const w = space.windowAt(i)!;
    out.push({
      assetKey: a.key,
      partitionKey: space.keyAt(i),
      owner: a.owner,
      windowStart: w.start.toISOString(),
      windowEnd: w.end.toISOString(),
      deadlineAt: new Date(w.end.getTime() + deadlineMs).toISOString(),
      deadlineMs,
    });
  }
  return out;
}

import { InputError, PartitionError } from "../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../graph/index.js";
import { describePartitions, PartitionSubset, specHash } from "../partitions/index.js";
import { BackfillChunks } from "./backfill-chunks.js";
import type { BackfillLayout } from "./backfill-layout.js";
import { planPartitions, type PlanRunRequest } from "./plan-run.js";
import type { MissingUpstream } from "./run-plan.js";

export interface BackfillPlanRequest extends PlanRunRequest {
  /** Most partitions of the axis per run (see BackfillChunks). */
  readonly maxPartitionsPerRun: number;
  /**
   * With `subsets` (re-running a backfill's failures): the partitions
   * definition (specHash) the original backfill was chunked by. Default: the
   * definition of the first partitioned target.
   */
  readonly axisHash?: string | null | undefined;
}

export interface BackfillPlan {
  readonly layout: BackfillLayout;
  /** Upstream partitions outside the backfill that it reads and that are not there (with includeUpstream: not materialisable). */
  readonly missing: readonly MissingUpstream[];
  /** Asset partitions to materialise. */
  readonly partitionCount: number;
  /** Runs it will take (fewer when chunks turn out empty). */
  readonly chunkCount: number;
}

/**
 * What a backfill will materialise, checked before anything is stored: the
 * selection resolved per asset exactly as for one run (see planRun and
 * resolveSelection: a daily range selects the weeks of a weekly rollup that
 * read it; a range partly outside the definition is a PartitionError naming
 * the valid range), upstream partitions outside the backfill planned too with
 * includeUpstream or reported in `missing`, and the layout the backfill is
 * cut into runs by. Works on ranges only: a year of hourly partitions of a
 * large graph costs the same as a week.
 *
 * Selected partitioned assets must be related: when two "roots" (selected
 * assets no other selected partitioned asset feeds) have different
 * definitions, one range cannot name partitions of both: PartitionError
 * BACKFILL_UNRELATED_PARTITIONS.
 */
export function planBackfill(request: BackfillPlanRequest): BackfillPlan {
  const { graph } = request;
  const m = request.maxPartitionsPerRun;
  if (!Number.isSafeInteger(m) || m < 1) {
    throw new InputError(`maxPartitionsPerRun must be a whole number of at least 1, got ${String(m)}`, {
      code: "INPUT_INVALID",
      location: { field: "maxPartitionsPerRun" },
    });
  }
  const selected = [...new Set(request.assets)].map((k) => graph.require(k));
  let axisHash: string | null;
  if (request.subsets) {
    axisHash = request.axisHash !== undefined ? request.axisHash : firstPartitionedHash(graph, [...request.subsets.keys()]);
  } else {
    const roots = selectionRoots(graph, selected);
    checkRelated(roots);
    axisHash = roots[0]?.partitions ? specHash(roots[0].partitions) : null;
  }

  const { planned, missing, ctx } = planPartitions(request);
  const targets = new Map<string, PartitionSubset>();
  for (const key of graph.topologicalOrder([...planned.keys()])) {
    const subset = planned.get(key)!;
    if (!subset.isEmpty()) targets.set(key, subset);
  }
  // Upstream partitions added by includeUpstream are paced like the selection: when they bring a definition of
  // their own at the roots of the backfill (hourly clicks under a daily selection), the one with the most
  // partitions is the axis, so a run holds maxPartitionsPerRun of them plus what they complete downstream.
  if (!request.subsets && request.includeUpstream) axisHash = upstreamAxis(graph, targets) ?? axisHash;
  const axis = [...targets.keys()].filter((k) => {
    const spec = graph.require(k).partitions;
    return spec !== null && axisHash !== null && specHash(spec) === axisHash;
  });
  const layout: BackfillLayout = { targets, axis, maxPartitionsPerRun: m };
  let partitionCount = 0;
  for (const subset of targets.values()) partitionCount += subset.count();
  const chunkCount = new BackfillChunks(graph, layout, ctx, request.now).count;
  return { layout, missing, partitionCount, chunkCount };
}

/**
 * The definition (specHash) of the backfill's partitioned roots — targets no
 * other partitioned target feeds — that has the most target partitions;
 * undefined when no root is partitioned.
 */
function upstreamAxis(graph: AssetGraph, targets: ReadonlyMap<string, PartitionSubset>): string | undefined {
  const counts = new Map<string, number>();
  for (const [key, subset] of targets) {
    const a = graph.require(key);
    if (a.partitions === null) continue;
    const fed = a.deps.some((d) => targets.has(d.assetKey) && graph.get(d.assetKey)?.partitions != null);
    if (fed) continue;
    const hash = specHash(a.partitions);
    counts.set(hash, (counts.get(hash) ?? 0) + subset.count());
  }
  let best: string | undefined;
  for (const [hash, n] of counts) if (best === undefined || n > counts.get(best)!) best = hash;
  return best;
}

/** Selected partitioned assets that no other selected partitioned asset feeds (through partitioned assets, selected or not). */
function selectionRoots(graph: AssetGraph, selected: readonly SnapshotAsset[]): SnapshotAsset[] {
  const partitioned = selected.filter((a) => a.partitions !== null && a.kind !== "source");
  const chosen = new Set(partitioned.map((a) => a.key));
  const fed = new Set<string>();
  for (const key of graph.topologicalOrder(new Set([...chosen, ...graph.ancestors(chosen)]))) {
    const a = graph.get(key)!;
    if (a.partitions === null) continue;
    const feeders = a.deps.filter((d) => {
      const up = graph.get(d.assetKey);
      return up !== undefined && up.partitions !== null && (chosen.has(up.key) || fed.has(up.key));
    });
    if (feeders.length > 0) fed.add(key);
  }
  return graph
    .topologicalOrder(chosen)
    .filter((k) => !fed.has(k))
    .map((k) => graph.get(k)!);
}

function checkRelated(roots: readonly SnapshotAsset[]): void {
  const byHash = new Map<string, SnapshotAsset>();
  for (const r of roots) {
    const hash = specHash(r.partitions!);
    if (!byHash.has(hash)) byHash.set(hash, r);
  }
  if (byHash.size <= 1) return;
  const [a, b] = [...byHash.values()] as [SnapshotAsset, SnapshotAsset];
  throw new PartitionError(
    `the selected assets have unrelated partitions definitions: "${a.key}" (${describePartitions(a.partitions!)}) and ` +
      `"${b.key}" (${describePartitions(b.partitions!)}); neither reads the other through its dependencies, so one partition ` +
      `range cannot name partitions of both. Backfill them separately, or select assets connected by dependencies ` +
      `(a downstream asset with another definition gets the partitions that read the range, e.g. the weeks of a daily range)`,
    { code: "BACKFILL_UNRELATED_PARTITIONS", location: { assetKey: b.key } },
  );
}

function firstPartitionedHash(graph: AssetGraph, keys: readonly string[]): string | null {
  for (const key of graph.topologicalOrder(keys)) {
    const spec = graph.require(key).partitions;
    if (spec !== null) return specHash(spec);
  }
  return null;
}

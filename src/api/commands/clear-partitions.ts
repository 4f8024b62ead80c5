import { localGuard, type Guard } from "../../access/index.js";
import { openRange, type PartitionRequest } from "./partition-request.js";
import { planScope } from "./plan-scope.js";
import { InputError, PartitionError } from "../../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import {
  downstreamPartitions,
  loadPartitionContext,
  partitionSpace,
  PartitionSubset,
  UNPARTITIONED,
  upstreamPartitions,
  type PartitionContext,
} from "../../partitions/index.js";
import {
  dimensionSliceKeys,
  plannedRun,
  planRun,
  resolveSelection,
  type MissingUpstream,
  type PartitionSelection,
  type PlannedRunOptions,
  type PlannedStep,
  type RunPlan,
} from "../../planner/index.js";
import type { DefinitionStore, RunOrigin, RunStore } from "../../storage/index.js";
import { materializedSubsets, missingUpstreamError } from "./launch-run.js";

const SAMPLE_SIZE = 5;

export interface ClearPartitionsRequest extends PartitionRequest {
  readonly assetKey: string;
  /** Also clear every downstream asset's partitions that read the cleared ones, transitively. */
  readonly downstream?: boolean | undefined;
  /** Keep only the selected partitions whose status is `failed` (without a selection: all failed partitions). */
  readonly onlyFailed?: boolean | undefined;
}

/** What planning a clear reads (nothing is written). */
export interface ClearPlanServices {
  readonly graphs: { current(options?: { fresh?: boolean }): Promise<{ readonly version: number; readonly graph: AssetGraph }> };
  readonly runs: Pick<RunStore, "materializedKeys" | "partitionKeysWithStatus">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
}

export interface ClearServices extends ClearPlanServices {
  readonly runs: Pick<RunStore, "createRun" | "materializedKeys" | "partitionKeysWithStatus">;
}

export interface ClearedAsset {
  readonly assetKey: string;
  readonly count: number;
  /** The first few cleared partition keys ("" for an unpartitioned asset). */
  readonly sample: readonly string[];
}

export interface ClearedRun {
  readonly runId: string;
  readonly steps: number;
  readonly cleared: readonly ClearedAsset[];
  readonly plan: RunPlan;
}

/**
 * Clear and rerun: the chosen partitions of one asset (with `downstream`, also
 * every downstream partition that reads them, through the dependency
 * mappings, transitively) are materialised again by ONE run of origin
 * `rerun`. Upstream results stay: partitions outside the cleared set are read
 * from their latest materialisation, and must be materialised (otherwise
 * PLAN_MISSING_UPSTREAM). Nothing is deleted; the rerun overwrites.
 *
 * Planning: the cleared set is an explicit subset per asset, which one
 * planRun selection cannot express (a selection is one set of keys, applied
 * to same-definition assets as given, e.g. it would rerun the cleared days of
 * a daily asset that reads a weekly rollup instead of the whole affected
 * week). So each cleared asset is planned on its own (planRun: validation,
 * missing-upstream check, with the other cleared partitions counted as
 * satisfied) and the plans are joined here, adding the edges between cleared
 * partitions through the dependency mappings (upstreamPartitions).
 *
 * Errors: GraphError GRAPH_UNKNOWN_ASSET; PartitionError for a key or range
 * that does not fit the definition (naming the asset and the valid range);
 * InputError CLEAR_NOTHING when nothing is selected (e.g. onlyFailed and no
 * partition failed). No run is created on any error.
 */
export async function clearPartitions(
  services: ClearServices,
  request: ClearPartitionsRequest,
  now: Date,
  guard: Guard = localGuard(),
): Promise<ClearedRun> {
  const planned = await planClear(services, request, now);
  const audit = await guard.authorize("clearPartitions", "operator", planScope(planned.plan));
  const { runId } = await services.runs.createRun(plannedRun(planned.graph, planned.plan, rerunOptions(planned)), now, audit);
  return clearedRun(runId, planned);
}

/** What a clear would rerun, planned but not written: the one selection path of {@link clearPartitions}. */
export interface ClearPlan {
  /** The asset whose partitions were chosen. */
  readonly assetKey: string;
  readonly graph: AssetGraph;
  readonly plan: RunPlan;
  readonly cleared: readonly ClearedAsset[];
}

/**
 * Plans a clear without writing anything: the same selection, validation and
 * errors as {@link clearPartitions} (which is this plus creating the rerun),
 * so a preview (Airflow's dry_run) and the clear itself cannot disagree.
 */
export async function planClear(services: ClearPlanServices, request: ClearPartitionsRequest, now: Date): Promise<ClearPlan> {
  if (!request.assetKey) throw new InputError("name the asset whose partitions to clear", { code: "PLAN_SELECTION_EMPTY" });
  if (request.partition !== undefined && (request.from !== undefined || request.to !== undefined)) {
    throw new InputError("give either a partition or a range (from/to), not both");
  }
  if (request.dimensions !== undefined && (request.partition !== undefined || request.from !== undefined || request.to !== undefined)) {
    throw new InputError("give either a selection per dimension (dimensions) or a partition or a range (from/to), not both", {
      location: { field: "dimensions" },
    });
  }
  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const root = graph.require(request.assetKey);
  if (root.kind === "source") {
    throw new InputError(`"${root.key}" is a source asset: Tributary observes it, it never materialises it, so there is nothing to clear`, {
      code: "PLAN_SOURCE_ASSET",
      location: { assetKey: root.key },
    });
  }
  const targets = request.downstream ? graph.topologicalOrder([root.key, ...graph.descendants(root.key)]) : [root.key];
  const involved = [...new Set([...graph.ancestors(targets), ...targets])].map((k) => graph.require(k));
  const ctx = await loadPartitionContext(
    involved.map((a) => a.partitions),
    (name) => services.definitions.listDynamicPartitions(name),
  );

  // The cleared partitions of each asset: the root's selection, then what reads them.
  const cleared = new Map<string, PartitionSubset>();
  const rootSubset = await selectRoot(services, root, request, graph, ctx, now);
  if (rootSubset.isEmpty()) {
    const what = request.onlyFailed ? "none of the selected partitions has failed" : "the selection is empty";
    throw new InputError(`nothing to clear for "${root.key}": ${what}; no run was created`, {
      code: "CLEAR_NOTHING",
      location: { assetKey: root.key },
    });
  }
  cleared.set(root.key, rootSubset);
  for (const key of targets) {
    if (key === root.key) continue;
    const a = graph.get(key)!;
    if (a.kind === "source") continue;
    let subset = PartitionSubset.EMPTY;
    for (const dep of a.deps) {
      const upSubset = cleared.get(dep.assetKey);
      if (!upSubset) continue;
      const up = graph.get(dep.assetKey)!;
      subset = subset.union(downstreamPartitions(up.partitions, a.partitions, dep.mapping, upSubset, ctx, now));
    }
    if (!subset.isEmpty()) cleared.set(key, subset);
  }

  const materialized = await materializedSubsets(services.runs, involved, ctx);
  const satisfied = (key: string): PartitionSubset => {
    const m = materialized.get(key) ?? PartitionSubset.EMPTY;
    const c = cleared.get(key);
    return c ? m.union(c) : m;
  };
  const plan = joinPlans(graph, version, cleared, satisfied, ctx, now);
  if (plan.missing.length > 0) {
    throw missingUpstreamError(plan.missing, "materialise them first (`tributary materialize`), then clear again");
  }
  const summary: ClearedAsset[] = [];
  for (const key of graph.topologicalOrder([...cleared.keys()])) {
    const a = graph.get(key)!;
    const subset = cleared.get(key)!;
    summary.push({
      assetKey: key,
      count: subset.count(),
      sample: a.partitions ? [...partitionSpace(a.partitions, ctx).keys(subset.take(SAMPLE_SIZE))] : [""],
    });
  }
  return { assetKey: root.key, graph, plan, cleared: summary };
}

/**
 * Creates the reruns of several planned clears in ONE transaction: all of
 * them, or (on any error) none. Plan them all first with {@link planClear},
 * so bad input fails before anything is written.
 */
export async function createClearRuns(
  runs: Pick<RunStore, "createRuns">,
  plans: readonly ClearPlan[],
  now: Date,
  guard: Guard = localGuard(),
): Promise<ClearedRun[]> {
  const audit = await guard.authorize("clearTaskInstances", "operator", planScope(plans.flatMap((p) => p.plan.steps)));
  const created = await runs.createRuns(
    plans.map((p) => plannedRun(p.graph, p.plan, rerunOptions(p))),
    now,
    audit,
  );
  return plans.map((p, i) => clearedRun(created[i]!.runId, p));
}

function rerunOptions(planned: ClearPlan): PlannedRunOptions<RunOrigin> {
  return { origin: "rerun", tags: { "tributary/cleared": planned.assetKey } };
}

function clearedRun(runId: string, planned: ClearPlan): ClearedRun {
  return { runId, steps: planned.plan.steps.length, cleared: planned.cleared, plan: planned.plan };
}

/** The root asset's selected partitions, validated by the planner's selection rules; with onlyFailed, the failed ones among them. */
async function selectRoot(
  services: ClearPlanServices,
  root: SnapshotAsset,
  request: ClearPartitionsRequest,
  graph: AssetGraph,
  ctx: PartitionContext,
  now: Date,
): Promise<PartitionSubset> {
  const hasSelection = request.partition !== undefined || request.from !== undefined || request.to !== undefined;
  let subset: PartitionSubset;
  if (request.dimensions !== undefined) {
    // Validated against the root's dimensions first: an unpartitioned root is named there too.
    const keys = dimensionSliceKeys(root, request.dimensions, ctx, now);
    subset = resolveSelection({ graph, selected: [root], selection: { kind: "keys", keys }, ctx, now }).get(root.key)!;
    if (request.onlyFailed) {
      const space = partitionSpace(root.partitions!, ctx);
      subset = subset.intersection(
        space.subset((await services.runs.partitionKeysWithStatus(root.key, "failed")).filter((k) => space.has(k))),
      );
    }
    return subset;
  }
  if (!root.partitions) {
    if (hasSelection) {
      throw new PartitionError(`asset "${root.key}" is not partitioned: leave out partition, from and to`, {
        code: "PARTITION_SELECTION_INVALID",
        location: { assetKey: root.key },
      });
    }
    subset = UNPARTITIONED;
  } else {
    const space = partitionSpace(root.partitions, ctx);
    let selection: PartitionSelection;
    if (request.partition !== undefined) selection = { kind: "keys", keys: [request.partition] };
    else if (hasSelection) selection = openRange(root.key, space, request, now);
    else if (request.onlyFailed) selection = { kind: "all" };
    else {
      throw new PartitionError(
        `asset "${root.key}" is partitioned: choose the partitions to clear (a partition, or a range from–to), or clear only the failed ones`,
        { code: "PARTITION_SELECTION_REQUIRED", location: { assetKey: root.key } },
      );
    }
    // The planner's own resolution: a key or range outside the definition is a PartitionError naming the valid range.
    subset = resolveSelection({ graph, selected: [root], selection, ctx, now }).get(root.key)!;
    if (request.onlyFailed) {
      const failed = (await services.runs.partitionKeysWithStatus(root.key, "failed")).filter((k) => space.has(k));
      subset = subset.intersection(space.subset(failed));
    }
    return subset;
  }
  if (request.onlyFailed) {
    const failed = await services.runs.partitionKeysWithStatus(root.key, "failed");
    if (!failed.includes("")) subset = PartitionSubset.EMPTY;
  }
  return subset;
}

/**
 * One plan over explicit per-asset subsets: each asset planned on its own
 * (the other cleared partitions count as materialised), joined in
 * topological order with the edges between cleared partitions.
 */
function joinPlans(
  graph: AssetGraph,
  version: number,
  cleared: ReadonlyMap<string, PartitionSubset>,
  satisfied: (key: string) => PartitionSubset,
  ctx: PartitionContext,
  now: Date,
): RunPlan {
  const steps: PlannedStep[] = [];
  const missing: MissingUpstream[] = [];
  /** asset → partition index → step index */
  const located = new Map<string, Map<number, number>>();
  for (const key of graph.topologicalOrder([...cleared.keys()])) {
    const a = graph.get(key)!;
    const subset = cleared.get(key)!;
    const part = planRun({
      graph,
      version,
      assets: [key],
      partitions: a.partitions ? { kind: "keys", keys: [...partitionSpace(a.partitions, ctx).keys(subset)] } : undefined,
      now,
      dynamicKeys: ctx.dynamicKeys,
      materialized: satisfied,
      includeUpstream: false,
    });
    missing.push(...part.missing);
    const indices = [...subset];
    if (part.steps.length !== indices.length)
      throw new Error(`clear: planned ${part.steps.length} step(s) for "${key}", expected ${indices.length}`);
    const deps = a.deps.flatMap((dep) => {
      const at = located.get(dep.assetKey);
      return at ? [{ dep, up: graph.get(dep.assetKey)!, at, upCleared: cleared.get(dep.assetKey)! }] : [];
    });
    const own = new Map<number, number>();
    part.steps.forEach((s, i) => {
      const partition = indices[i]!;
      const upstream = new Set<number>();
      for (const { dep, up, at, upCleared } of deps) {
        const own = a.partitions ? PartitionSubset.single(partition) : UNPARTITIONED;
        const read = upstreamPartitions(a.partitions, up.partitions, dep.mapping, own, ctx, now).subset.intersection(upCleared);
        for (const p of read) upstream.add(at.get(p)!);
      }
      own.set(partition, steps.length);
      steps.push({ index: steps.length, assetKey: key, partitionKey: s.partitionKey, upstream: [...upstream].sort((x, y) => x - y) });
    });
    located.set(key, own);
  }
  return { version, steps, missing };
}

import { localGuard, type Guard } from "../../access/index.js";
import { openRange, type PartitionRequest } from "./partition-request.js";
import { planScope } from "./plan-scope.js";
import { InputError, PartitionError } from "../../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace, PartitionSubset, UNPARTITIONED, type PartitionContext } from "../../partitions/index.js";
import { dimensionSliceKeys, plannedRun, planRun, type PartitionSelection, type RunPlan } from "../../planner/index.js";
import type { DefinitionStore, GraphCache, RunOrigin, RunStore } from "../../storage/index.js";

export interface LaunchRunRequest extends PartitionRequest {
  readonly assetKeys: readonly string[];
  /** …or every existing partition. */
  readonly allPartitions?: boolean | undefined;
  readonly includeUpstream?: boolean | undefined;
  /** At most this many steps of the run queued or running at once. */
  readonly maxActiveSteps?: number | undefined;
  readonly origin?: RunOrigin | undefined;
  readonly priority?: number | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
}

export interface LaunchServices {
  readonly graphs: GraphCache;
  readonly runs: RunStore;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  /** Executors nothing here can run, with why and what to do (e.g. bullmq without Redis): a run needing one is refused. */
  readonly unavailableExecutors?: ReadonlyMap<string, string> | undefined;
}

export interface LaunchedRun {
  readonly runId: string;
  readonly steps: number;
  readonly plan: RunPlan;
}

/**
 * Plans and creates a run: the selected partitions of the selected assets,
 * with upstream partitions outside the run satisfied by their latest
 * materialisation (or planned too with includeUpstream).
 */
export async function launchRun(
  services: LaunchServices,
  request: LaunchRunRequest,
  now: Date,
  guard: Guard = localGuard(),
): Promise<LaunchedRun> {
  if (request.assetKeys.length === 0) throw new InputError("name at least one asset to materialise", { code: "PLAN_SELECTION_EMPTY" });
  if (request.partition !== undefined && (request.from !== undefined || request.to !== undefined)) {
    throw new InputError("give either a partition or a range (from/to), not both");
  }
  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const selected = request.assetKeys.map((k) => graph.require(k));
  const involved = [...graph.ancestors(request.assetKeys), ...request.assetKeys].map((k) => graph.require(k));
  const ctx = await loadPartitionContext(
    involved.map((a) => a.partitions),
    (name) => services.definitions.listDynamicPartitions(name),
  );

  const materialized = await materializedSubsets(services.runs, involved, ctx);

  const plan = planRun({
    graph,
    version,
    assets: request.assetKeys,
    partitions: selectionOf(request, selected, ctx, now),
    now,
    dynamicKeys: ctx.dynamicKeys,
    materialized: (key) => materialized.get(key) ?? PartitionSubset.EMPTY,
    includeUpstream: request.includeUpstream ?? false,
  });
  if (plan.missing.length > 0) {
    throw missingUpstreamError(
      plan.missing,
      "materialise them first, or pass --include-upstream (includeUpstream: true) to plan them into this run",
    );
  }
  refuseUnavailableExecutors(graph, plan, services.unavailableExecutors);
  const audit = await guard.authorize("launchRun", "operator", planScope(plan));
  const { runId } = await services.runs.createRun(
    plannedRun(graph, plan, {
      origin: request.origin ?? "manual",
      priority: request.priority,
      tags: request.tags,
      maxActiveSteps: request.maxActiveSteps,
    }),
    now,
    audit,
  );
  return { runId, steps: plan.steps.length, plan };
}

/** The materialised partitions of each asset, as subsets of its current partition space. */
export async function materializedSubsets(
  runs: Pick<RunStore, "materializedKeys">,
  assets: readonly SnapshotAsset[],
  ctx: PartitionContext | undefined,
): Promise<Map<string, PartitionSubset>> {
  const materializedKeys = await runs.materializedKeys(assets.map((a) => a.key));
  const materialized = new Map<string, PartitionSubset>();
  for (const a of assets) {
    const keys = materializedKeys.get(a.key) ?? [];
    if (!a.partitions) materialized.set(a.key, keys.length > 0 ? UNPARTITIONED : PartitionSubset.EMPTY);
    else {
      const space = partitionSpace(a.partitions, ctx);
      // Keys that no longer fit the definition (it changed) are simply not materialised any more.
      materialized.set(a.key, space.subset(keys.filter((k) => space.has(k))));
    }
  }
  return materialized;
}

/** PLAN_MISSING_UPSTREAM: which upstream partitions a plan reads that are not there, and what to do about it. */
export function missingUpstreamError(missing: RunPlan["missing"], hint: string): InputError {
  const lines = missing.map(
    (m) =>
      (m.reason === "not_existing"
        ? `  ${m.detail}`
        : `  "${m.assetKey}" (read by "${m.neededBy}"): ${m.count} partition(s) not materialised`) +
      (m.sample.length
        ? `, e.g. ${m.sample
            .slice(0, 3)
            .map((s) => `"${s}"`)
            .join(", ")}`
        : ""),
  );
  // Materialising first cannot help with partitions that do not exist: say only what can.
  const advice = missing.some((m) => m.reason === "not_materialized")
    ? hint
    : "no run can make partitions that do not exist: wait for windows that have not closed, and pick partitions whose upstream partitions are defined";
  return new InputError(`the run would read upstream partitions that are not there:\n${lines.join("\n")}\n${advice}`, {
    code: "PLAN_MISSING_UPSTREAM",
  });
}

function selectionOf(
  request: LaunchRunRequest,
  selected: readonly SnapshotAsset[],
  ctx: PartitionContext,
  now: Date,
): PartitionSelection | undefined {
  if (request.dimensions !== undefined) {
    if (request.allPartitions || request.partition !== undefined || request.from !== undefined || request.to !== undefined) {
      throw new InputError(
        "give either a selection per dimension (dimensions) or a partition, a range (from/to) or all partitions, not both",
        {
          location: { field: "dimensions" },
        },
      );
    }
    return { kind: "keys", keys: dimensionSliceKeys(sliceRoot(selected), request.dimensions, ctx, now) };
  }
  if (request.allPartitions) return { kind: "all" };
  if (request.partition !== undefined) return { kind: "keys", keys: [request.partition] };
  if (request.from === undefined && request.to === undefined) return undefined;
  // An open end means the first / the latest existing partition of the first partitioned asset.
  const first = selected.find((a) => a.partitions);
  if (!first?.partitions) throw new PartitionError("a partition range was given, but none of the selected assets is partitioned");
  return openRange(first.key, partitionSpace(first.partitions, ctx), request, now);
}

/** The asset a selection per dimension is read in: the first multi-partitioned one selected (else the first, for the error). */
export function sliceRoot(selected: readonly SnapshotAsset[]): SnapshotAsset {
  return selected.find((a) => a.partitions?.kind === "multi") ?? selected.find((a) => a.partitions) ?? selected[0]!;
}

/**
 * EXECUTOR_UNAVAILABLE when a planned step's asset names an executor that
 * cannot run here: its steps would wait for ever, without a word.
 */
export function refuseUnavailableExecutors(graph: AssetGraph, plan: RunPlan, unavailable: ReadonlyMap<string, string> | undefined): void {
  if (!unavailable || unavailable.size === 0) return;
  const byExecutor = new Map<string, Set<string>>();
  for (const step of plan.steps) {
    const executor = graph.require(step.assetKey).executor;
    if (unavailable.has(executor)) byExecutor.set(executor, (byExecutor.get(executor) ?? new Set()).add(step.assetKey));
  }
  const [first] = byExecutor;
  if (!first) return;
  const [executor, assets] = first;
  const names = [...assets].map((k) => `"${k}"`).join(", ");
  throw new InputError(
    `${names} ${assets.size === 1 ? "runs" : "run"} on executor "${executor}", which cannot run here: ${unavailable.get(executor)}; nothing was launched`,
    {
      code: "EXECUTOR_UNAVAILABLE",
      location: { assetKey: [...assets][0]! },
    },
  );
}

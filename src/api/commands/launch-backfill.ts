import { localGuard, type Guard } from "../../access/index.js";
import { backfillScope } from "./plan-scope.js";
import { InputError, PartitionError } from "../../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import {
  loadPartitionContext,
  partitionSpace,
  PartitionSubset,
  specHash,
  UNPARTITIONED,
  type PartitionContext,
} from "../../partitions/index.js";
import {
  dimensionSliceKeys,
  parseLayout,
  planBackfill,
  serializeLayout,
  type BackfillPlanRequest,
  type DimensionSlice,
  type PartitionSelection,
} from "../../planner/index.js";
import type { BackfillRecord, BackfillSelection, BackfillStore, DefinitionStore, GraphCache, RunStore } from "../../storage/index.js";
import { materializedSubsets, missingUpstreamError, sliceRoot } from "./launch-run.js";

/** Below scheduled and manual work (priority 0): the claim's aging share still gives backfill steps a turn. */
export const DEFAULT_BACKFILL_PRIORITY = -10;
export const MAX_CONCURRENT_RUNS_LIMIT = 1_000;

export interface LaunchBackfillRequest {
  readonly assetKeys: readonly string[];
  /** An inclusive range in the selection roots' partitions (either end may be omitted: the first / latest existing one)… */
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  /** …or a list of partition keys… */
  readonly partitions?: readonly string[] | undefined;
  /** …or every existing partition… */
  readonly allPartitions?: boolean | undefined;
  /** …or keys or a range per dimension of a multi-partitioned asset (left out: all its keys), as their cross product… */
  readonly dimensions?: readonly DimensionSlice[] | undefined;
  /**
   * …or explicit partition keys per asset, each in that asset's own
   * definition ([''] or [] for an unpartitioned one): exactly the assets of
   * `assetKeys`, e.g. the `backfill` selection of an erasureImpact answer.
   */
  readonly assetPartitions?: readonly { readonly assetKey: string; readonly partitionKeys: readonly string[] }[] | undefined;
  /** Add the upstream partitions the selection reads and that are not materialised (otherwise an error). */
  readonly includeUpstream?: boolean | undefined;
  /** Runs in flight at once (default 1). */
  readonly maxConcurrentRuns?: number | undefined;
  /** Partitions of the selection per run (default 1; e.g. 365 for one big run). */
  readonly maxPartitionsPerRun?: number | undefined;
  /** Added to every step's priority (default -10: below scheduled work). */
  readonly priority?: number | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
}

export interface BackfillServices {
  readonly graphs: Pick<GraphCache, "current">;
  readonly runs: Pick<RunStore, "materializedKeys">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  readonly backfills: Pick<BackfillStore, "create" | "get">;
}

/**
 * Launches a backfill: checks the whole request (assets, partitions, the
 * upstream partitions it reads) and stores it; the reconcilers then run it as
 * a paced series of runs, oldest partitions first (see BackfillChunks and the
 * reconciler's BackfillTask). Nothing is stored when anything is wrong:
 * GraphError GRAPH_UNKNOWN_ASSET (with the nearest key), PartitionError for a
 * range partly outside a definition (naming the valid range) or for
 * unrelated partitions definitions (BACKFILL_UNRELATED_PARTITIONS),
 * InputError PLAN_MISSING_UPSTREAM for upstream partitions outside the
 * backfill that are not materialised, INPUT_INVALID for bad numbers.
 */
export async function launchBackfill(
  services: BackfillServices,
  request: LaunchBackfillRequest,
  now: Date,
  guard: Guard = localGuard(),
): Promise<BackfillRecord> {
  const checked = await checkBackfill(services, request, now);
  const { plan, graph, version } = checked;
  const audit = await guard.authorize(
    "launchBackfill",
    "operator",
    backfillScope(plan.layout.targets.keys(), plan.partitionCount, request),
  );
  const selection: BackfillSelection = {
    assetKeys: [...request.assetKeys],
    ...(request.from !== undefined ? { from: request.from } : {}),
    ...(request.to !== undefined ? { to: request.to } : {}),
    ...(request.partitions !== undefined ? { partitions: [...request.partitions] } : {}),
    ...(request.allPartitions ? { allPartitions: true } : {}),
    ...(request.dimensions !== undefined ? { dimensions: request.dimensions.map((d) => ({ ...d })) } : {}),
    includeUpstream: request.includeUpstream ?? false,
  };
  return services.backfills.create(
    {
      selection,
      partitions: serializeLayout(plan.layout, graph, version),
      maxConcurrentRuns: checked.maxConcurrentRuns,
      maxPartitionsPerRun: checked.maxPartitionsPerRun,
      priority: checked.priority,
      requested: plan.partitionCount,
      chunks: plan.chunkCount,
      tags: request.tags ?? {},
    },
    now,
    audit,
  );
}

/** What a backfill request would create, without storing anything (see previewBackfill). */
export interface BackfillPreview {
  /** Asset partitions it would materialise (upstream ones added by includeUpstream included). */
  readonly partitions: number;
  /** Runs it would be cut into (fewer when chunks turn out empty or are covered by then). */
  readonly runs: number;
  /** Per asset, in dependency order: how many of its partitions and the first / last key ('' when unpartitioned). */
  readonly perAsset: readonly {
    readonly assetKey: string;
    readonly partitions: number;
    readonly firstKey: string;
    readonly lastKey: string;
  }[];
  readonly maxPartitionsPerRun: number;
  readonly maxConcurrentRuns: number;
  readonly priority: number;
  /** The definitions version it was planned against. */
  readonly definitionsVersion: number;
}

/**
 * What launchBackfill would create for this request — the same checks, in the
 * same code path, throwing the same errors — without storing anything: for
 * a launch dialog's preview.
 */
export async function previewBackfill(
  services: Omit<BackfillServices, "backfills">,
  request: LaunchBackfillRequest,
  now: Date,
): Promise<BackfillPreview> {
  const { plan, graph, version, ctx, maxConcurrentRuns, maxPartitionsPerRun, priority } = await checkBackfill(services, request, now);
  const perAsset = [...plan.layout.targets].map(([assetKey, subset]) => {
    const spec = graph.require(assetKey).partitions;
    if (spec === null) return { assetKey, partitions: subset.count(), firstKey: "", lastKey: "" };
    const space = partitionSpace(spec, ctx);
    const first = subset.first();
    const last = subset.last();
    return {
      assetKey,
      partitions: subset.count(),
      firstKey: first !== undefined ? space.keyAt(first) : "",
      lastKey: last !== undefined ? space.keyAt(last) : "",
    };
  });
  return {
    partitions: plan.partitionCount,
    runs: plan.chunkCount,
    perAsset,
    maxPartitionsPerRun,
    maxConcurrentRuns,
    priority,
    definitionsVersion: version,
  };
}

/**
 * The checks of a backfill request, shared by launchBackfill and
 * previewBackfill: its numbers, its assets and partitions, and the upstream
 * partitions it reads; the plan it would run.
 */
async function checkBackfill(services: Omit<BackfillServices, "backfills">, request: LaunchBackfillRequest, now: Date) {
  if (request.assetKeys.length === 0) throw new InputError("name at least one asset to backfill", { code: "PLAN_SELECTION_EMPTY" });
  const ways = [
    request.partitions !== undefined,
    request.from !== undefined || request.to !== undefined,
    request.allPartitions === true,
    request.assetPartitions !== undefined,
    request.dimensions !== undefined,
  ];
  if (ways.filter(Boolean).length > 1) {
    throw new InputError(
      "give one of: a range (from/to), a list of partitions, all partitions, a selection per dimension (dimensions), or partitions per asset (assetPartitions)",
      {
        location: { field: "partitions" },
      },
    );
  }
  const maxConcurrentRuns = checkCount(request.maxConcurrentRuns ?? 1, "maxConcurrentRuns", MAX_CONCURRENT_RUNS_LIMIT);
  const maxPartitionsPerRun = checkCount(request.maxPartitionsPerRun ?? 1, "maxPartitionsPerRun", Number.MAX_SAFE_INTEGER);
  const priority = request.priority ?? DEFAULT_BACKFILL_PRIORITY;
  if (!Number.isSafeInteger(priority))
    throw new InputError(`priority must be a whole number, got ${priority}`, { location: { field: "priority" } });

  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const selected = graph.topologicalOrder(request.assetKeys).map((k) => graph.require(k));
  const { ctx, materialized } = await prefetch(
    services,
    graph,
    selected.map((a) => a.key),
  );
  const plan = planBackfill({
    graph,
    version,
    assets: request.assetKeys,
    ...(request.assetPartitions !== undefined
      ? { subsets: perAssetSubsets(request.assetKeys, request.assetPartitions, graph, ctx, now) }
      : { partitions: selectionOf(request, selected, ctx, now) }),
    now,
    dynamicKeys: ctx.dynamicKeys,
    materialized: (key) => materialized.get(key) ?? PartitionSubset.EMPTY,
    includeUpstream: request.includeUpstream ?? false,
    maxPartitionsPerRun,
  });
  if (plan.missing.length > 0) {
    throw missingUpstreamError(
      plan.missing,
      "materialise them first, or pass --include-upstream (includeUpstream: true) to add them to the backfill",
    );
  }
  return { plan, graph, version, ctx, maxConcurrentRuns, maxPartitionsPerRun, priority };
}

/**
 * Re-runs only the failed partitions of an ended backfill, as a NEW backfill
 * (tagged `tributary/retry-of`, same pacing and priority): the original
 * keeps its history and counts. Failed partitions are the steps that failed
 * (or were blocked by a failed upstream partition, or canceled on their own)
 * in its runs; a canceled backfill's unfinished chunks are resumed, not
 * retried. InputError BACKFILL_ACTIVE while the original is still active,
 * BACKFILL_NOTHING_FAILED when nothing failed; PartitionError
 * BACKFILL_DEFINITIONS_CHANGED when its assets' partitions changed since.
 */
export async function retryBackfillFailures(
  services: BackfillServices,
  id: string,
  now: Date,
  guard: Guard = localGuard(),
): Promise<BackfillRecord> {
  const original = await services.backfills.get(id);
  if (!original)
    throw new InputError(`no backfill has the id "${id}"; list backfills with \`tributary backfills\``, { code: "BACKFILL_NOT_FOUND" });
  if (original.status === "requested" || original.status === "running" || original.status === "canceling") {
    throw new InputError(`backfill ${id} is still ${original.status}: re-run its failures once it has ended (or cancel it first)`, {
      code: "BACKFILL_ACTIVE",
    });
  }
  const { version, graph } = await services.graphs.current({ fresh: true });
  const layout = parseLayout(original.partitions, original.maxPartitionsPerRun, graph);
  const subsets = new Map<string, PartitionSubset>();
  for (const key of graph.topologicalOrder(Object.keys(original.cursor.failedPartitions).filter((k) => layout.targets.has(k)))) {
    const failed = PartitionSubset.parse(original.cursor.failedPartitions[key]!).intersection(layout.targets.get(key)!);
    if (!failed.isEmpty()) subsets.set(key, failed);
  }
  if (subsets.size === 0) {
    throw new InputError(
      `backfill ${id} has no failed partitions to re-run (it ${original.status === "canceled" ? "was canceled: resume it instead" : original.status})`,
      {
        code: "BACKFILL_NOTHING_FAILED",
      },
    );
  }
  const { ctx, materialized } = await prefetch(services, graph, [...subsets.keys()]);
  const axisKey = layout.axis.find((k) => graph.get(k)?.partitions);
  const request: BackfillPlanRequest = {
    graph,
    version,
    assets: [...subsets.keys()],
    subsets,
    now,
    dynamicKeys: ctx.dynamicKeys,
    materialized: (key) => materialized.get(key) ?? PartitionSubset.EMPTY,
    includeUpstream: false,
    maxPartitionsPerRun: original.maxPartitionsPerRun,
    axisHash: axisKey ? specHash(graph.require(axisKey).partitions!) : null,
  };
  const plan = planBackfill(request);
  if (plan.missing.length > 0) throw missingUpstreamError(plan.missing, "materialise them first, then re-run the failures again");
  const audit = await guard.authorize(
    "retryBackfillFailures",
    "operator",
    backfillScope(subsets.keys(), plan.partitionCount, { retryOf: id }),
  );
  return services.backfills.create(
    {
      selection: { assetKeys: [...subsets.keys()], includeUpstream: false, retryOf: id },
      partitions: serializeLayout(plan.layout, graph, version),
      maxConcurrentRuns: original.maxConcurrentRuns,
      maxPartitionsPerRun: original.maxPartitionsPerRun,
      priority: original.priority,
      requested: plan.partitionCount,
      chunks: plan.chunkCount,
      tags: { ...stringTags(original.tags), "tributary/retry-of": id },
    },
    now,
    audit,
  );
}

/** Per asset, the failed partitions of a backfill as key ranges (for people): `[{ from, to }]`. */
export function failedPartitionRanges(
  record: BackfillRecord,
  graph: AssetGraph,
  ctx?: PartitionContext,
): { assetKey: string; count: number; ranges: { from: string; to: string }[] }[] {
  const out: { assetKey: string; count: number; ranges: { from: string; to: string }[] }[] = [];
  for (const [assetKey, text] of Object.entries(record.cursor.failedPartitions)) {
    const subset = PartitionSubset.parse(text);
    const spec = graph.get(assetKey)?.partitions ?? null;
    const ranges: { from: string; to: string }[] = [];
    if (spec === null) ranges.push({ from: "", to: "" });
    else {
      const space = partitionSpace(spec, ctx);
      for (const [start, end] of subset.ranges()) {
        if (end > space.size) continue;
        ranges.push({ from: space.keyAt(start), to: space.keyAt(end - 1) });
      }
    }
    out.push({ assetKey, count: subset.count(), ranges });
  }
  return out;
}

async function prefetch(services: Omit<BackfillServices, "backfills">, graph: AssetGraph, keys: readonly string[]) {
  const involved = [...new Set([...graph.ancestors(keys), ...keys])].map((k) => graph.require(k));
  const ctx = await loadPartitionContext(
    involved.map((a) => a.partitions),
    (name) => services.definitions.listDynamicPartitions(name),
  );
  const materialized = await materializedSubsets(services.runs, involved, ctx);
  return { ctx, materialized };
}

function selectionOf(
  request: LaunchBackfillRequest,
  selected: readonly SnapshotAsset[],
  ctx: PartitionContext,
  now: Date,
): PartitionSelection | undefined {
  if (request.dimensions !== undefined)
    return { kind: "keys", keys: dimensionSliceKeys(sliceRoot(selected), request.dimensions, ctx, now) };
  if (request.allPartitions) return { kind: "all" };
  if (request.partitions !== undefined) return { kind: "keys", keys: request.partitions };
  if (request.from === undefined && request.to === undefined) return undefined;
  // An open end: the first / latest existing partition of the first partitioned asset (a root of the selection).
  const first = selected.find((a) => a.partitions);
  if (!first?.partitions)
    throw new PartitionError("a partition range was given, but none of the selected assets is partitioned", {
      code: "PARTITION_SELECTION_INVALID",
    });
  const space = partitionSpace(first.partitions, ctx);
  const count = space.count(now);
  if (count === 0)
    throw new PartitionError(`asset "${first.key}" has no partitions yet (${space.describe()})`, { code: "PARTITION_NOT_EXISTING" });
  return { kind: "range", from: request.from ?? space.keyAt(0), to: request.to ?? space.keyAt(count - 1) };
}

/**
 * `assetPartitions` as subsets: each asset of the backfill named once, each
 * key one of its existing partitions (PartitionError naming the asset and key).
 */
function perAssetSubsets(
  assetKeys: readonly string[],
  groups: NonNullable<LaunchBackfillRequest["assetPartitions"]>,
  graph: AssetGraph,
  ctx: PartitionContext,
  now: Date,
): Map<string, PartitionSubset> {
  const subsets = new Map<string, PartitionSubset>();
  for (const { assetKey, partitionKeys } of groups) {
    const location = { assetKey, field: "assetPartitions" };
    if (!assetKeys.includes(assetKey)) {
      throw new InputError(`assetPartitions names "${assetKey}", which is not one of assetKeys; list it there too`, { location });
    }
    if (subsets.has(assetKey)) throw new InputError(`assetPartitions names "${assetKey}" twice; merge its partition keys`, { location });
    const spec = graph.require(assetKey).partitions;
    if (spec === null) {
      if (partitionKeys.some((k) => k !== "")) {
        throw new PartitionError(`asset "${assetKey}" is not partitioned: give it no partition keys (or [""])`, {
          code: "PARTITION_SELECTION_INVALID",
          location,
        });
      }
      subsets.set(assetKey, UNPARTITIONED);
      continue;
    }
    if (partitionKeys.length === 0)
      throw new InputError(`assetPartitions: no partition keys for "${assetKey}"`, { code: "PARTITION_SELECTION_EMPTY", location });
    const space = partitionSpace(spec, ctx);
    const subset = withAsset(assetKey, () => space.subset(partitionKeys));
    const notExisting = subset.difference(space.all(now)).first();
    if (notExisting !== undefined) {
      throw new PartitionError(`asset "${assetKey}": partition "${space.keyAt(notExisting)}" does not exist yet (${space.describe()})`, {
        code: "PARTITION_NOT_EXISTING",
        location,
      });
    }
    subsets.set(assetKey, subset);
  }
  const missing = assetKeys.find((k) => !subsets.has(k));
  if (missing !== undefined) {
    throw new InputError(`assetKeys names "${missing}" but assetPartitions gives it no partitions`, {
      location: { assetKey: missing, field: "assetPartitions" },
    });
  }
  return subsets;
}

function withAsset<T>(assetKey: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof PartitionError)) throw err;
    throw new PartitionError(`asset "${assetKey}": ${err.message}`, {
      code: err.code,
      location: { ...err.location, assetKey },
      cause: err,
    });
  }
}

function checkCount(value: number, field: string, max: number): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new InputError(`${field} must be a whole number from 1 to ${max}, got ${value}`, { location: { field } });
  }
  return value;
}

function stringTags(tags: Readonly<Record<string, unknown>>): Record<string, string> {
  return Object.fromEntries(Object.entries(tags).filter((e): e is [string, string] => typeof e[1] === "string"));
}

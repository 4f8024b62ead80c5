import { InputError, PartitionError } from "../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../graph/index.js";
import {
  downstreamPartitions,
  partitionSpace,
  PartitionSubset,
  specsEqual,
  UNPARTITIONED,
  type PartitionContext,
  type PartitionSpace,
  type PartitionsSpec,
} from "../partitions/index.js";

/**
 * Which partitions to plan, in the keys of the selected assets:
 * - `all`: every partition of each selected asset that exists at `now`;
 * - `keys`: these keys;
 * - `range`: `from` to `to`, both included.
 * Omitted when every selected asset is unpartitioned.
 */
export type PartitionSelection =
  | { readonly kind: "all" }
  | { readonly kind: "keys"; readonly keys: readonly string[] }
  | { readonly kind: "range"; readonly from: string; readonly to: string };

export interface SelectionScope {
  readonly graph: AssetGraph;
  /** The selected assets, validated, in topological order. */
  readonly selected: readonly SnapshotAsset[];
  readonly selection: PartitionSelection | undefined;
  readonly ctx: PartitionContext | undefined;
  readonly now: Date;
}

/**
 * The partitions to plan of each selected asset.
 *
 * Unpartitioned assets get their one partition whatever the selection.
 * `all` applies to each asset in its own definition. `keys` and `range` are
 * expressed in the definition of the selection's roots, the selected
 * partitioned assets that no other selected partitioned asset feeds (through
 * partitioned dependencies, selected or not):
 * - a root, and any selected asset with the same partitions definition as a
 *   root, takes the keys as given; a key that is not one of its partitions,
 *   or does not exist yet at `now`, is a PartitionError naming the asset, the
 *   key and the partitions that exist;
 * - any other selected asset gets the partitions that read the planned
 *   partitions of the assets feeding it, through the dependency mappings
 *   (downstreamPartitions), e.g. a daily range selects the weeks of a weekly
 *   rollup that overlap it, and an hourly range the days it falls in.
 *   Unselected partitioned assets in between carry the mapping along.
 * An asset that ends up with no partition is a PartitionError: a selection
 * that silently plans nothing for an asset the user named helps nobody.
 */
export function resolveSelection(scope: SelectionScope): Map<string, PartitionSubset> {
  const { graph, selected, selection, ctx, now } = scope;
  const out = new Map<string, PartitionSubset>();
  const partitioned = selected.filter((a) => a.partitions !== null);
  for (const a of selected) if (a.partitions === null) out.set(a.key, UNPARTITIONED);
  if (partitioned.length === 0) return out;
  if (selection === undefined) {
    const names = partitioned.map((a) => `"${a.key}"`).join(", ");
    throw new PartitionError(
      `${names} ${partitioned.length === 1 ? "is" : "are"} partitioned: choose the partitions to plan (all, keys, or a range from–to)`,
      { code: "PARTITION_SELECTION_REQUIRED", location: { assetKey: partitioned[0]!.key } },
    );
  }
  if (selection.kind === "keys" && selection.keys.length === 0) {
    throw new InputError("the partition selection lists no keys; give at least one, or select all partitions", {
      code: "PARTITION_SELECTION_EMPTY",
    });
  }
  const space = (a: SnapshotAsset): PartitionSpace => partitionSpace(a.partitions!, ctx);

  if (selection.kind === "all") {
    for (const a of partitioned) out.set(a.key, nonEmpty(a, space(a), space(a).all(now), now, "no partition of it exists yet"));
    return out;
  }

  const chosen = new Set(partitioned.map((a) => a.key));
  // Walk the selected assets and their ancestors upstream first: which are fed
  // by a selected partitioned asset through partitioned dependencies.
  const order = graph.topologicalOrder(new Set([...chosen, ...graph.ancestors(chosen)]));
  const fed = new Set<string>();
  for (const key of order) {
    const a = graph.get(key)!;
    if (a.partitions === null) continue;
    const feeders = partitionedDeps(graph, a).filter(({ up }) => chosen.has(up.key) || fed.has(up.key));
    if (feeders.length > 0) fed.add(key);
  }
  const rootSpecs: PartitionsSpec[] = partitioned.filter((a) => !fed.has(a.key)).map((a) => a.partitions!);

  const scoped = new Map<string, PartitionSubset>();
  for (const key of order) {
    const a = graph.get(key)!;
    if (a.partitions === null || !(chosen.has(key) || fed.has(key))) continue;
    const own = a.partitions;
    let subset: PartitionSubset;
    if (chosen.has(key) && (!fed.has(key) || rootSpecs.some((s) => specsEqual(s, own)))) {
      subset = direct(a, space(a), selection, now);
    } else {
      subset = PartitionSubset.EMPTY;
      const sources: string[] = [];
      for (const { dep, up } of partitionedDeps(graph, a)) {
        const upSubset = scoped.get(up.key);
        if (upSubset === undefined) continue;
        sources.push(`"${up.key}"`);
        subset = subset.union(downstreamPartitions(up.partitions, own, dep.mapping, upSubset, ctx, now));
      }
      if (chosen.has(key)) {
        subset = nonEmpty(
          a,
          space(a),
          subset,
          now,
          `none of its partitions that read the selected partitions of ${sources.join(", ")} exists yet`,
        );
      }
    }
    scoped.set(key, subset);
  }
  for (const a of partitioned) out.set(a.key, scoped.get(a.key)!);
  return out;
}

function partitionedDeps(graph: AssetGraph, a: SnapshotAsset) {
  return a.deps.flatMap((dep) => {
    const up = graph.get(dep.assetKey);
    return up && up.partitions !== null ? [{ dep, up }] : [];
  });
}

/** The selection read in the asset's own keys. */
function direct(
  a: SnapshotAsset,
  space: PartitionSpace,
  selection: Exclude<PartitionSelection, { kind: "all" }>,
  now: Date,
): PartitionSubset {
  let subset: PartitionSubset;
  try {
    subset = selection.kind === "keys" ? space.subset(selection.keys) : space.range(selection.from, selection.to);
  } catch (err) {
    if (!(err instanceof PartitionError)) throw err;
    throw new PartitionError(`asset "${a.key}": ${err.message}; ${describeExisting(space, now)}`, {
      code: err.code,
      location: { ...err.location, assetKey: a.key },
      cause: err,
    });
  }
  const notExisting = subset.difference(space.all(now)).first();
  if (notExisting !== undefined) {
    const key = space.keyAt(notExisting);
    const window = space.windowAt(notExisting);
    const why = window ? ` (its window closes at ${window.end.toISOString()})` : "";
    throw new PartitionError(
      `asset "${a.key}": partition "${key}" of ${space.describe()} does not exist yet at ${now.toISOString()}${why}; ${describeExisting(space, now)}`,
      { code: "PARTITION_NOT_EXISTING", location: { assetKey: a.key, partitionKey: key } },
    );
  }
  return subset;
}

function nonEmpty(a: SnapshotAsset, space: PartitionSpace, subset: PartitionSubset, now: Date, why: string): PartitionSubset {
  if (!subset.isEmpty()) return subset;
  throw new PartitionError(
    `asset "${a.key}" (${space.describe()}): nothing to plan: ${why} at ${now.toISOString()}; ${describeExisting(space, now)}. ` +
      `Choose other partitions or leave the asset out of the selection`,
    { code: "PARTITION_SELECTION_EMPTY", location: { assetKey: a.key } },
  );
}

/** `existing partitions at …: "2025-01-01" … "2025-03-14" (73)`: the valid range, for error messages. */
export function describeExisting(space: PartitionSpace, now: Date): string {
  const count = space.count(now);
  const at = `at ${now.toISOString()}`;
  if (count === 0) return `no partition of ${space.describe()} exists ${at}`;
  if (count <= 5) return `existing partitions ${at}: ${[...space.keys(space.all(now))].map((k) => `"${k}"`).join(", ")}`;
  return `existing partitions ${at}: "${space.keyAt(0)}" … "${space.keyAt(count - 1)}" (${count})`;
}

import { InputError } from "../../errors/index.js";
import type { AssetGraph } from "../../graph/index.js";
import { describeMapping, describePartitions, type PartitionMappingSpec } from "../../partitions/index.js";
import type { JsonValue, LineageDirection, LineageEdge, LineageEvent } from "../../storage/index.js";
import { byText, checkPartitionKey, currentGraph, piiOf, spaceOf, type LineageServices } from "./lineage-services.js";

export const DEFAULT_LINEAGE_DEPTH = 3;
export const MAX_LINEAGE_DEPTH = 20;
/** The most assets, materialisations or inputs one lineage answer holds. */
export const MAX_LINEAGE_NODES = 5_000;

export interface LineageRequest {
  readonly assetKey: string;
  /** Which partition's latest materialisation the run-level graph starts at ('' or omitted for an unpartitioned asset). */
  readonly partitionKey?: string | undefined;
  /** Default upstream. */
  readonly direction?: LineageDirection | undefined;
  /** Dependency levels (static graph) and event_inputs hops (run-level graph): 1 to 20, default 3. */
  readonly depth?: number | undefined;
}

/** An asset of the static neighbourhood. */
export interface LineageAsset {
  readonly key: string;
  readonly kind: string;
  /** Fewest dependency levels from the asset asked about. */
  readonly depth: number;
  readonly partitions: string | null;
  /** `metadata.pii` of the asset: which of its columns hold personal data (or true). */
  readonly pii: JsonValue | null;
}

/** A dependency between two assets of the neighbourhood, with the partition mapping it is read through. */
export interface LineageDependency {
  readonly upstreamKey: string;
  readonly downstreamKey: string;
  /** The argument name the downstream function receives it under. */
  readonly name: string;
  readonly mapping: PartitionMappingSpec | null;
  readonly mappingDescription: string;
}

export interface Lineage {
  readonly assetKey: string;
  /** null: a partitioned asset asked about without a partition (the static graph only). */
  readonly partitionKey: string | null;
  readonly direction: LineageDirection;
  readonly depth: number;
  /** Static lineage: the asset graph around the asset, by (depth, key): the asset itself first. */
  readonly assets: readonly LineageAsset[];
  readonly dependencies: readonly LineageDependency[];
  /** Run-level lineage: the partition's latest materialisation (null when it has none, or no partition was given)… */
  readonly start: LineageEvent | null;
  /** …every materialisation reached from it (the start first), by depth… */
  readonly materializations: readonly LineageEvent[];
  /** …and which upstream partition (and event of it) each one read. */
  readonly inputs: readonly LineageEdge[];
}

/**
 * Static and run-level lineage around one asset partition, in one direction.
 * The static graph comes from the current definitions; the run-level graph
 * from event_inputs, starting at the partition's latest materialisation (or
 * external report, or observation), in two statements whatever its size.
 *
 * Errors (nothing is written): GraphError GRAPH_UNKNOWN_ASSET (with the
 * nearest key); InputError LINEAGE_DEPTH_INVALID, LINEAGE_PARTITION_INVALID
 * (a key outside the asset's partitions, or any key for an unpartitioned
 * asset), LINEAGE_TOO_LARGE past {@link MAX_LINEAGE_NODES}.
 */
export async function lineage(services: LineageServices, request: LineageRequest): Promise<Lineage> {
  const depth = checkLineageDepth(request.depth ?? DEFAULT_LINEAGE_DEPTH, "depth");
  const direction = request.direction ?? "upstream";
  const graph = await currentGraph(services);
  const asset = graph.require(request.assetKey);
  const space = await spaceOf(services, asset);
  const partitionKey = request.partitionKey ?? (space === null ? "" : null);
  if (partitionKey !== null) checkPartitionKey(asset, space, partitionKey, "LINEAGE_PARTITION_INVALID", "partitionKey");

  const limit = services.limits?.maxNodes ?? MAX_LINEAGE_NODES;
  const { assets, dependencies } = staticNeighbourhood(graph, { key: asset.key, direction, depth, limit });
  if (partitionKey === null)
    return { assetKey: asset.key, partitionKey, direction, depth, assets, dependencies, start: null, materializations: [], inputs: [] };
  const run = await services.lineage.runLineage({ assetKey: asset.key, partitionKey, direction, depth, limit });
  if (run.truncated) throw tooLarge(`the run-level lineage of "${asset.key}" partition "${partitionKey}"`, { direction, depth, limit });
  return {
    assetKey: asset.key,
    partitionKey,
    direction,
    depth,
    assets,
    dependencies,
    start: run.start,
    materializations: run.events,
    inputs: run.edges,
  };
}

/**
 * The depth if it is a whole number from 1 to {@link MAX_LINEAGE_DEPTH}, else
 * InputError LINEAGE_DEPTH_INVALID naming `field` and the value as given (`shown`).
 */
export function checkLineageDepth(depth: number, field: string, shown = String(depth)): number {
  if (!Number.isInteger(depth) || depth < 1 || depth > MAX_LINEAGE_DEPTH) {
    throw new InputError(`${field}: ${shown} must be a whole number from 1 to ${MAX_LINEAGE_DEPTH}`, {
      code: "LINEAGE_DEPTH_INVALID",
      location: { field },
    });
  }
  return depth;
}

/** Breadth-first from `key`, `depth` dependency levels in one direction, with the edges walked. */
function staticNeighbourhood(graph: AssetGraph, walk: Walk) {
  const { key, direction, depth, limit } = walk;
  const levels = new Map<string, number>([[key, 0]]);
  const dependencies: LineageDependency[] = [];
  let frontier = [key];
  for (let level = 1; level <= depth && frontier.length > 0; level++) {
    const next: string[] = [];
    for (const from of frontier) {
      for (const { downstreamKey, dep } of edgesOf(graph, from, direction)) {
        const other = direction === "upstream" ? dep.assetKey : downstreamKey;
        dependencies.push({
          upstreamKey: dep.assetKey,
          downstreamKey,
          name: dep.name,
          mapping: dep.mapping,
          mappingDescription: describeMapping(dep.mapping),
        });
        if (levels.has(other)) continue;
        levels.set(other, level);
        next.push(other);
      }
    }
    if (levels.size > limit || dependencies.length > limit) throw tooLarge(`the asset graph around "${key}"`, walk);
    frontier = next;
  }
  const ordered = [...levels].sort(([a, x], [b, y]) => x - y || byText(a, b));
  const assets = ordered.map(([k, d]) => {
    const a = graph.require(k);
    return { key: k, kind: a.kind, depth: d, partitions: a.partitions ? describePartitions(a.partitions) : null, pii: piiOf(a) };
  });
  return { assets, dependencies };
}

function edgesOf(graph: AssetGraph, key: string, direction: LineageDirection) {
  if (direction === "downstream") return graph.downstreamEdges(key);
  return graph
    .require(key)
    .deps.filter((d) => graph.has(d.assetKey))
    .map((dep) => ({ downstreamKey: key, dep }));
}

interface Walk {
  readonly key: string;
  readonly direction: LineageDirection;
  readonly depth: number;
  readonly limit: number;
}

function tooLarge(what: string, { direction, depth, limit }: Omit<Walk, "key">): InputError {
  return new InputError(`${what} ${direction} to depth ${depth} has more than ${limit} nodes or edges; ask for a smaller depth`, {
    code: "LINEAGE_TOO_LARGE",
    location: { field: "depth" },
  });
}

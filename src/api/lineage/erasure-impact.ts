import { InputError } from "../../errors/index.js";
import type { AssetGraph } from "../../graph/index.js";
import type { ImpactedPartition, JsonValue } from "../../storage/index.js";
import { byText, checkPartitionKey, currentGraph, piiOf, spaceOf, type LineageServices } from "./lineage-services.js";

/** The most source partitions one erasure question names. */
export const MAX_ERASURE_SOURCE_PARTITIONS = 10_000;
/** The most derived partitions one answer lists. */
export const MAX_ERASURE_IMPACT = 100_000;

export interface ErasureImpactRequest {
  readonly assetKey: string;
  /** The partitions that held the data; may be empty (or ['']) for an unpartitioned asset. */
  readonly partitionKeys: readonly string[];
}

/** An asset the data reached, and whether it carries personal data. */
export interface ErasureImpactAsset {
  readonly assetKey: string;
  /** `metadata.pii`: which of its columns hold personal data (or true); null when not marked. */
  readonly pii: JsonValue | null;
  /** False for assets no longer in the definitions: their stored data is listed but cannot be re-materialised. */
  readonly defined: boolean;
  readonly partitionCount: number;
}

/** Partitions of one asset, in the shape launchBackfill's `assetPartitions` takes. */
export interface AssetPartitionKeys {
  readonly assetKey: string;
  /** [''] for an unpartitioned asset. */
  readonly partitionKeys: readonly string[];
}

export interface ErasureImpact {
  readonly assetKey: string;
  /** The source partitions as asked, with their latest materialisation and output. */
  readonly sources: readonly ImpactedPartition[];
  /** Every derived asset partition holding data read from them, transitively; upstream assets first, then by key. */
  readonly partitions: readonly ImpactedPartition[];
  /** The source asset first, then each derived asset, in the same order. */
  readonly assets: readonly ErasureImpactAsset[];
  /** Launch this as a backfill (`launchBackfill(assetKeys, assetPartitions)`) to re-materialise them after the purge. */
  readonly backfill: { readonly assetKeys: readonly string[]; readonly assetPartitions: readonly AssetPartitionKeys[] };
}

/**
 * "Where did the data of these partitions go?": every asset partition whose
 * latest materialisation read one of them, or read such a partition, and so
 * on; for each, the event, run and step that wrote it and where its output
 * is stored; which assets carry `metadata.pii`; and the derived partitions as
 * a backfill selection. One recursive statement, whatever the graph's size.
 *
 * Errors (nothing is written): GraphError GRAPH_UNKNOWN_ASSET; InputError
 * ERASURE_PARTITIONS_REQUIRED (a partitioned asset without keys),
 * ERASURE_PARTITION_INVALID (a key outside its partitions, naming it, unless data of that partition was recorded),
 * ERASURE_TOO_MANY_PARTITIONS, ERASURE_IMPACT_TOO_LARGE past
 * {@link MAX_ERASURE_IMPACT} derived partitions.
 */
export async function erasureImpact(services: LineageServices, request: ErasureImpactRequest): Promise<ErasureImpact> {
  const graph = await currentGraph(services);
  const asset = graph.require(request.assetKey);
  const space = await spaceOf(services, asset);
  const location = { assetKey: asset.key, field: "partitionKeys" };
  let keys = [...new Set(request.partitionKeys)];
  if (space === null && keys.length === 0) keys = [""];
  if (keys.length === 0) {
    throw new InputError(`asset "${asset.key}" is partitioned (${space!.describe()}): name the partitions that held the data`, {
      code: "ERASURE_PARTITIONS_REQUIRED",
      location,
    });
  }
  if (keys.length > MAX_ERASURE_SOURCE_PARTITIONS) {
    throw new InputError(
      `${keys.length} partitions of "${asset.key}" were named; ask about at most ${MAX_ERASURE_SOURCE_PARTITIONS} at once`,
      {
        code: "ERASURE_TOO_MANY_PARTITIONS",
        location,
      },
    );
  }
  // A key outside the asset's partitions is an error, unless data of it was recorded (a partition since removed
  // from the definition still holds it): those are checked against the answer.
  const removed = new Map<string, unknown>();
  for (const key of keys) {
    try {
      checkPartitionKey(asset, space, key, "ERASURE_PARTITION_INVALID", "partitionKeys");
    } catch (error) {
      removed.set(key, error);
    }
  }
  if (removed.size > 0 && space === null) throw removed.values().next().value;

  const limit = services.limits?.maxImpact ?? MAX_ERASURE_IMPACT;
  const rows = await services.lineage.erasureImpact({ assetKey: asset.key, partitionKeys: keys, limit });
  for (const [key, error] of removed) {
    if (rows.sources.find((s) => s.partitionKey === key)?.eventId == null) throw error;
  }
  if (rows.truncated) {
    throw new InputError(
      `more than ${limit} derived partitions read the named partitions of "${asset.key}"; ask about fewer source partitions at once`,
      { code: "ERASURE_IMPACT_TOO_LARGE", location },
    );
  }
  const byAsset = groupByAsset(graph, rows.impacted);
  const partitions = [...byAsset.values()].flat();
  const assets: ErasureImpactAsset[] = [
    { assetKey: asset.key, pii: piiOf(asset), defined: true, partitionCount: keys.length },
    ...[...byAsset].map(([key, list]) => ({
      assetKey: key,
      pii: piiOf(graph.get(key)),
      defined: graph.has(key),
      partitionCount: list.length,
    })),
  ];
  const groups = [...byAsset]
    .filter(([key]) => graph.has(key))
    .map(([key, list]) => ({ assetKey: key, partitionKeys: list.map((p) => p.partitionKey) }));
  return {
    assetKey: asset.key,
    sources: rows.sources,
    partitions,
    assets,
    backfill: { assetKeys: groups.map((g) => g.assetKey), assetPartitions: groups },
  };
}

/** Partitions grouped by asset: assets in dependency order (removed ones last, by key), partitions by key. */
function groupByAsset(graph: AssetGraph, impacted: readonly ImpactedPartition[]): Map<string, ImpactedPartition[]> {
  const groups = new Map<string, ImpactedPartition[]>();
  for (const p of impacted) {
    const list = groups.get(p.assetKey);
    if (list) list.push(p);
    else groups.set(p.assetKey, [p]);
  }
  const keys = [...groups.keys()];
  const defined = graph.topologicalOrder(keys.filter((k) => graph.has(k)));
  const removed = keys.filter((k) => !graph.has(k)).sort(byText);
  return new Map([...defined, ...removed].map((k) => [k, groups.get(k)!.sort((a, b) => byText(a.partitionKey, b.partitionKey))]));
}

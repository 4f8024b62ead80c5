import { InputError, TributaryError } from "../../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace, type PartitionSpace } from "../../partitions/index.js";
import type { DefinitionStore, GraphCache, JsonValue, LineageStore } from "../../storage/index.js";

/** What the lineage and erasure queries read: the current graph, dynamic partition keys, and run-level lineage. */
export interface LineageServices {
  readonly graphs: Pick<GraphCache, "current">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  readonly lineage: LineageStore;
  /** Caps on one answer (defaults MAX_LINEAGE_NODES, MAX_ERASURE_IMPACT); lower in tests. */
  readonly limits?: { readonly maxNodes?: number; readonly maxImpact?: number };
}

/** The current graph, or DEFINITIONS_NOT_LOADED before the first load. */
export async function currentGraph(services: LineageServices): Promise<AssetGraph> {
  const { version, graph } = await services.graphs.current();
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  return graph;
}

/** The asset's partition space (dynamic keys loaded), or null when it is unpartitioned. */
export async function spaceOf(services: LineageServices, asset: SnapshotAsset): Promise<PartitionSpace | null> {
  if (!asset.partitions) return null;
  const ctx = await loadPartitionContext([asset.partitions], (name) => services.definitions.listDynamicPartitions(name));
  return partitionSpace(asset.partitions, ctx);
}

/**
 * Checks that `key` is one of the asset's partitions: InputError `code`
 * naming the asset, the key and what is wrong. An unpartitioned asset takes
 * only '' (no key).
 */
export function checkPartitionKey(asset: SnapshotAsset, space: PartitionSpace | null, key: string, code: string, field: string): void {
  const location = { assetKey: asset.key, field };
  if (space === null) {
    if (key !== "") {
      throw new InputError(`asset "${asset.key}" is not partitioned: leave out the partition key (got "${key}")`, { code, location });
    }
    return;
  }
  try {
    space.indexOf(key);
  } catch (err) {
    const reason = err instanceof TributaryError ? err.message : String(err);
    throw new InputError(`asset "${asset.key}": partition "${key}" is not in its partitions (${space.describe()}): ${reason}`, {
      code,
      location,
      cause: err,
    });
  }
}

/** Orders strings by code unit, the same everywhere (unlike localeCompare). */
export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The asset's `metadata.pii` (which columns hold personal data, or `true`); null when it has none. */
export function piiOf(asset: SnapshotAsset | undefined): JsonValue | null {
  const pii = asset?.metadata["pii"];
  return pii === undefined || pii === false || pii === null ? null : pii;
}

import { localGuard, type Guard } from "../../access/index.js";
import { InputError, PartitionError } from "../../errors/index.js";
import type { AssetGraph } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace } from "../../partitions/index.js";
import { resolveSelection, type PartitionSelection } from "../../planner/index.js";
import { openRange } from "./partition-request.js";
import {
  deleteQueuedObjects,
  type DefinitionStore,
  type OutputDeletionStore,
  type OutputStore,
  type PartitionWipe,
  type PartitionWipeStore,
} from "../../storage/index.js";

/** The most partitions one wipe removes: a larger selection is wiped in parts. */
export const MAX_WIPE_PARTITIONS = 100_000;
/** The most partition keys an answer lists (partitionCount counts them all). */
const MAX_LISTED_KEYS = 1_000;
/** The most characters of a wipe's reason. */
export const MAX_WIPE_REASON_LENGTH = 1_000;

export interface WipePartitionsRequest {
  readonly assetKey: string;
  /** These partitions; or a range with from/to (either end may be left out: the first or last existing partition). */
  readonly partitions?: readonly string[] | undefined;
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  readonly reason?: string | undefined;
  /** Says what would be removed, and removes nothing. */
  readonly dryRun?: boolean | undefined;
}

export interface WipePartitionsServices {
  readonly graphs: { current(options?: { fresh?: boolean }): Promise<{ readonly version: number; readonly graph: AssetGraph }> };
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  readonly wipes: PartitionWipeStore;
  readonly deletions: OutputDeletionStore;
  /** This process's object store: the wiped outputs' objects are deleted from it at once (else by a reconciler). */
  readonly outputStore: OutputStore | null;
}

export interface PartitionWipeResult extends PartitionWipe {
  /** The first 1 000 wiped partitions, in order (partitionCount counts them all). */
  readonly partitionKeys: readonly string[];
  /** Objects deleted from the object store before the answer. */
  readonly objectsDeleted: number;
  /** Objects still to delete: a reconciler deletes them when the store answers again. */
  readonly objectsPending: readonly { readonly storageRef: string; readonly error: string }[];
}

/**
 * Partition wipe: removes what Tributary holds about chosen partitions of one asset (their statuses, materialisation
 * events and their lineage, check results and stored outputs, the outputs' objects in the object store too) so that
 * they are missing again: automation materialises them again if its condition asks for them. Each partition keeps a
 * `wipe` event with the reason, and the audit trail who wiped what. Needs `admin` on the asset.
 *
 * Runs already finished keep their history (steps, tries, logs); a run still writing one of the partitions makes the
 * wipe fail (WIPE_PARTITIONS_IN_USE, naming it) without removing anything.
 *
 * Errors (nothing is removed): GraphError GRAPH_UNKNOWN_ASSET; InputError WIPE_SOURCE_ASSET, WIPE_SELECTION_CONFLICT,
 * WIPE_REASON_TOO_LONG, WIPE_TOO_MANY_PARTITIONS,
 * WIPE_PARTITIONS_IN_USE; PartitionError for a selection that does not fit the asset's
 * partitions (PARTITION_SELECTION_REQUIRED, PARTITION_SELECTION_INVALID, or the key's own error naming the valid range).
 */
export async function wipePartitions(
  services: WipePartitionsServices,
  request: WipePartitionsRequest,
  now: Date,
  guard: Guard = localGuard(),
): Promise<PartitionWipeResult> {
  const keys = await selectPartitions(services, request, now);
  const reason = request.reason?.trim() || null;
  const dryRun = request.dryRun === true;
  const audit = await guard.authorize("wipePartitions", "admin", {
    assets: [request.assetKey],
    partitions: keys.filter((k) => k !== ""),
    detail: { ...(reason ? { reason } : {}), ...(dryRun ? { dryRun } : {}) },
  });
  const wiped = await services.wipes.wipe({ assetKey: request.assetKey, partitionKeys: keys, reason, dryRun }, now, audit);
  // Committed: the objects go now when this process has the store; what fails stays queued for a reconciler.
  const deleted = await deleteQueuedObjects(services.deletions, services.outputStore, now, {
    ids: wiped.objectDeletions.map((d) => d.id),
  }).catch((error: unknown) => ({
    deleted: 0,
    failed: wiped.objectDeletions.map((d) => ({ storageRef: d.storageRef, error: (error as Error).message ?? String(error) })),
  }));
  const pending = services.outputStore
    ? deleted.failed
    : wiped.objectDeletions.map((d) => ({ storageRef: d.storageRef, error: "no object store is configured in this process" }));
  return {
    ...wiped,
    partitionKeys: wiped.partitionKeys.slice(0, MAX_LISTED_KEYS),
    objectsDeleted: deleted.deleted,
    objectsPending: pending,
  };
}

/** The request's partitions of the asset, validated as a run's selection is. */
async function selectPartitions(services: WipePartitionsServices, request: WipePartitionsRequest, now: Date): Promise<string[]> {
  if (!request.assetKey) throw new InputError("name the asset whose partitions to wipe", { code: "PLAN_SELECTION_EMPTY" });
  const location = { assetKey: request.assetKey };
  const hasRange = request.from !== undefined || request.to !== undefined;
  if (request.partitions !== undefined && hasRange) {
    throw new InputError("give either partitions or a range (from/to), not both", {
      code: "WIPE_SELECTION_CONFLICT",
      location: { ...location, field: "from" },
    });
  }
  if ((request.reason?.length ?? 0) > MAX_WIPE_REASON_LENGTH) {
    throw new InputError(`the reason is ${request.reason!.length} characters long; at most ${MAX_WIPE_REASON_LENGTH}`, {
      code: "WIPE_REASON_TOO_LONG",
      location: { ...location, field: "reason" },
    });
  }
  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const asset = graph.require(request.assetKey);
  if (asset.kind === "source") {
    throw new InputError(`"${asset.key}" is a source asset: Tributary observes it and stores no data of it, so there is nothing to wipe`, {
      code: "WIPE_SOURCE_ASSET",
      location,
    });
  }
  if (!asset.partitions) {
    if (request.partitions !== undefined || hasRange) {
      throw new PartitionError(`asset "${asset.key}" is not partitioned: leave out the partitions and from/to`, {
        code: "PARTITION_SELECTION_INVALID",
        location,
      });
    }
    return [""];
  }
  const ctx = await loadPartitionContext([asset.partitions], (name) => services.definitions.listDynamicPartitions(name));
  const space = partitionSpace(asset.partitions, ctx);
  let selection: PartitionSelection;
  if (request.partitions !== undefined) selection = { kind: "keys", keys: [...new Set(request.partitions)] };
  else if (hasRange) selection = openRange(asset.key, space, request, now);
  else {
    throw new PartitionError(`asset "${asset.key}" is partitioned: choose the partitions to wipe (partitions, or a range from–to)`, {
      code: "PARTITION_SELECTION_REQUIRED",
      location,
    });
  }
  // The planner's own resolution: a key or range outside the definition is a PartitionError naming the valid range.
  const subset = resolveSelection({ graph, selected: [asset], selection, ctx, now }).get(asset.key)!;
  if (subset.count() > MAX_WIPE_PARTITIONS) {
    throw new InputError(
      `the selection holds ${subset.count()} partitions of "${asset.key}"; wipe at most ${MAX_WIPE_PARTITIONS} at once (a narrower range)`,
      { code: "WIPE_TOO_MANY_PARTITIONS", location },
    );
  }
  return [...space.keys(subset)];
}

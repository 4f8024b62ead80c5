import type { AuditEntry } from "./audit-trail.js";

/** Which partitions of one asset to wipe. */
export interface PartitionWipeRequest {
  readonly assetKey: string;
  /** Validated keys of the asset's partitions ([""] for an unpartitioned asset). */
  readonly partitionKeys: readonly string[];
  /** Why, recorded on each partition's `wipe` event and in the audit record. */
  readonly reason: string | null;
  /** Counts what a wipe would remove, and removes nothing. */
  readonly dryRun?: boolean;
}

/** An object of a removed output, queued for deletion from the object store. */
export interface QueuedObjectDeletion {
  readonly id: number;
  readonly storageRef: string;
}

/** What a wipe removed (or, for a dry run, would remove). */
export interface PartitionWipe {
  readonly assetKey: string;
  readonly partitionKeys: readonly string[];
  readonly partitionCount: number;
  /** Partitions that had a status (materialised, failed, stale) and are missing now. */
  readonly statusesRemoved: number;
  /** Materialisation events of those partitions (their lineage goes with them). */
  readonly materializationsRemoved: number;
  /** Their other events: planned materialisations, failures, observations, check results. */
  readonly otherEventsRemoved: number;
  readonly checkResultsRemoved: number;
  /** Stored outputs, inline or in the object store, of every run that wrote these partitions. */
  readonly outputsRemoved: number;
  /** The outputs' objects in the object store, queued for deletion (none on a dry run). */
  readonly objectDeletions: readonly QueuedObjectDeletion[];
  /** How many objects are (or would be) deleted from the object store. */
  readonly objectCount: number;
  readonly dryRun: boolean;
}

/**
 * Partition wipe: what Tributary holds about chosen partitions of an asset goes, so that they are missing again
 * (automation sees a `wipe` event per partition and treats them as never materialised).
 */
export interface PartitionWipeStore {
  /**
   * In one transaction: refuses (InputError WIPE_PARTITIONS_IN_USE, naming the runs) when a step of the asset that
   * has not finished targets one of the partitions; otherwise removes the partitions' statuses, events (a
   * materialisation's lineage rows with it), check results and outputs, queues the outputs' objects for deletion,
   * appends a `wipe` event per partition and writes the audit record. A dry run does all of it and rolls it back.
   */
  wipe(request: PartitionWipeRequest, now: Date, audit?: AuditEntry): Promise<PartitionWipe>;
}

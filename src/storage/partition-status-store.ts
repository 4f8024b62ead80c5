import type { PartitionState } from "./database.js";

/** An asset and its code version in the current definitions (staleness compares against it). */
export interface AssetCodeVersion {
  readonly assetKey: string;
  readonly codeVersion: string | null;
}

/** A status a partition can only have with a record: every partition without one is `missing`. */
export type RecordedPartitionState = Exclude<PartitionState, "missing">;

/** Partitions of one asset per recorded status (missing ones are the rest of its partition space). */
export type RecordedStatusCounts = Record<RecordedPartitionState, number>;

/** Why a materialised partition is stale. */
export type StaleReason =
  | {
      readonly kind: "code_version_changed";
      /** The code version the partition was materialised with. */
      readonly materializedWith: string;
      readonly current: string;
    }
  | {
      readonly kind: "upstream_updated";
      readonly upstreamAssetKey: string;
      readonly upstreamPartitionKey: string;
      /** The upstream event the materialisation read (null: the upstream had none then). */
      readonly readEventId: number | null;
      /** The upstream partition's latest materialisation or external event. */
      readonly latestEventId: number;
    };

export interface PartitionStatusRecord {
  readonly partitionKey: string;
  readonly status: PartitionState;
  /** Empty unless the partition is stale (a partition being re-materialised reports its reasons too). */
  readonly staleReasons: readonly StaleReason[];
  /** More stale upstream partitions than staleReasons lists (it lists at most MAX_STALE_REASONS). */
  readonly moreStaleUpstreams: boolean;
  readonly lastMaterializationEventId: number | null;
  /** The data version of its latest materialisation (see docs/glossary.md). */
  readonly dataVersion: string | null;
  readonly materializedAt: Date | null;
  readonly lastRunId: string | null;
}

/**
 * Derived partition status: what partition_status records (materialised,
 * failed), what is in flight (steps of active runs) and staleness, decided in
 * SQL so that an asset with 100 000 partitions is one aggregate, not a loop.
 *
 * Status of a partition, first match wins:
 * 1. `materializing`: a step for it is unfinished (pending, scheduled, queued,
 *    running, up_for_retry, up_for_reschedule, deferred) in a queued or running run;
 * 2. `failed`: its latest step failed for good; `timed_out`: a source
 *    partition whose observation trigger timed out before it appeared;
 *    `erased`: an erasure request removed its data and it waits to be
 *    re-materialised (never stale nor materialized, though it keeps its
 *    latest materialisation's record);
 * 3. `stale`: it is materialised, and either it was materialised with a code
 *    version (not null) other than the asset's current one (not null), or an
 *    upstream partition its latest materialisation read (event_inputs) has a
 *    newer materialisation or external event than the one it read;
 * 4. `materialized`;
 * 5. `missing` (no record).
 *
 * Staleness is one level deep: when an upstream is re-materialised its direct
 * readers become stale; theirs only once those re-materialise.
 */
export interface PartitionStatusStore {
  /**
   * Per asset, the materialised partitions that are stale (whether or not a
   * rerun is in flight), sorted by key. One query for all assets.
   */
  staleKeys(assets: readonly AssetCodeVersion[]): Promise<Map<string, string[]>>;
  /** Per asset, partitions with a record by derived status. One aggregate query for all assets. */
  countByStatus(assets: readonly AssetCodeVersion[]): Promise<Map<string, RecordedStatusCounts>>;
  /**
   * Keys of one asset by derived status (missing ones are not listed: they are
   * the rest of its partition space). One query; callers fold the keys into
   * ranges over the asset's partition space.
   */
  keysByStatus(asset: AssetCodeVersion): Promise<Map<RecordedPartitionState, string[]>>;
  /** {@link keysByStatus} of many assets in one query (`assets { partitionStatus { ranges } }`), by asset key. */
  keysByStatusOfMany(assets: readonly AssetCodeVersion[]): Promise<Map<string, Map<RecordedPartitionState, string[]>>>;
  /**
   * For callers that cache what they derive from recorded statuses (the API's
   * partition bar): per asset, the keys with an unfinished step (always read
   * fresh), the version of its recorded statuses now, and either all its keys
   * by recorded status or, when the caller holds them at a `known` version,
   * the partitions whose status may have changed since with their status now.
   * One statement for the assets with a `known` version (plus one deriving the
   * changed partitions, when there are any), one for the others.
   */
  recordedStatusOfMany(assets: readonly KnownRecordedStatus[]): Promise<Map<string, RecordedStatusRead>>;
  /** Status and stale reasons of the given partitions of one asset (a page of a listing), in the order given. */
  partitionStates(asset: AssetCodeVersion, partitionKeys: readonly string[]): Promise<Map<string, PartitionStatusRecord>>;
  /**
   * The copies kept by {@link storeSummaries} of the given assets' folded statuses, where one was kept for that
   * `definition` with a snapshot of this database's cluster. A copy is a cached read like any other: the caller
   * passes its version as `known` to {@link recordedStatusOfMany}, which brings it up to date or reads in full.
   */
  storedSummaries(assets: readonly { readonly assetKey: string; readonly definition: string }[]): Promise<Map<string, StoredStatusSummary>>;
  /** Keeps these copies (one per asset: the latest written replaces the asset's copy, whatever its definition). */
  storeSummaries(summaries: readonly StoredStatusSummary[]): Promise<void>;
}

/** A copy of an asset's folded recorded statuses, kept for servers that have not read the asset yet. */
export interface StoredStatusSummary {
  readonly assetKey: string;
  /** What the folded indices depend on besides the statuses (code version, partition space), as a digest. */
  readonly definition: string;
  /** What the statuses were derived from. */
  readonly version: RecordedStatusVersion;
  /** Per recorded status, the partition-space indices holding it (a serialized subset: `"0-100,150-151"`). */
  readonly subsets: Readonly<Partial<Record<StoredPartitionState, string>>>;
  /** When read back: how long ago it was written (by the database's clock). */
  readonly ageMs?: number;
}

/** A recorded status other than `materializing` (which comes from steps, not from partition_status). */
export type StoredPartitionState = Exclude<RecordedPartitionState, "materializing">;

/**
 * What keys by recorded status were derived from. Recorded statuses are a
 * function of the asset's current code version, its partition_status rows, the
 * event_inputs of their latest events (immutable: written with the event) and
 * the partition_status rows of the upstream assets those inputs name. Every
 * statement that writes partition_status rows appends, per asset, a change row
 * naming the partitions it wrote (triggers; see migration
 * partition_status_change_keys). So what changed since a read is what the
 * change rows of the asset and of `upstreamAssetKeys` committed after its
 * snapshot name: those partitions of the asset, and the ones whose latest event
 * read those of an upstream.
 */
export interface RecordedStatusVersion {
  /**
   * The snapshot (`pg_current_snapshot()`, as text) of the statement the
   * statuses were read in: a write committed after it is one whose transaction
   * it does not see. Uncommitted or rolled-back writes never show; one
   * committed late shows as a change row the snapshot did not see.
   */
  readonly snapshot: string;
  /** Upstream assets named by the event_inputs of the asset's latest events (a superset is harmless). */
  readonly upstreamAssetKeys: readonly string[];
}

export interface KnownRecordedStatus extends AssetCodeVersion {
  /** The version of the keys the caller holds for this asset at this code version, if any. */
  readonly known?: RecordedStatusVersion;
}

export interface RecordedStatusRead {
  /** Partitions with an unfinished step: `materializing` whatever their recorded status. */
  readonly materializing: readonly string[];
  /** The version of the statuses after this read: the caller keeps it with them. */
  readonly version: RecordedStatusVersion;
  /**
   * All the asset's keys by recorded status, materializing steps not applied (see {@link PartitionStatusStore} for
   * the rules). Absent when the caller's keys at `known` are brought up to date by `changed`.
   */
  readonly recorded?: { readonly keys: ReadonlyMap<StoredPartitionState, readonly string[]> };
  /**
   * With `known` and no `recorded`: the partitions whose recorded status may have changed since, with their status
   * now (null: no record, so missing). Empty when nothing changed.
   */
  readonly changed?: ReadonlyMap<string, StoredPartitionState | null>;
}

/** Step states of a step that has not finished: its partition is being materialised. */
export const UNFINISHED_STEP_STATES = [
  "pending",
  "scheduled",
  "queued",
  "running",
  "up_for_retry",
  "up_for_reschedule",
  "deferred",
] as const;

/** Stale upstream partitions listed per partition in staleReasons. */
export const MAX_STALE_REASONS = 10;

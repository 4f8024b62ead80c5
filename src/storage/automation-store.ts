import type { EventCursor } from "./event-stream.js";

export type { EventCursor, PendingTransaction } from "./event-stream.js";

export interface AutomationLease {
  readonly acquired: boolean;
  /** The tick to run next (dense, from 1). */
  readonly tick: number;
  readonly cursor: EventCursor;
  /** Whether this owner held the lease at its previous tick too (its in-memory caches are current). */
  readonly continued: boolean;
}

export interface StreamEvent {
  readonly id: number;
  readonly txId: string;
  readonly kind: string;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string | null;
  /** A `check_result` event (a blocking check's verdict on the partition's latest materialisation): passed or not. */
  readonly checkPassed?: boolean;
}

export interface EventPage {
  readonly events: readonly StreamEvent[];
  /** Where the next read starts (it moves even when `events` is empty: ended transactions leave its pending list). */
  readonly cursor: EventCursor;
}

export interface PartitionRef {
  readonly assetKey: string;
  readonly partitionKey: string;
}

/** A partition whose latest materialisation read an upstream version that has been replaced since (or that never materialised). */
export interface StalePartition extends PartitionRef {
  readonly upstream: string | null;
  readonly upstreamPartition: string | null;
  readonly eventId: number | null;
}

export interface PartitionStates {
  /** Per asset: partition keys with a materialisation. */
  readonly materialized: Map<string, string[]>;
  /** Per asset: partition keys whose latest try failed for good. */
  readonly failed: Map<string, string[]>;
}

/**
 * An asset's materialised and failed partitions as the automation loop holds them, stored with the automation cursor
 * (inclusive [from, to] key ranges in the order of the partitions definition `partitions` names; ["", ""] for an
 * unpartitioned asset).
 */
export interface PartitionSummary {
  readonly partitions: string;
  readonly materialized: readonly (readonly [string, string])[];
  readonly failed: readonly (readonly [string, string])[];
}

export interface StoredEvaluation {
  readonly assetKey: string;
  readonly decision: "requested" | "declined" | "skipped";
  /** JSON array of inclusive [from, to] key ranges ('' for none). */
  readonly partitions: string;
  readonly condition: string;
  readonly reasons: readonly unknown[];
  readonly runId: string | null;
}

export interface EvaluationRow extends StoredEvaluation {
  readonly id: number;
  readonly tick: number;
  readonly snapshotVersion: number | null;
  readonly evaluatedAt: Date;
}

export interface TickCommit {
  readonly tick: number;
  readonly cursor: EventCursor;
  readonly snapshotVersion: number;
  /** New state per evaluated asset (JSON). */
  readonly states: ReadonlyMap<string, unknown>;
  readonly evaluations: readonly StoredEvaluation[];
  /** Partition summaries of the assets whose partitions changed (or were read from partition_status) since the last commit. */
  readonly summaries?: ReadonlyMap<string, PartitionSummary>;
  /** Assets whose stored partition summary is deleted: the definitions no longer have them. */
  readonly dropSummaries?: readonly string[];
}

/**
 * What the automation loop reads and writes. One reconciler at a time holds
 * the automation lease; everything a tick decides (cursor, states, records)
 * commits in one transaction that first checks the lease is still held.
 */
export interface AutomationStore {
  acquireLease(owner: string, now: Date, ttlMs: number): Promise<AutomationLease>;
  /** Gives the lease up (a reconciler stopping), so another one takes over at once. */
  releaseLease(owner: string): Promise<void>;
  /**
   * Up to `limit` events after the cursor (see readEventStream: each committed
   * event once, whatever transaction is still open, a late commit included),
   * and the cursor past them.
   */
  readEvents(after: EventCursor, limit: number): Promise<EventPage>;
  /** Materialised and failed partitions of every asset, or of the assets given. */
  partitionStates(assetKeys?: readonly string[]): Promise<PartitionStates>;
  /** The partition summaries the last commits stored, per asset (see TickCommit.summaries). */
  loadSummaries(): Promise<Map<string, PartitionSummary>>;
  /** Partitions with a step in an active run, per asset. */
  inProgress(): Promise<Map<string, string[]>>;
  /** Of these partitions, those whose latest materialisation is behind an upstream (or that never materialised). */
  staleByUpstream(partitions: readonly PartitionRef[]): Promise<StalePartition[]>;
  /** Materialised partitions whose code version is not the asset's current one, for the assets given. */
  codeVersionChanged(assets: readonly { assetKey: string; codeVersion: string }[]): Promise<Map<string, string[]>>;
  pausedAssets(): Promise<Set<string>>;
  loadStates(): Promise<Map<string, unknown>>;
  /** Fails (returns false) when the lease was lost meanwhile: nothing is written then. */
  commitTick(owner: string, commit: TickCommit, now: Date): Promise<boolean>;
  /**
   * Latest evaluation records (of an asset), newest first. `partitionSets`
   * keeps only records whose stored partition set is one of these strings
   * (as {@link evaluationPartitionSets} returns them).
   */
  listEvaluations(options: ListEvaluationsOptions): Promise<EvaluationRow[]>;
  /**
   * The distinct stored partition sets of an asset's records ('' for records
   * about no partition), so a caller can tell which concern a partition
   * without reading every record.
   */
  evaluationPartitionSets(assetKey: string): Promise<string[]>;
}

export interface ListEvaluationsOptions {
  readonly assetKey?: string | undefined;
  readonly limit: number;
  readonly beforeId?: number | undefined;
  readonly partitionSets?: readonly string[] | undefined;
}

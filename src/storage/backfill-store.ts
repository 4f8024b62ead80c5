import type { AuditEntry } from "./audit-trail.js";
import type { SerializedError } from "../errors/index.js";
import type { BackfillStatus } from "./database.js";
import type { NewRun, RunSummary } from "./run-store.js";

/** What the user asked for, as given (kept for display and for re-running failures). */
export interface BackfillSelection {
  readonly assetKeys: readonly string[];
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  readonly partitions?: readonly string[] | undefined;
  readonly allPartitions?: boolean | undefined;
  /** Keys or a range per dimension of a multi-partitioned asset (left out: all keys of that dimension). */
  readonly dimensions?:
    | readonly {
        readonly name: string;
        readonly keys?: readonly string[] | undefined;
        readonly from?: string | undefined;
        readonly to?: string | undefined;
      }[]
    | undefined;
  readonly includeUpstream: boolean;
  /** A backfill that re-runs the failed partitions of another names it here. */
  readonly retryOf?: string | undefined;
}

/**
 * How far a backfill got: kept in backfills.cursor and changed only in the
 * transaction that creates its runs, so a restarted reconciler (or another
 * one) continues from exactly here. The runs table is the truth about each
 * run; this is which of them belong to which chunk and what was counted.
 */
export interface BackfillCursor {
  /** Chunks below this one have a run, or were settled without one (nothing left to do, or blocked). */
  readonly next: number;
  /** How many chunks there are. */
  readonly chunks: number;
  /** Bumped by each resume: re-created chunks get a fresh idempotency key. */
  readonly generation: number;
  /** Runs of this backfill not seen ended yet. */
  readonly active: readonly { readonly chunk: number; readonly runId: string }[];
  /** Chunks whose runs were canceled with the backfill: created again, first, when it is resumed. */
  readonly redo: readonly number[];
  /** Asset partitions counted from runs that ended and chunks settled without a run. */
  readonly done: number;
  readonly failed: number;
  /** Of `done`: partitions another run materialised after this backfill was launched (not run again). */
  readonly covered: number;
  /** Per asset, the target partitions that failed (serialised subset ranges): what retry re-runs. */
  readonly failedPartitions: Readonly<Record<string, string>>;
  readonly runsCreated: number;
  /** Why the next chunk is not created yet, when it waits; null otherwise. */
  readonly waiting: string | null;
  /** Why the rest cannot run (its definitions changed): no new runs; the backfill fails once its active runs end. */
  readonly halted: SerializedError | null;
}

export interface BackfillRecord {
  readonly id: string;
  readonly status: BackfillStatus;
  readonly selection: BackfillSelection;
  /** The layout (targets per asset as ranges, axis) as stored; see the planner's parseLayout. */
  readonly partitions: unknown;
  readonly maxConcurrentRuns: number;
  readonly maxPartitionsPerRun: number;
  readonly priority: number;
  /** Asset partitions the backfill materialises. */
  readonly requested: number;
  readonly done: number;
  readonly failed: number;
  readonly inProgress: number;
  readonly cursor: BackfillCursor;
  readonly tags: Readonly<Record<string, unknown>>;
  readonly error: SerializedError | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly canceledAt: Date | null;
  readonly completedAt: Date | null;
}

export interface NewBackfill {
  readonly selection: BackfillSelection;
  readonly partitions: unknown;
  readonly maxConcurrentRuns: number;
  readonly maxPartitionsPerRun: number;
  readonly priority: number;
  readonly requested: number;
  readonly chunks: number;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface AssetPartitionRef {
  readonly assetKey: string;
  readonly partitionKey: string;
}

/** A run of the backfill as the advancing loop needs it. */
export interface RunProgress {
  readonly runId: string;
  readonly status: RunSummary["status"];
  readonly stepsTotal: number;
  readonly stepsDone: number;
  readonly stepsFailed: number;
}

/** A step of an ended run that did not succeed. */
export interface UnsuccessfulStep extends AssetPartitionRef {
  readonly runId: string;
  readonly state: string;
  readonly skipReason: string | null;
}

export interface BackfillUpdate {
  readonly status: BackfillStatus;
  readonly cursor: BackfillCursor;
  readonly done: number;
  readonly failed: number;
  readonly inProgress: number;
  readonly error?: SerializedError | null;
}

/**
 * What the advancing loop may do inside the transaction that holds one
 * backfill's row lock. Everything it writes commits together: runs created,
 * runs canceled, cursor and counts.
 */
export interface BackfillTransaction {
  readonly backfill: BackfillRecord;
  runProgress(runIds: readonly string[]): Promise<RunProgress[]>;
  unsuccessfulSteps(runIds: readonly string[]): Promise<UnsuccessfulStep[]>;
  /**
   * Which of these partitions a run that has not ended is about to
   * materialise (a step not finished yet). Serialised across backfills for
   * the rest of the transaction, so two reconcilers advancing two backfills
   * over the same partitions never both find them free.
   */
  busyPartitions(partitions: readonly AssetPartitionRef[]): Promise<AssetPartitionRef[]>;
  /** The materialised ones among these partitions, with when they were last materialised. */
  materializations(partitions: readonly AssetPartitionRef[]): Promise<(AssetPartitionRef & { readonly materializedAt: Date | null })[]>;
  createRun(run: NewRun, now: Date): Promise<{ runId: string; created: boolean }>;
  /** Asks these runs to cancel (as cancelRun does). */
  cancelRuns(runIds: readonly string[], now: Date): Promise<void>;
  save(update: BackfillUpdate, now: Date): Promise<void>;
}

/**
 * Backfills: requests to materialise partitions of assets as a paced series
 * of runs. Advanced by reconcilers through {@link advance}, which locks the
 * backfill's row with SKIP LOCKED: any number of reconcilers may share them.
 */
export interface BackfillStore {
  create(backfill: NewBackfill, now: Date, audit?: AuditEntry): Promise<BackfillRecord>;
  get(id: string): Promise<BackfillRecord | undefined>;
  list(options?: { limit?: number; status?: BackfillStatus }): Promise<BackfillRecord[]>;
  /** Ids of backfills that need advancing (requested, running, canceling), highest priority first: one indexed query. */
  activeIds(limit?: number): Promise<string[]>;
  /**
   * Runs `step` in a transaction holding the backfill's row lock; undefined
   * (and `step` not called) when another transaction holds it or the
   * backfill is no longer active.
   */
  advance<T>(id: string, step: (tx: BackfillTransaction) => Promise<T>): Promise<T | undefined>;
  /** Cancels the backfill: no new runs, its active runs are canceled; canceled at once when none is active. */
  requestCancel(id: string, now: Date, audit?: AuditEntry): Promise<BackfillRecord>;
  /** A canceled backfill continues where it stopped (chunks whose runs were canceled run again). */
  resume(id: string, now: Date, audit?: AuditEntry): Promise<BackfillRecord>;
}

import type { AuditEntry } from "./audit-trail.js";

/** The tables an archive holds, in the order a restore inserts them (parents first). */
export const HISTORY_TABLES = ["runs", "steps", "step_deps", "step_tries", "triggers", "events", "event_inputs", "check_results"] as const;
export type HistoryTable = (typeof HISTORY_TABLES)[number];

/** Which history is past its retention: runs that ended, and events of no run, before a cut-off. */
export interface HistoryRetentionPolicy {
  /** The default cut-off (TRIBUTARY_HISTORY_RETENTION); null: the history of assets without their own is kept. */
  readonly before: Date | null;
  /** Assets with a retention of their own (`retention.history`). A run is past it when every asset it ran is. */
  readonly assets?: readonly { readonly assetKey: string; readonly before: Date }[];
}

/** A claimed batch of one day: its rows, as JSON text (exactly as the database gives them), table by table. */
export interface HistoryBatch {
  readonly archiveId: string;
  /** YYYY-MM-DD (UTC): the day its runs were created and its events recorded. */
  readonly day: string;
  readonly runIds: readonly string[];
  /** Events of no run. */
  readonly eventIds: readonly string[];
  readonly rows: Readonly<Record<HistoryTable, readonly string[]>>;
  /** Per run, what it looked like when claimed (its last update): a run changed since is not deleted. */
  readonly runVersions: Readonly<Record<string, string>>;
}

/** The archives of one day. */
export interface HistoryArchiveDay {
  /** YYYY-MM-DD (UTC). */
  readonly day: string;
  /** Objects holding the day's archived history (not counting restored ones). */
  readonly archives: number;
  readonly runs: number;
  readonly events: number;
  readonly rows: number;
  readonly logs: number;
  readonly sizeBytes: number;
  readonly lastArchivedAt: Date | null;
  /** Archives of the day brought back, and when the latest was. */
  readonly restoredArchives: number;
  readonly lastRestoredAt: Date | null;
  /** While set, the day is not archived again (a restore holds it). */
  readonly heldUntil: Date | null;
}

/** An archive object to restore. */
export interface HistoryArchiveObject {
  readonly id: string;
  readonly storageRef: string;
}

/** What one restore brought back, by table. */
export interface RestoredHistory {
  readonly day: string;
  readonly archives: number;
  readonly rows: Readonly<Record<HistoryTable, number>>;
  readonly heldUntil: Date;
}

/**
 * Archival of history: claims the runs and run-less events of the oldest day past their retention (under a unique
 * claim each, so that two archivers never write one run twice), and deletes them once their object is written —
 * unless something changed them meanwhile. A run goes whole (steps, dependencies, tries, waits, logs) but for what a
 * live answer needs, which is never claimed: a partition's latest event of each kind (its latest materialisation
 * among them, with its lineage rows) and the event behind its status, events still read by an event that stays, a
 * check's latest result, unfinished runs and the runs of a backfill still going. An event kept that way outlives its
 * run; once superseded it is archived too (see `orphans`).
 */
export interface HistoryArchiveStore {
  /**
   * Claims up to `limit` runs and `limit` events of the oldest day with history past retention; null: none. With
   * `orphans`, events whose run was archived while they were a partition's latest, and that are superseded since, are
   * looked for too (a scan of the events: now and then, not at every claim).
   */
  claim(
    policy: HistoryRetentionPolicy,
    options: { readonly limit: number; readonly owner: string; readonly orphans?: boolean },
    now: Date,
  ): Promise<HistoryBatch | null>;
  /** Records where the batch's object was written, and the partitions whose try logs it holds. */
  written(archiveId: string, object: WrittenArchive): Promise<void>;
  /**
   * Deletes the batch's rows and marks the archive archived, in one transaction, when none of them changed since
   * the claim and all may still go; otherwise deletes nothing, drops the archive and queues its object for deletion.
   */
  complete(batch: HistoryBatch, now: Date): Promise<{ readonly archived: boolean; readonly rows: number }>;
  /** Drops a claim whose object could not be written (queues the object, if any, for deletion). */
  release(archiveId: string, now: Date): Promise<void>;
  /** Archives left writing since before `before` (their archiver died): released. Answers how many. */
  releaseAbandoned(before: Date, now: Date): Promise<number>;
  /** The days with archives, newest first. */
  days(): Promise<HistoryArchiveDay[]>;
  /** The day's archived objects, oldest first. */
  archivesOf(day: string): Promise<HistoryArchiveObject[]>;
  /**
   * Puts the rows of the day's archives back (rows already here are left as they are), marks the archives restored,
   * queues their objects for deletion, holds the day until `hold.until` and writes the audit record, in one
   * transaction that holds the archives' rows locked while `load` reads their objects (so that an erasure never
   * changes an object between its reading and the restore). Fails with HISTORY_ARCHIVE_CHANGED when none of the day's
   * archives is archived any more (another restore took them).
   */
  restore(
    day: string,
    load: (
      archives: readonly HistoryArchiveObject[],
    ) => Promise<readonly { readonly rows: Readonly<Record<HistoryTable, readonly string[]>> }[]>,
    hold: { readonly until: Date; readonly by: string | null },
    now: Date,
    audit?: AuditEntry,
  ): Promise<RestoredHistory>;
  /** The archives (still archived) that hold try logs of these partitions of an asset. */
  archivesWithLogs(assetKey: string, partitionKeys: readonly string[]): Promise<(HistoryArchiveObject & { readonly day: string })[]>;
  /**
   * Removes the try logs of these partitions from an archive, for an erasure request: under the archive's row lock,
   * `rewrite` writes the object again without them and answers which logs it removed; they are recorded as the
   * request's deletions, and the archive no longer counts as holding logs of the partitions, in the same transaction.
   * Nothing happens (null) when the archive is no longer archived.
   */
  scrubLogs(
    archiveId: string,
    target: { readonly requestId: string; readonly assetKey: string; readonly partitionKeys: readonly string[] },
    rewrite: (storageRef: string) => Promise<{ readonly removed: readonly ScrubbedLog[]; readonly sizeBytes: number }>,
    now: Date,
  ): Promise<readonly ScrubbedLog[] | null>;
}

/** Where a batch's object was written, and the partitions whose try logs it holds. */
export interface WrittenArchive {
  readonly storageRef: string;
  readonly sizeBytes: number;
  readonly logCount: number;
  readonly logPartitions: readonly { readonly assetKey: string; readonly partitionKey: string }[];
}

/** A try's log removed from an archive. */
export interface ScrubbedLog {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string;
  readonly stepId: number;
  readonly tryNumber: number;
  readonly sizeBytes: number;
}

import type { AuditEntry } from "./audit-trail.js";
import type { FileLoadStatus } from "./database.js";
import type { JsonValue } from "./json.js";

/**
 * Persistence for the definitions loader: graph snapshots, per-file load
 * results, the assets table and dynamic partition keys. Specs and graphs are
 * opaque JSON here; the SDK owns their shape.
 */
export interface DefinitionStore {
  /**
   * Stores a graph as the next version unless its hash equals the latest
   * snapshot's, in which case nothing is written. Safe under concurrency:
   * racing savers of one hash get one version.
   */
  saveSnapshot(input: SnapshotInput): Promise<SaveSnapshotResult>;
  latestSnapshot(): Promise<DefinitionSnapshot | undefined>;
  /** The latest version number alone: a cheap check before re-reading a graph. */
  latestVersion(): Promise<number | undefined>;
  getSnapshot(version: number): Promise<DefinitionSnapshot | undefined>;

  /** Upserts a file's load result. On error its previous assets and checks (the last good load) are kept. */
  recordFileLoad(input: FileLoadInput): Promise<DefinitionFile>;
  /** All files, by path. */
  listFiles(): Promise<DefinitionFile[]>;
  /** Files whose latest load failed, by path. */
  listFileErrors(): Promise<DefinitionFile[]>;
  /** Forgets files that no longer exist; returns how many rows went. */
  deleteFiles(paths: readonly string[]): Promise<number>;
  /**
   * Sets the graph problems of every stored file from one load of the whole
   * graph: the given problems for the files listed, none for every other
   * file. A problem caused by another file goes as soon as that file is
   * fixed, whether or not its own file was touched.
   */
  replaceProblems(problemsByPath: ReadonlyMap<string, readonly unknown[]>): Promise<void>;
  /**
   * Runs `fn` with a store whose writes all commit together or not at all,
   * so readers never see a load half-recorded (a file's error without the
   * snapshot it belongs to).
   */
  transaction<T>(fn: (store: DefinitionStore) => Promise<T>): Promise<T>;

  /**
   * Makes the assets table match `assets` for snapshot `version` in one
   * statement: upserts them and marks every other active asset removed.
   * A call with an older version than the table has seen changes nothing
   * that a newer one wrote.
   */
  syncAssets(version: number, assets: readonly AssetSyncInput[]): Promise<SyncAssetsResult>;
  listAssets(options?: { includeRemoved?: boolean }): Promise<AssetRecord[]>;

  /** Keys of a dynamic partitions definition in the order they were added. */
  listDynamicPartitions(name: string): Promise<string[]>;
  /** Adds keys (idempotent); returns those that were new, in the given order. */
  addDynamicPartitions(name: string, keys: readonly string[], audit?: AuditEntry): Promise<string[]>;
}

export interface SnapshotInput {
  contentHash: string;
  graph: unknown;
}

export interface SaveSnapshotResult {
  version: number;
  /** false when the hash equalled the latest snapshot's and nothing was written. */
  changed: boolean;
}

export interface DefinitionSnapshot {
  version: number;
  contentHash: string;
  graph: JsonValue;
  createdAt: Date;
}

export interface FileLoadInput {
  path: string;
  /** Hash of the file's source text. */
  sourceHash: string;
  status: FileLoadStatus;
  /** Required when status is "error"; an Error is stored serialised (serializeError). */
  error?: unknown;
  warnings?: readonly string[];
  /** Graph problems attributed to this file by the latest load (replaced on every load). */
  problems?: readonly unknown[];
  /** The file's asset specs; ignored when status is "error". */
  assets?: readonly unknown[];
  /** The file's check specs; ignored when status is "error". */
  checks?: readonly unknown[];
  loadMs: number;
}

export interface DefinitionFile {
  path: string;
  sourceHash: string;
  status: FileLoadStatus;
  error: JsonValue | null;
  warnings: string[];
  problems: JsonValue[];
  /** Asset specs of the last successful load. */
  assets: JsonValue[];
  /** Check specs of the last successful load. */
  checks: JsonValue[];
  loadMs: number;
  loadedAt: Date;
  lastSuccessAt: Date | null;
}

export interface AssetSyncInput {
  key: string;
  /** The definitions file that declares it. */
  file: string;
  spec: unknown;
  groupName?: string | null;
  owner?: string | null;
  isSource?: boolean;
  partitionsHash?: string | null;
}

export interface AssetRecord {
  key: string;
  file: string;
  spec: JsonValue;
  groupName: string | null;
  owner: string | null;
  isSource: boolean;
  partitionsHash: string | null;
  firstSeenVersion: number;
  lastSeenVersion: number;
  removedAt: Date | null;
  paused: boolean;
  pausedAt: Date | null;
}

export interface SyncAssetsResult {
  /** Assets inserted or updated. */
  upserted: number;
  /** Keys newly marked removed, sorted. */
  removed: string[];
}

import type { AssetSpec, CheckSpec } from "../sdk/index.js";

/**
 * An asset as stored in a definitions snapshot: the SDK's serialised spec plus
 * where it lives, so a worker can import exactly the one file it needs
 * (`import(file)[exportName]`).
 */
export interface SnapshotAsset extends AssetSpec {
  /** Definitions file, relative to the definitions directory, with `/` separators. */
  readonly file: string;
  /** The name the file exports the definition under (`default` for a default export). */
  readonly exportName: string;
  /**
   * The version of the code behind it: a hash of the file and the local files it imports. A change of code is a
   * new snapshot, and a worker runs the code of the version a step was planned with. Absent in snapshots stored
   * before it existed: a worker then runs the file as it is.
   */
  readonly codeHash?: string;
}

/** A check as stored in a definitions snapshot. */
export interface SnapshotCheck extends CheckSpec {
  readonly file: string;
  readonly exportName: string;
  /** As SnapshotAsset's. */
  readonly codeHash?: string;
}

/**
 * The serialised asset graph the loader produces and storage, the API, the
 * planner and the reconciler consume. Plain JSON; assets sorted by key,
 * checks by (asset key, name), so equal definitions are equal snapshots.
 */
export interface DefinitionsSnapshot {
  readonly assets: readonly SnapshotAsset[];
  readonly checks: readonly SnapshotCheck[];
}

/** Bumped when the snapshot's shape changes, so old and new hashes never collide. */
export const SNAPSHOT_FORMAT_VERSION = 1;

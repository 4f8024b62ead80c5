import type { SerializedError } from "../errors/index.js";
import type { AssetSpec, CheckSpec } from "../sdk/index.js";

// Messages between the loader and a definitions child process (JSON over IPC).

/** Parent → child: import this one file, report, exit. */
export interface LoadRequest {
  readonly type: "load";
  /** Absolute path. */
  readonly file: string;
  /** Relative to the definitions directory, for messages. */
  readonly relFile: string;
}

/** Child → parent: tsx and the SDK are loaded; send a file. */
export interface ChildReady {
  readonly type: "ready";
}

export interface ExportedSpec<S> {
  readonly exportName: string;
  readonly spec: S;
}

/** Child → parent: the outcome of the one import. */
export interface LoadReply {
  readonly type: "result";
  readonly status: "ok" | "error";
  readonly assets: readonly ExportedSpec<AssetSpec>[];
  readonly checks: readonly ExportedSpec<CheckSpec>[];
  readonly warnings: readonly string[];
  readonly error?: SerializedError;
  /** Absolute paths of the files under the definitions directory the import pulled in, itself included. */
  readonly imports: readonly string[];
}

export type ChildMessage = ChildReady | LoadReply;

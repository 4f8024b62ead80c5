import type { SerializedError } from "../errors/index.js";
import type { AssetSpec, CheckSpec } from "../sdk/index.js";

// What passes between the loader and a definitions child process: JSON, one message per line, both ways over the
// child's file descriptor 3. The loader sends one request at a time and closes the channel when it has no more.

/**
 * Where the child runtime leaves the SDK for compiled definitions files:
 * their `import … from "tributary"` reads it from here (see compile-definitions.ts).
 */
export const SDK_GLOBAL = "tributary.sdk";

/** Where the loader passes NODE_EXTRA_CA_CERTS to a child, which reads it lazily (see child-main.ts). */
export const EXTRA_CA_CERTS_ENV = "TRIBUTARY_EXTRA_CA_CERTS";

/** Parent → child: import this compiled file and report. */
export interface LoadRequest {
  /** The compiled file to load (absolute): a CommonJS script (`.cjs`) or an ES module (`.mjs`). */
  readonly bundle: string;
  /** It imports what may open TLS connections (see compileDefinitions). */
  readonly tls: boolean;
  /** The definitions file it was compiled from (absolute). */
  readonly file: string;
  /** The same, relative to `dir`, for messages. */
  readonly relFile: string;
  /** The definitions directory (absolute, symlinks resolved). */
  readonly dir: string;
}

/** Child → parent: the import of the last request starts now (its time limit counts from here). */
export interface ChildStarted {
  readonly type: "started";
}

export interface ExportedSpec<S> {
  readonly exportName: string;
  readonly spec: S;
}

/** Child → parent: the outcome of the last request's import. */
export interface LoadReply {
  readonly type: "result";
  readonly status: "ok" | "error";
  readonly assets: readonly ExportedSpec<AssetSpec>[];
  readonly checks: readonly ExportedSpec<CheckSpec>[];
  readonly warnings: readonly string[];
  readonly error?: SerializedError;
  /** Custom trigger kinds the file exports (the triggerer imports them itself). */
  readonly triggerKinds?: number;
  /** The error came from outside the import's own promise (an uncaught exception, an unhandled rejection): the process ends after this reply. */
  readonly unhandled?: true;
  /** The process's heap in use after the import, in MB. */
  readonly heapMb?: number;
}

export type ChildMessage = ChildStarted | LoadReply;

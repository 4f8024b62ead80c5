import type { SerializedError } from "../errors/index.js";
import type { AssetSpec, CheckSpec } from "../sdk/index.js";

// What passes between the loader and a definitions child process.

/**
 * Where the child runtime leaves the SDK for compiled definitions files:
 * their `import … from "tributary"` reads it from here (see compile-definitions.ts).
 */
export const SDK_GLOBAL = "tributary.sdk";

/** Where the loader passes NODE_EXTRA_CA_CERTS to a child, which reads it lazily (see child-main.ts). */
export const EXTRA_CA_CERTS_ENV = "TRIBUTARY_EXTRA_CA_CERTS";

/** Parent → child, as the last command-line argument (JSON): import this one compiled file, report, exit. */
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

/** Child → parent: the runtime is up; the import starts now (the time limit counts from here). */
export interface ChildStarted {
  readonly type: "started";
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
}

export type ChildMessage = ChildStarted | LoadReply;

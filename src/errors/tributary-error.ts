/**
 * The one base class for every error Tributary raises on purpose. `code` is
 * stable (tests and API clients match on it); `message` says what was wrong,
 * where, and what to do next.
 */
export class TributaryError extends Error {
  readonly code: string;
  /** Where the problem is: a file, an asset key, a field path. Shown to users. */
  readonly location: ErrorLocation | undefined;

  constructor(code: string, message: string, options: { cause?: unknown; location?: ErrorLocation } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.location = options.location;
  }

  toJSON(): SerializedError {
    return serializeError(this);
  }
}

export interface ErrorLocation {
  file?: string;
  assetKey?: string;
  field?: string;
  partitionKey?: string;
}

export interface SerializedError {
  name: string;
  code: string;
  message: string;
  location?: ErrorLocation;
  stack?: string;
  cause?: SerializedError;
}

/** A definition (asset config, partitions, mapping, automation) is invalid. */
export class DefinitionError extends TributaryError {
  constructor(message: string, options: { cause?: unknown; location?: ErrorLocation; code?: string } = {}) {
    super(options.code ?? "DEFINITION_INVALID", message, options);
  }
}

/** A partition key, range or subset does not fit the partitions definition. */
export class PartitionError extends TributaryError {
  constructor(message: string, options: { cause?: unknown; location?: ErrorLocation; code?: string } = {}) {
    super(options.code ?? "PARTITION_INVALID", message, options);
  }
}

/** Loading a definitions file failed (syntax, import-time exception, timeout, memory). */
export class LoadError extends TributaryError {
  constructor(code: string, message: string, options: { cause?: unknown; location?: ErrorLocation } = {}) {
    super(code, message, options);
  }
}

/** The asset graph as a whole is invalid (cycle, duplicate key, unknown dependency). */
export class GraphError extends TributaryError {
  constructor(code: string, message: string, options: { cause?: unknown; location?: ErrorLocation } = {}) {
    super(code, message, options);
  }
}

/** Storage-level failure with a user-facing explanation (e.g. data dir locked). */
export class StorageError extends TributaryError {
  constructor(code: string, message: string, options: { cause?: unknown; location?: ErrorLocation } = {}) {
    super(code, message, options);
  }
}

/** Bad input from a CLI flag or API argument. */
export class InputError extends TributaryError {
  constructor(message: string, options: { cause?: unknown; location?: ErrorLocation; code?: string } = {}) {
    super(options.code ?? "INPUT_INVALID", message, options);
  }
}

/**
 * Whatever user code threw, wrapped with where it happened; the original is
 * kept as `cause`. Framework errors are never wrapped in this.
 */
export class UserCodeError extends TributaryError {
  constructor(message: string, options: { cause: unknown; location?: ErrorLocation }) {
    super("USER_CODE_ERROR", message, options);
  }
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof TributaryError) {
    const out: SerializedError = { name: err.name, code: err.code, message: err.message };
    if (err.location) out.location = err.location;
    if (err.stack) out.stack = err.stack;
    if (err.cause !== undefined) out.cause = serializeError(err.cause);
    return out;
  }
  if (err instanceof Error) {
    const out: SerializedError = { name: err.name, code: "ERROR", message: err.message };
    if (err.stack) out.stack = err.stack;
    if (err.cause !== undefined) out.cause = serializeError(err.cause);
    return out;
  }
  return { name: "NonError", code: "ERROR", message: String(err) };
}

/** "file: asset key: field: message" — the prefix users see everywhere. */
export function formatLocation(loc: ErrorLocation | undefined): string {
  if (!loc) return "";
  const parts: string[] = [];
  if (loc.file) parts.push(loc.file);
  if (loc.assetKey) parts.push(`asset "${loc.assetKey}"`);
  if (loc.partitionKey) parts.push(`partition "${loc.partitionKey}"`);
  if (loc.field) parts.push(`field "${loc.field}"`);
  return parts.join(": ");
}

/** The request carries no credential, or one that is malformed, expired, revoked or unknown (HTTP 401). */
export class AuthenticationError extends TributaryError {
  constructor(message: string, options: { cause?: unknown; code?: string } = {}) {
    super(options.code ?? "UNAUTHENTICATED", message, options);
  }
}

/** The caller is known but lacks the role this request needs (HTTP 403); nothing was written. */
export class AccessDeniedError extends TributaryError {
  /** The role that was missing, and the asset it was missing on (none for instance-wide actions). */
  readonly missing: { readonly role: string; readonly assetKey: string | null };

  constructor(message: string, missing: { role: string; assetKey: string | null }) {
    super("FORBIDDEN", message, missing.assetKey ? { location: { assetKey: missing.assetKey } } : {});
    this.missing = missing;
  }
}

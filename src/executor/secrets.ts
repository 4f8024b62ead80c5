import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { InputError, TributaryError, type SerializedError } from "../errors/index.js";
import { describeTry, STEP_ERROR_CODES, tryLocation } from "./step-errors.js";
import type { Redactor } from "./step-log.js";
import { allowTypeScriptImports } from "./typescript-imports.js";
import type { StepDispatch } from "../execution/index.js";

/** A directory with one file per secret (Docker and Kubernetes secrets mounts). */
export const SECRETS_DIR_ENV = "TRIBUTARY_SECRETS_DIR";
/** A module whose default export is a SecretBackend, consulted after the environment and the directory. */
export const SECRETS_BACKEND_ENV = "TRIBUTARY_SECRETS_BACKEND";
/** `get("db_password")` reads TRIBUTARY_SECRET_DB_PASSWORD before DB_PASSWORD. */
export const SECRET_ENV_PREFIX = "TRIBUTARY_SECRET_";

/** Stable codes of secret failures; tests and users match on them. */
export const SECRET_ERROR_CODES = {
  /** No backend has the secret. */
  missing: STEP_ERROR_CODES.secretMissing,
  /** The name cannot name a secret (empty, not a string, a path for the files backend). */
  nameInvalid: "SECRET_NAME_INVALID",
  /** A backend could not answer (an unreadable file, a backend module that threw or returned a non-string). */
  backendFailed: "SECRET_BACKEND_FAILED",
  /** TRIBUTARY_SECRETS_DIR or TRIBUTARY_SECRETS_BACKEND is wrong; raised at startup. */
  configInvalid: "SECRETS_CONFIG_INVALID",
} as const;

/**
 * Where secret values come from. Values are fetched when an asset function
 * asks (`ctx.secrets.get`), every time it asks: nothing is cached, stored in
 * the database, or sent to another process.
 *
 * @example
 * // my-secrets.mjs, named by TRIBUTARY_SECRETS_BACKEND:
 * export default {
 *   name: "vault kv/tributary",
 *   async get(name) { return (await readFromVault(name)) ?? undefined; },
 * };
 */
export interface SecretBackend {
  /** Where it looks, for people reading an error: "environment variables", "directory /run/secrets". */
  readonly name: string;
  /** The value, or undefined when this backend has no such secret. Throw only when it cannot tell. */
  get(name: string): Promise<string | undefined>;
  /** Where it looked for `name`, for the missing-secret error; `name` is shown when absent. */
  describeLookup?(name: string): string;
}

/** The try asking for a secret: errors start with it and carry its location. */
export type SecretRequester = Pick<StepDispatch, "assetKey" | "partitionKey" | "runId" | "tryNumber">;

/** "db-password" → "DB_PASSWORD": the conventional environment variable spelling of a secret's name. */
export function secretEnvName(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/**
 * Secrets from environment variables. `get(name)` reads, first that is set:
 * `<prefix><NAME>` (TRIBUTARY_SECRET_DB_PASSWORD), then `name` exactly as
 * written (db_password), then its upper-case form (DB_PASSWORD). The prefixed
 * variable wins because it can only have been meant for Tributary. An empty
 * variable counts as set (its value is ""). `prefix: ""` reads only the
 * name and its upper-case form.
 *
 * @example
 * const env = new EnvSecretBackend({ env: { TRIBUTARY_SECRET_DB_PASSWORD: "s3cret!" } });
 * await env.get("db_password"); // → "s3cret!"
 */
export class EnvSecretBackend implements SecretBackend {
  readonly name = "environment variables";
  private readonly env: NodeJS.ProcessEnv;
  private readonly prefix: string;

  constructor(options: { env?: NodeJS.ProcessEnv; prefix?: string } = {}) {
    // process.env itself (not a copy) by default: a variable set after startup is seen.
    this.env = options.env ?? process.env;
    this.prefix = options.prefix ?? SECRET_ENV_PREFIX;
  }

  /** The variables `get(name)` reads, in order. */
  variables(name: string): string[] {
    const upper = secretEnvName(name);
    return [...new Set([...(this.prefix === "" ? [] : [this.prefix + upper]), name, upper])];
  }

  async get(name: string): Promise<string | undefined> {
    for (const variable of this.variables(name)) {
      const value = this.env[variable];
      if (value !== undefined) return value;
    }
    return undefined;
  }

  describeLookup(name: string): string {
    return `environment variables (${this.variables(name).join(", ")})`;
  }
}

/**
 * Secrets as files in one directory, the file named exactly like the secret
 * (Docker's /run/secrets, a Kubernetes secret volume; symlinks are followed).
 * One trailing line ending ("\n" or "\r\n") is removed, as `echo` and editors
 * add it; anything else is the value. A name that is not a plain file name
 * (empty, ".", "..", containing "/" or "\") is refused, so a secret name can
 * never read a file outside the directory.
 *
 * @example
 * // /run/secrets/db_password holds "s3cret!\n"
 * await new FileSecretBackend("/run/secrets").get("db_password"); // → "s3cret!"
 */
export class FileSecretBackend implements SecretBackend {
  readonly dir: string;
  readonly name: string;

  constructor(dir: string) {
    this.dir = path.resolve(dir);
    this.name = `directory ${this.dir}`;
  }

  /** The file that holds `name`; throws SECRET_NAME_INVALID for a name that is not a plain file name. */
  fileFor(name: string): string {
    if (!isPlainFileName(name)) {
      throw new TributaryError(
        SECRET_ERROR_CODES.nameInvalid,
        `secret ${JSON.stringify(name)} cannot be read from ${this.name}: a secret name there is a file name, ` +
          `so it must not be empty, "." or "..", or contain "/", "\\" or a NUL character. Use the file's name inside the directory`,
      );
    }
    return path.join(this.dir, name);
  }

  async get(name: string): Promise<string | undefined> {
    const file = this.fileFor(name);
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return undefined;
      const why = code === "EISDIR" ? "it is a directory" : code === "EACCES" ? "permission denied" : (err as Error).message;
      throw new TributaryError(
        SECRET_ERROR_CODES.backendFailed,
        `secret ${JSON.stringify(name)}: cannot read ${file} (${why}); make it a file the process that runs the steps can read`,
        { cause: err },
      );
    }
    if (text.endsWith("\r\n")) return text.slice(0, -2);
    if (text.endsWith("\n")) return text.slice(0, -1);
    return text;
  }

  describeLookup(name: string): string {
    return isPlainFileName(name) ? `file ${path.join(this.dir, name)}` : this.name;
  }
}

function isPlainFileName(name: string): boolean {
  return name !== "" && name !== "." && name !== ".." && !/[/\\\0]/.test(name);
}

/**
 * Asks each backend in order; the first value found wins. A backend that
 * throws stops the search (it could not tell, and skipping it could silently
 * pick a stale value from the next one). A backend that returns something
 * other than a string or undefined (null counts as undefined) is reported,
 * without the value.
 */
export class ChainSecretBackend implements SecretBackend {
  readonly name: string;
  readonly backends: readonly SecretBackend[];

  constructor(backends: readonly SecretBackend[]) {
    if (backends.length === 0) throw new TypeError("ChainSecretBackend needs at least one backend");
    this.backends = Object.freeze([...backends]);
    this.name = joinAnd(this.backends.map((b) => b.name));
  }

  async get(name: string): Promise<string | undefined> {
    for (const backend of this.backends) {
      const value = await askBackend(backend, name);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  describeLookup(name: string): string {
    return joinAnd(this.backends.map((b) => lookupOf(b, name)));
  }
}

async function askBackend(backend: SecretBackend, name: string): Promise<string | undefined> {
  let value: unknown;
  try {
    value = await backend.get(name);
  } catch (err) {
    if (err instanceof TributaryError) throw err;
    throw new TributaryError(
      SECRET_ERROR_CODES.backendFailed,
      `secret ${JSON.stringify(name)}: the ${backend.name} backend failed: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw new TributaryError(
      SECRET_ERROR_CODES.backendFailed,
      `secret ${JSON.stringify(name)}: the ${backend.name} backend returned ${value === null ? "null" : `a ${typeof value}`}; ` +
        `get(name) must resolve to a string, or undefined when it has no such secret`,
    );
  }
  return value;
}

function lookupOf(backend: SecretBackend, name: string): string {
  return typeof backend.describeLookup === "function" ? backend.describeLookup(name) : backend.name;
}

function joinAnd(parts: readonly string[]): string {
  return parts.length <= 1 ? (parts[0] ?? "") : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

/**
 * What `ctx.secrets.get` calls: fetches the value and registers it with the
 * try's redactor before returning it, so no log line of that try can show it.
 * Errors name the secret and where it was looked for, never a value.
 *
 * @example
 * import type { StepDispatch } from "../execution/index.js";
 * import type { Redactor } from "./step-log.js";
 * // given redactor: Redactor, dispatch: StepDispatch
 * const resolver = new SecretResolver(await secretBackendFromEnv(process.env));
 * const password = await resolver.resolve("db_password", redactor, dispatch);
 */
export class SecretResolver {
  constructor(readonly backend: SecretBackend) {}

  async resolve(name: string, redactor: Redactor, requester?: SecretRequester): Promise<string> {
    const where = requester ? `${describeTry(requester)}: ` : "";
    const location = requester ? tryLocation(requester) : undefined;
    const fail = (code: string, message: string, cause?: unknown): TributaryError =>
      new TributaryError(code, where + message, {
        ...(location ? { location } : {}),
        ...(cause === undefined ? {} : { cause }),
      });
    if (typeof name !== "string" || name === "") {
      throw fail(
        SECRET_ERROR_CODES.nameInvalid,
        `ctx.secrets.get(name) takes a secret's name, a non-empty string; it was given ${name === "" ? "an empty string" : typeof name}`,
      );
    }
    let value: string | undefined;
    try {
      value = await askBackend(this.backend, name);
    } catch (err) {
      if (err instanceof TributaryError) throw fail(err.code, err.message, err.cause);
      throw err;
    }
    if (value === undefined) {
      throw fail(
        SECRET_ERROR_CODES.missing,
        `secret ${JSON.stringify(name)} is not set: looked in ${lookupOf(this.backend, name)}. Set it in one of those ` +
          `places for the process that runs the steps (tributary dev or tributary worker); environment variables are read ` +
          `when that process starts, so restart it after setting one`,
      );
    }
    redactor.add(value);
    return value;
  }
}

/**
 * The backend the settings describe: environment variables always; then the
 * files in TRIBUTARY_SECRETS_DIR when it is set; then the module named by
 * TRIBUTARY_SECRETS_BACKEND when it is set. A directory that does not exist or
 * a module without a usable default export stops startup with an error naming
 * the variable and the path.
 *
 * @example
 * const backend = await secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: "/run/secrets" });
 * backend.name; // → "environment variables and directory /run/secrets"
 */
export async function secretBackendFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<ChainSecretBackend> {
  const backends: SecretBackend[] = [new EnvSecretBackend({ env })];
  const dir = env[SECRETS_DIR_ENV] || undefined;
  if (dir) backends.push(new FileSecretBackend(checkSecretsDir(dir)));
  const module = env[SECRETS_BACKEND_ENV] || undefined;
  if (module) backends.push(await loadSecretBackend(module));
  return new ChainSecretBackend(backends);
}

function checkSecretsDir(dir: string): string {
  const resolved = path.resolve(dir);
  let isDirectory: boolean;
  try {
    isDirectory = statSync(resolved).isDirectory();
  } catch (cause) {
    throw new InputError(
      `${SECRETS_DIR_ENV}: ${resolved} cannot be read (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}); ` +
        `point it at the directory that holds one file per secret, or unset it`,
      { code: SECRET_ERROR_CODES.configInvalid, location: { file: resolved }, cause },
    );
  }
  if (!isDirectory) {
    throw new InputError(`${SECRETS_DIR_ENV}: ${resolved} is not a directory; point it at the directory that holds one file per secret`, {
      code: SECRET_ERROR_CODES.configInvalid,
      location: { file: resolved },
    });
  }
  return resolved;
}

/**
 * Imports a module whose default export is a SecretBackend (an object with
 * an async `get(name)` and, ideally, a `name`). Without a `name`, the backend
 * is called after its file in errors.
 */
export async function loadSecretBackend(file: string): Promise<SecretBackend> {
  const resolved = path.resolve(file);
  const invalid = (problem: string, cause?: unknown): InputError =>
    new InputError(`${SECRETS_BACKEND_ENV}: secret backend module ${resolved} ${problem}`, {
      code: SECRET_ERROR_CODES.configInvalid,
      location: { file: resolved },
      ...(cause === undefined ? {} : { cause }),
    });
  if (!exists(resolved)) throw invalid("does not exist; point the variable at a module file (.mjs, .js)");
  let mod: Record<string, unknown>;
  try {
    await allowTypeScriptImports();
    mod = (await import(pathToFileURL(resolved).href)) as Record<string, unknown>;
  } catch (cause) {
    throw invalid(`cannot be imported: ${cause instanceof Error ? cause.message : String(cause)}`, cause);
  }
  const backend = mod["default"] as Partial<SecretBackend> | undefined;
  const shape = "export default an object with a name and an async get(name) method that resolves to the value or undefined";
  if (backend === undefined) throw invalid(`has no default export; ${shape}`);
  if (typeof backend !== "object" || backend === null) {
    throw invalid(
      `exports default ${backend === null ? "null" : `a ${typeof backend}`}; ${shape} (call a factory in the module and export its result)`,
    );
  }
  if (typeof backend.get !== "function") throw invalid(`exports default an object without a get method; ${shape}`);
  if (backend.name !== undefined && typeof backend.name !== "string")
    throw invalid(`exports default an object whose name is not a string; ${shape}`);
  const get = backend.get.bind(backend);
  const describeLookup = typeof backend.describeLookup === "function" ? backend.describeLookup.bind(backend) : undefined;
  return Object.freeze({
    name: backend.name || `backend module ${resolved}`,
    get,
    ...(describeLookup ? { describeLookup } : {}),
  });
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * A failed step's error with the try's secret values and any API or access
 * token masked in its messages and stacks: what the runtime should report (it
 * is stored in the database and written to the log by the parent, which has
 * no redactor).
 */
export function redactSerializedError(error: SerializedError, redactor: Redactor): SerializedError {
  const message = redactor.redact(error.message);
  const stack = error.stack === undefined ? undefined : redactor.redact(error.stack);
  const cause = error.cause === undefined ? undefined : redactSerializedError(error.cause, redactor);
  // Nothing to mask (the usual case): the error itself.
  if (message === error.message && stack === error.stack && cause === error.cause) return error;
  const out: SerializedError = { ...error, message };
  if (stack !== undefined) out.stack = stack;
  if (cause !== undefined) out.cause = cause;
  return out;
}

/** The secret backends a worker process configures from its environment, loaded on first use (loading may import a module). */
export class SettingsSecretBackend implements SecretBackend {
  private loaded: SecretBackend | undefined;
  private loading: Promise<SecretBackend> | undefined;

  get name(): string {
    return this.loaded?.name ?? "environment variables";
  }

  async get(name: string): Promise<string | undefined> {
    this.loading ??= secretBackendFromEnv(process.env).then((backend) => (this.loaded = backend));
    return (await this.loading).get(name);
  }

  describeLookup(name: string): string {
    return this.loaded?.describeLookup?.(name) ?? this.name;
  }
}

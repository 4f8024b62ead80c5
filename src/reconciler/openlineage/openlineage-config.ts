import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";
import { InputError } from "../../errors/index.js";

export const OPENLINEAGE_URL_ENV = "TRIBUTARY_OPENLINEAGE_URL";
export const OPENLINEAGE_FILE_ENV = "TRIBUTARY_OPENLINEAGE_FILE";
export const OPENLINEAGE_NAMESPACE_ENV = "TRIBUTARY_OPENLINEAGE_NAMESPACE";
const CODE = "OPENLINEAGE_CONFIG_INVALID";

/** Where OpenLineage run events go: an OpenLineage HTTP endpoint (Marquez, DataHub) or a JSON-lines file. */
export type OpenLineageConfig =
  | { readonly kind: "http"; readonly url: string; readonly namespace: string }
  | { readonly kind: "file"; readonly file: string; readonly namespace: string };

/**
 * Reads the OpenLineage settings from the environment: undefined when neither
 * TRIBUTARY_OPENLINEAGE_URL nor TRIBUTARY_OPENLINEAGE_FILE is set. A URL that
 * is not http(s), a file that cannot be written, or both at once stop startup
 * with an error naming the variable.
 *
 * @example
 * parseOpenLineageConfig({ TRIBUTARY_OPENLINEAGE_URL: "http://marquez:5000" });
 * // → { kind: "http", url: "http://marquez:5000", namespace: "tributary://default" }
 */
export function parseOpenLineageConfig(env: NodeJS.ProcessEnv): OpenLineageConfig | undefined {
  const url = env[OPENLINEAGE_URL_ENV] || undefined;
  const file = env[OPENLINEAGE_FILE_ENV] || undefined;
  const namespace = env[OPENLINEAGE_NAMESPACE_ENV] || "tributary://default";
  if (url && file) {
    throw new InputError(
      `${OPENLINEAGE_URL_ENV} and ${OPENLINEAGE_FILE_ENV} are both set; OpenLineage events go to one place: unset one of them`,
      {
        code: CODE,
      },
    );
  }
  if (url) return { kind: "http", url: checkUrl(url), namespace };
  if (file) return { kind: "file", file: checkFile(file), namespace };
  return undefined;
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new InputError(`${OPENLINEAGE_URL_ENV}: "${url}" is not a URL; write the endpoint's base, e.g. http://marquez:5000`, {
      code: CODE,
      cause,
    });
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new InputError(
      `${OPENLINEAGE_URL_ENV}: "${parsed.protocol}" URLs are not supported; give an http:// or https:// base URL (events are POSTed to <url>/api/v1/lineage)`,
      { code: CODE },
    );
  }
  return url.replace(/\/+$/, "");
}

function checkFile(file: string): string {
  const resolved = path.resolve(file);
  const exists = statSafe(resolved);
  if (exists?.isDirectory()) {
    throw new InputError(`${OPENLINEAGE_FILE_ENV}: ${resolved} is a directory; name a file to append JSON lines to`, {
      code: CODE,
      location: { file: resolved },
    });
  }
  const target = exists ? resolved : path.dirname(resolved);
  try {
    accessSync(target, constants.W_OK);
  } catch (cause) {
    throw new InputError(
      `${OPENLINEAGE_FILE_ENV}: ${resolved} cannot be written (${exists ? "the file" : `its directory ${target}`} is not writable or does not exist); ` +
        `point it at a writable path`,
      { code: CODE, location: { file: resolved }, cause },
    );
  }
  return resolved;
}

function statSafe(file: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { TributaryError } from "../errors/index.js";
import * as sdk from "../index.js";
import { compiledCode, SDK_GLOBAL } from "../loader/index.js";
import { STEP_ERROR_CODES } from "./step-errors.js";

const requireBundle = createRequire(import.meta.url);
let prepared = false;

/**
 * Imports a definitions file at one version of its code (StepDispatch.codeHash): the compiled file the loader
 * made of that version (see compiledCode), a module of its own per version, so a long-lived worker process runs
 * the code a step was planned with, never a stale copy of the first version it imported. Throws
 * STEP_CODE_UNAVAILABLE when that code can no longer be found.
 */
export async function importVersion(file: string, codeHash: string): Promise<Record<string, unknown>> {
  if (!prepared) {
    prepared = true;
    // Compiled definitions import `tributary` from here: this process's SDK, the one the step runtime knows.
    (globalThis as Record<symbol, unknown>)[Symbol.for(SDK_GLOBAL)] ??= sdk;
    // Stack traces of the step's code point at its sources through the compiled file's source map.
    process.setSourceMapsEnabled(true);
  }
  const code = await compiledCode(file, codeHash);
  if (!code.ok) {
    throw new TributaryError(
      STEP_ERROR_CODES.codeUnavailable,
      `the code of ${file} it was planned with (code version ${codeHash.slice(0, 12)}) is not available here: ${code.message}. ` +
        `Launch it again to run the definitions as they are now`,
    );
  }
  if (code.bundle.endsWith(".cjs")) return requireBundle(code.bundle) as Record<string, unknown>;
  return (await import(pathToFileURL(code.bundle).href)) as Record<string, unknown>;
}

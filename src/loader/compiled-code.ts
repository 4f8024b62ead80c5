import { access, readFile } from "node:fs/promises";
import path from "node:path";
import { cacheDir } from "./cache-dir.js";
import { codeRefFile, compileDefinitions } from "./compile-definitions.js";

/** Where a worker finds the code of one definitions version, or why it cannot. */
export type CompiledCode = { readonly ok: true; readonly bundle: string } | { readonly ok: false; readonly message: string };

/**
 * The compiled file (see compileDefinitions) that holds `file` as it was at `codeHash`: the one the loader made
 * when it loaded that version, while the build cache keeps it (a day after its last use), else the file as it
 * is now, compiled here, if it still has that code (a worker on another machine, a cleared cache). Every
 * version is a file of its own, so importing it gives a module of its own: a long-lived process runs each
 * version's code, never the first one it imported.
 * @example
 * import { createRequire } from "node:module";
 * import { pathToFileURL } from "node:url";
 * // given codeHash: string
 * const code = await compiledCode("/defs/orders.ts", codeHash);
 * if (code.ok) {
 *   const namespace = code.bundle.endsWith(".cjs") ? createRequire(import.meta.url)(code.bundle) : await import(pathToFileURL(code.bundle).href);
 * }
 */
export async function compiledCode(file: string, codeHash: string): Promise<CompiledCode> {
  const outDir = path.join(await cacheDir(), "definitions");
  const known = await bundleOf(outDir, file, codeHash);
  if (known) return { ok: true, bundle: known };
  const compiled = (await compileDefinitions(path.dirname(file), [path.basename(file)])).files.get(path.basename(file));
  if (compiled?.status === "ok" && compiled.codeHash === codeHash) return { ok: true, bundle: compiled.bundle };
  const now = compiled?.status === "ok" ? "has other code now" : `does not compile now (${compiled?.error.message ?? "no output"})`;
  return {
    ok: false,
    message: `${file} (or a file it imports) ${now}, and the build cache no longer holds the compiled code of that version`,
  };
}

async function bundleOf(outDir: string, file: string, codeHash: string): Promise<string | undefined> {
  const name = await readFile(await codeRefFile(outDir, file, codeHash), "utf8").catch(() => undefined);
  if (!name || name.includes("/") || name.includes(path.sep)) return undefined;
  const bundle = path.join(outDir, name);
  return (await access(bundle).then(
    () => true,
    () => false,
  ))
    ? bundle
    : undefined;
}

import { createHash } from "node:crypto";
import { readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { cacheDir } from "./cache-dir.js";

const SRC_DIR = fileURLToPath(new URL("../", import.meta.url));
const PACKAGE_JSON = fileURLToPath(new URL("../../package.json", import.meta.url));
const ENTRY = fileURLToPath(new URL("./child-main.ts", import.meta.url));
/** Runtimes built from other sources are removed once they are this old (a running `tributary dev` may still use a recent one). */
const STALE_AFTER_MS = 24 * 3_600_000;

export interface ChildRuntime {
  /** The bundle: child-main.ts with the SDK and every package they use, as one CommonJS script. */
  readonly file: string;
  /** Where children keep V8's code cache for the bundle; one per heap limit, because V8 rejects a cache made under other flags. */
  codeCacheFile(memoryMb: number): string;
}

let cached: { key: string; file: string } | undefined;

/**
 * What a definitions child runs, built with esbuild and cached by the hash of
 * the sources (and of the installed versions of the packages bundled in).
 *
 * Why one bundle: a child loads the SDK once and then exits, so loading it
 * must be cheap. One script instead of ~200 modules (zod alone has a hundred)
 * saves most of the module loading, and as a script its compiled code can be
 * cached by V8 across children (child-entry.mjs), which node 20 does not do
 * for modules.
 */
export async function childRuntime(): Promise<ChildRuntime> {
  const dir = await cacheDir();
  const key = await runtimeKey();
  const file = path.join(dir, `runtime-${key.slice(0, 16)}.cjs`);
  // Checked every time: another process may have cleaned the cache.
  if (cached?.key !== key || !(await isFile(file))) {
    if (!(await isFile(file))) await buildRuntime(file, dir);
    cached = { key, file };
  }
  return {
    file,
    codeCacheFile: (memoryMb) => `${file.slice(0, -".cjs".length)}.${process.version}-${process.arch}-${memoryMb}mb.v8cache`,
  };
}

async function buildRuntime(file: string, dir: string): Promise<void> {
  // Built under a unique name and renamed: concurrent loaders never see half a file.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await build({
    entryPoints: [ENTRY],
    outfile: tmp,
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    logLevel: "silent",
    legalComments: "none",
  });
  await rename(tmp, file);
  // Runtimes of other sources (and their code caches) pile up while the SDK
  // is being edited; old ones go. `sdk-*` are the bundles of earlier versions.
  const cutoff = Date.now() - STALE_AFTER_MS;
  const current = path.basename(file, ".cjs");
  for (const name of await readdir(dir)) {
    if (!/^(?:runtime|sdk)-/.test(name) || name.startsWith(current)) continue;
    const other = path.join(dir, name);
    const info = await stat(other).catch(() => undefined);
    if (info?.isFile() && info.mtimeMs < cutoff) await rm(other, { force: true });
  }
}

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() === true;
}

/** sha256 over every TypeScript source under `src/` and the installed version of every dependency. */
async function runtimeKey(): Promise<string> {
  const hash = createHash("sha256");
  const walk = async (rel: string): Promise<void> => {
    const entries = (await readdir(path.join(SRC_DIR, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const childRel = path.join(rel, e.name);
      if (e.isDirectory()) await walk(childRel);
      else if (/\.m?ts$/.test(e.name)) hash.update(childRel).update("\0").update(await readFile(path.join(SRC_DIR, childRel))).update("\0");
    }
  };
  await walk("");
  const { dependencies = {} } = JSON.parse(await readFile(PACKAGE_JSON, "utf8")) as { dependencies?: Record<string, string> };
  const require = createRequire(PACKAGE_JSON);
  for (const name of Object.keys(dependencies).sort()) hash.update(`${name}@${await installedVersion(require, name)}\0`);
  return hash.digest("hex");
}

async function installedVersion(require: NodeJS.Require, name: string): Promise<string> {
  for (const dir of require.resolve.paths(name) ?? []) {
    try {
      return (JSON.parse(await readFile(path.join(dir, name, "package.json"), "utf8")) as { version?: string }).version ?? "?";
    } catch {
      // Not installed there.
    }
  }
  return "missing";
}

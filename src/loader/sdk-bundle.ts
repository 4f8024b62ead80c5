import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The SDK as definitions files see it, unbundled: every module through tsx. */
export const SDK_SOURCE_URL = new URL("../index.ts", import.meta.url).href;

const SRC_DIR = fileURLToPath(new URL("../", import.meta.url));
// Under node_modules: the SDK's own dependencies resolve from there, and the
// SDK's call-site detection (callerFile) skips frames in node_modules.
const CACHE_DIR = path.join(SRC_DIR, "..", "node_modules", ".cache", "tributary");

const STALE_AFTER_MS = 24 * 3_600_000;

interface Esbuild {
  build(options: Record<string, unknown>): Promise<unknown>;
}

let cached: { key: string; url: string } | undefined;

/**
 * The URL definitions children load the SDK from: a single-file ES module
 * bundle of `src/index.ts` (third-party packages stay external), built with
 * the esbuild that tsx brings and cached by the hash of the sources.
 *
 * Why: each child loads the SDK once, and through tsx's hooks its ~60
 * TypeScript modules cost about as much CPU as the rest of the child's
 * start-up; the bundle is plain JS, loaded before the hooks exist. With
 * 1 000 files, that is most of the loader's time. When the bundle cannot be
 * built (no esbuild, read-only install), children load the sources instead:
 * slower, same behaviour.
 */
export async function sdkEntryUrl(): Promise<string> {
  try {
    const key = await sourcesHash(SRC_DIR);
    const file = path.join(CACHE_DIR, `sdk-${key.slice(0, 16)}.mjs`);
    // Checked every time: another process may have cleaned the cache.
    if (cached?.key !== key || !(await isFile(file))) {
      if (!(await isFile(file))) await buildBundle(file);
      cached = { key, url: pathToFileURL(file).href };
    }
    return cached.url;
  } catch {
    return SDK_SOURCE_URL;
  }
}

async function buildBundle(file: string): Promise<void> {
  const requireFromTsx = createRequire(createRequire(import.meta.url).resolve("tsx"));
  const esbuildModule = (await import(pathToFileURL(requireFromTsx.resolve("esbuild")).href)) as Esbuild & { default?: Esbuild };
  const esbuild = esbuildModule.default ?? esbuildModule;
  await mkdir(CACHE_DIR, { recursive: true });
  // Built under a unique name and renamed: concurrent loaders never see half a file.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await esbuild.build({
    entryPoints: [fileURLToPath(SDK_SOURCE_URL)],
    outfile: tmp,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    logLevel: "silent",
    legalComments: "none",
  });
  await rename(tmp, file);
  // Bundles of other sources pile up while the SDK is being edited. Only old
  // ones go: a running `tributary dev` may still be using a recent one.
  const cutoff = Date.now() - STALE_AFTER_MS;
  for (const name of await readdir(CACHE_DIR)) {
    const other = path.join(CACHE_DIR, name);
    if (!name.startsWith("sdk-") || other === file) continue;
    const info = await stat(other).catch(() => undefined);
    if (info && info.mtimeMs < cutoff) await rm(other, { force: true });
  }
}

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() === true;
}

/** sha256 over every TypeScript source under `src/`: whatever the SDK imports is in there. */
async function sourcesHash(dir: string): Promise<string> {
  const hash = createHash("sha256");
  const walk = async (rel: string): Promise<void> => {
    const entries = (await readdir(path.join(dir, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const childRel = path.join(rel, e.name);
      if (e.isDirectory()) await walk(childRel);
      else if (/\.m?ts$/.test(e.name)) hash.update(childRel).update("\0").update(await readFile(path.join(dir, childRel))).update("\0");
    }
  };
  await walk("");
  return hash.digest("hex");
}

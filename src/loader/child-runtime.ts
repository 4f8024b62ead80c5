import { createHash } from "node:crypto";
import { readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
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

/**
 * What a definitions child runs, built with esbuild and cached by the hash of
 * its sources (and of the installed versions of the packages bundled in).
 *
 * Why one bundle: a child loads the SDK once and then exits, so loading it
 * must be cheap. One script instead of ~170 modules (zod alone has a hundred)
 * saves most of the module loading, and as a script its compiled code can be
 * cached by V8 across children (child-entry.cjs), which node 20 does not do
 * for modules.
 */
export async function childRuntime(): Promise<ChildRuntime> {
  const dir = await cacheDir();
  // One manifest per checkout: installs shared by several checkouts must not read each other's sources.
  const manifest = path.join(dir, `runtime-sources-${createHash("sha256").update(SRC_DIR).digest("hex").slice(0, 12)}.json`);
  // The sources the last build read: if none changed, its bundle is current.
  const sources = await readFile(manifest, "utf8")
    .then((text) => JSON.parse(text) as unknown)
    .then((list) => (Array.isArray(list) ? list.filter((f): f is string => typeof f === "string") : []))
    .catch(() => []);
  let file = sources.length > 0 ? bundleFile(dir, await sourcesKey(await readSources(sources))) : undefined;
  if (file === undefined || !(await isFile(file))) file = await buildRuntime(dir, manifest);
  const base = file.slice(0, -".cjs".length);
  return { file, codeCacheFile: (memoryMb) => `${base}.${process.version}-${process.arch}-${memoryMb}mb.v8cache` };
}

function bundleFile(dir: string, key: string): string {
  return path.join(dir, `runtime-${key.slice(0, 16)}.cjs`);
}

async function buildRuntime(dir: string, manifest: string): Promise<string> {
  // The key is the hash of what the build read, so a source edited meanwhile cannot hide behind it.
  const read = new Map<string, Uint8Array>();
  // Built under a unique name and renamed: concurrent loaders never see half a file.
  const tmp = path.join(dir, `runtime-tmp-${process.pid}-${Date.now()}`);
  await build({
    entryPoints: [ENTRY],
    outfile: tmp,
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    // Half the bytes for each child to read and V8 to scan; names stay, for stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "silent",
    legalComments: "none",
    plugins: [
      {
        name: "record-sources",
        setup(b) {
          // Packages are covered by their versions (see sourcesKey).
          b.onLoad({ filter: /\.m?ts$/ }, async (args) => {
            if (path.relative(SRC_DIR, args.path).startsWith("..")) return undefined;
            const contents = await readFile(args.path);
            read.set(args.path, contents);
            return { contents, loader: "ts" };
          });
        },
      },
    ],
  });
  const file = bundleFile(dir, await sourcesKey(read));
  await rename(tmp, file);
  await writeFile(`${tmp}.json`, JSON.stringify([...read.keys()].sort()));
  await rename(`${tmp}.json`, manifest);
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
  return file;
}

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() === true;
}

async function readSources(files: readonly string[]): Promise<Map<string, Uint8Array | undefined>> {
  const contents = await Promise.all(files.map((f) => readFile(f).catch(() => undefined)));
  return new Map(files.map((f, i) => [f, contents[i]]));
}

/** sha256 over the sources (a missing one never matches) and the installed version of every dependency. */
async function sourcesKey(sources: ReadonlyMap<string, Uint8Array | undefined>): Promise<string> {
  const hash = createHash("sha256");
  for (const file of [...sources.keys()].sort()) {
    const contents = sources.get(file) ?? Buffer.from(`missing ${Math.random()}`);
    hash.update(path.relative(SRC_DIR, file)).update("\0").update(contents).update("\0");
  }
  const { dependencies = {} } = JSON.parse(await readFile(PACKAGE_JSON, "utf8")) as { dependencies?: Record<string, string> };
  const require = createRequire(PACKAGE_JSON);
  const versions = await Promise.all(
    Object.keys(dependencies)
      .sort()
      .map((name) => installedVersion(require, name)),
  );
  return hash.update(versions.join("\0")).digest("hex");
}

async function installedVersion(require: NodeJS.Require, name: string): Promise<string> {
  for (const dir of require.resolve.paths(name) ?? []) {
    try {
      const { version } = JSON.parse(await readFile(path.join(dir, name, "package.json"), "utf8")) as { version?: string };
      return `${name}@${version ?? "?"}`;
    } catch {
      // Not installed there.
    }
  }
  return `${name}@missing`;
}

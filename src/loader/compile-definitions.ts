import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, realpath, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { isBuiltin } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build, type BuildFailure, type BuildOptions, type Loader, type Message, type Plugin } from "esbuild";
import * as sdk from "../index.js";
import type { SerializedError } from "../errors/index.js";
import { cacheDir } from "./cache-dir.js";
import { SDK_GLOBAL } from "./child-protocol.js";
import { describeCompileFailure } from "./load-failure.js";

export type CompiledFile = {
  /** Other files under the definitions directory that the file imports (transitively), relative and `/`-separated, sorted. */
  readonly imports: readonly string[];
} & (
  | {
      readonly status: "ok";
      /** The compiled file (absolute): a CommonJS script (`.cjs`) or an ES module (`.mjs`). */
      readonly bundle: string;
      /** It imports what may open TLS connections: `tls`, `https`, `http2` or a package. */
      readonly tls: boolean;
      /** Identifies the code: the file and every local file it imports (see codeHashOf); a worker imports the bundle by it. */
      readonly codeHash: string;
    }
  | { readonly status: "error"; readonly error: SerializedError }
);

/** What one build saw, through the plugin. */
interface BuildRecord {
  /** Absolute paths of the files it read. */
  readonly read: Set<string>;
  /** sha256 of each file's bytes as read. */
  readonly hashes: Map<string, string>;
  /** A package from node_modules stays an import. */
  packages: boolean;
  tls: boolean;
}

export interface CompiledDefinitions {
  /** The definitions directory, absolute, symlinks resolved: what the compiled files' source maps point into. */
  readonly dir: string;
  readonly files: ReadonlyMap<string, CompiledFile>;
}

/** Compiled files nobody has used for this long are removed. */
const STALE_AFTER_MS = 24 * 3_600_000;
const SDK_NAMESPACE = "tributary-sdk";
const META_NAMESPACE = "tributary-import-meta";
const META_PREFIX = `${META_NAMESPACE}:`;
const META_BINDING = "__tributary_import_meta";
const LOADERS: Readonly<Record<string, Loader>> = {
  ".ts": "ts",
  ".mts": "ts",
  ".cts": "ts",
  ".tsx": "tsx",
  ".js": "js",
  ".mjs": "js",
  ".cjs": "js",
  ".jsx": "jsx",
};
const TLS_MODULES = new Set(["tls", "https", "http2"]);
/** esbuild's complaint when a CommonJS build meets top-level await. */
const TOP_LEVEL_AWAIT = /top-level await/i;
/** Marks the plugin's own resolve calls, so it does not answer itself. */
const RESOLVING = Symbol("resolving");

/** `import … from "tributary"` in a definitions file: the SDK instance of the child runtime (see child-main.ts). */
const SDK_MODULE =
  `const sdk = globalThis[Symbol.for(${JSON.stringify(SDK_GLOBAL)})];\n` +
  // Named, so that importing a name the SDK lacks fails the build with the file's line.
  `export const { ${Object.keys(sdk).join(", ")} } = sdk;\n`;

const BUILD_OPTIONS = {
  bundle: true,
  write: false,
  platform: "node",
  target: "node20",
  // Stack traces in the child map back to the sources: error positions and the SDK's `definedIn` need them.
  sourcemap: "inline",
  sourcesContent: false,
  // Packages resolve as node resolves them for an ES module (no bundler-only `module` field or condition).
  conditions: [],
  mainFields: ["main"],
  // Each local module's import.meta describes its source file, not the compiled file (see the plugin).
  define: {
    "import.meta.url": `${META_BINDING}.url`,
    "import.meta.filename": `${META_BINDING}.filename`,
    "import.meta.dirname": `${META_BINDING}.dirname`,
  },
  logLevel: "silent",
} satisfies BuildOptions;

let pruned = false;

/**
 * Compiles each definitions file, with the local files it imports, into one
 * file (esbuild, one build per file, all at once) in the cache directory,
 * named by the hash of its content. Children then load that with plain node:
 * no TypeScript hooks, a single file to read.
 *
 * What stays an import: `tributary` (the child's SDK instance), node
 * built-ins, and packages in node_modules, by absolute URL, resolved from
 * the importing file (from the cache directory a bare name would find other
 * packages). Local files and packages outside node_modules (workspace
 * links, tsconfig paths) are bundled. A file that does not compile gets its
 * error (file:line:col) here and never reaches a child; the others are not
 * affected. `imports` lists the local files each build read, even one that
 * failed, so watch mode knows whom a change concerns.
 */
export async function compileDefinitions(dir: string, relFiles: readonly string[]): Promise<CompiledDefinitions> {
  const root = await realpath(dir).catch(() => path.resolve(dir));
  const outDir = path.join(await cacheDir(), "definitions");
  await mkdir(outDir, { recursive: true });
  if (!pruned) {
    pruned = true;
    void prune(outDir);
  }
  const compiled = await Promise.all(relFiles.map((rel) => compileOne(root, rel, outDir)));
  return { dir: root, files: new Map(relFiles.map((rel, i) => [rel, compiled[i]!])) };
}

async function compileOne(root: string, rel: string, outDir: string): Promise<CompiledFile> {
  const entry = path.join(root, ...rel.split("/"));
  const record: BuildRecord = { read: new Set(), hashes: new Map(), packages: false, tls: false };
  const imports = (): string[] =>
    [...record.read]
      .map((f) => path.relative(root, f).split(path.sep).join("/"))
      .filter((f) => f !== rel && !f.startsWith("../") && !path.isAbsolute(f) && !f.split("/").includes("node_modules"))
      .sort();
  const compile = async (format: "cjs" | "esm"): Promise<Uint8Array> => {
    const result = await build({
      ...BUILD_OPTIONS,
      entryPoints: [entry],
      format,
      // The sources are ES modules, strict throughout, wherever they end up.
      ...(format === "cjs" ? { banner: { js: '"use strict";' } } : {}),
      absWorkingDir: root,
      // Source maps name the sources relative to this directory, where the compiled file goes.
      outdir: outDir,
      plugins: [definitionsPlugin(record)],
    });
    const output = result.outputFiles[0];
    if (!output) throw new Error("esbuild produced no output");
    return output.contents;
  };
  try {
    // A CommonJS script when the file allows: node loads it without starting its ES module loader,
    // a good part of what a child costs. Files with top-level await, and files that import packages
    // (how an ES module and a package meet stays node's business), become ES modules.
    let format: "cjs" | "esm" = "cjs";
    let contents = await compile("cjs").catch((err: unknown) => {
      if (!(err as Partial<BuildFailure>).errors?.some((m) => TOP_LEVEL_AWAIT.test(m.text))) throw err;
      return undefined;
    });
    if (!contents || record.packages) {
      format = "esm";
      contents = await compile("esm");
    }
    const bundle = await store(outDir, contents, format);
    const codeHash = codeHashOf(entry, record.hashes);
    await storeCodeRef(outDir, entry, codeHash, bundle);
    return { status: "ok", bundle, tls: record.tls || record.packages, codeHash, imports: imports() };
  } catch (err) {
    const messages = (err as Partial<BuildFailure>).errors ?? [];
    const first = messages.find((m) => m.location) ?? messages[0];
    const ctx = { dir: root, file: entry, relFile: rel };
    const error: SerializedError = first
      ? describeCompileFailure(failureOf(first, root, entry), ctx)
      : {
          name: "LoadError",
          code: "LOAD_IMPORT_ERROR",
          message: `${rel}: compiling the file failed: ${err instanceof Error ? err.message : String(err)}`,
          location: { file: rel },
        };
    return { status: "error", error, imports: imports() };
  }
}

function failureOf(message: Message, root: string, entry: string): { file: string; line: number; column: number; text: string } {
  const loc = message.location;
  if (!loc || (loc.namespace !== "file" && loc.namespace !== "")) return { file: entry, line: 0, column: 0, text: message.text };
  // esbuild counts columns in bytes, from 0.
  const column = Buffer.from(loc.lineText).subarray(0, loc.column).toString("utf8").length + 1;
  return { file: path.resolve(root, loc.file), line: loc.line, column, text: message.text };
}

function definitionsPlugin(record: BuildRecord): Plugin {
  return {
    name: "tributary-definitions",
    setup(b) {
      b.onResolve({ filter: /^tributary$/ }, () => ({ path: "tributary", namespace: SDK_NAMESPACE }));
      b.onLoad({ filter: /.*/, namespace: SDK_NAMESPACE }, () => ({ contents: SDK_MODULE, loader: "js" }));

      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === RESOLVING || path.isAbsolute(args.path)) return undefined;
        if (isBuiltin(args.path)) {
          if (TLS_MODULES.has(args.path.replace(/^node:/, ""))) record.tls = true;
          return undefined;
        }
        if (args.path.startsWith(META_PREFIX)) return { path: args.path.slice(META_PREFIX.length), namespace: META_NAMESPACE };
        const found = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: RESOLVING,
        });
        // Unresolvable: a static import fails the build (with esbuild's own message and position); a
        // dynamic one (perhaps in an asset function) is left for node, in case it ever runs.
        if (found.errors.length > 0) return args.kind === "dynamic-import" ? { path: args.path, external: true } : undefined;
        if (found.external || !found.path.split(path.sep).includes("node_modules")) {
          return {
            path: found.path,
            namespace: found.namespace,
            external: found.external,
            sideEffects: found.sideEffects,
            suffix: found.suffix,
          };
        }
        record.packages = true;
        return { path: pathToFileURL(found.path).href, external: true };
      });

      b.onLoad({ filter: /.*/, namespace: META_NAMESPACE }, (args) => ({
        contents:
          `export const url = ${JSON.stringify(pathToFileURL(args.path).href)};\n` +
          `export const filename = ${JSON.stringify(args.path)};\n` +
          `export const dirname = ${JSON.stringify(path.dirname(args.path))};\n`,
        loader: "js",
      }));

      b.onLoad({ filter: /.*/, namespace: "file" }, async (args) => {
        record.read.add(args.path);
        const bytes = await readFile(args.path);
        record.hashes.set(args.path, createHash("sha256").update(bytes).digest("hex"));
        const loader = LOADERS[path.extname(args.path)];
        if (!loader) return undefined;
        let contents = bytes.toString("utf8");
        // Appended (imports are hoisted), so every line and column stays where it was.
        if (contents.includes("import.meta") && !/\.c[jt]s$/.test(args.path)) {
          contents += `\n;import * as ${META_BINDING} from ${JSON.stringify(META_PREFIX + args.path)};\n`;
        }
        return { contents, loader };
      });
    },
  };
}

/** Writes a compiled file under the hash of its content, once; a reused one is touched, so pruning leaves it. */
async function store(outDir: string, contents: Uint8Array, format: "cjs" | "esm"): Promise<string> {
  const name = createHash("sha256").update(contents).digest("hex").slice(0, 32);
  const file = path.join(outDir, `${name}.${format === "cjs" ? "cjs" : "mjs"}`);
  const now = new Date();
  try {
    await utimes(file, now, now);
  } catch {
    // Written under a unique name and renamed: a concurrent loader never imports half a file.
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(tmp, contents);
    await rename(tmp, file);
  }
  return file;
}

/**
 * The code of a definitions file as a version: a hash of its bytes and of every local file the build read (a
 * helper it imports, a JSON file), each named relative to the file's directory, so the same sources hash the same
 * wherever the directory is. Packages from node_modules are not part of it.
 */
function codeHashOf(entry: string, hashes: ReadonlyMap<string, string>): string {
  const dir = path.dirname(entry);
  const lines = [...hashes].map(([file, hash]) => `${path.relative(dir, file).split(path.sep).join("/")}\0${hash}`).sort();
  return createHash("sha256")
    .update(["tributary.code.1", ...lines].join("\n"))
    .digest("hex")
    .slice(0, 32);
}

/** The name under which the compiled file of `entry` at `codeHash` is recorded: workers look it up (see compiledCode). */
export async function codeRefFile(outDir: string, entry: string, codeHash: string): Promise<string> {
  const dir = await realpath(path.dirname(entry)).catch(() => path.resolve(path.dirname(entry)));
  const key = createHash("sha256")
    .update(`${path.join(dir, path.basename(entry))}\0${codeHash}`)
    .digest("hex")
    .slice(0, 32);
  return path.join(outDir, `${key}.code`);
}

/** Records which compiled file holds `entry` at `codeHash` (the compiled file's own name is a hash of its output). */
async function storeCodeRef(outDir: string, entry: string, codeHash: string, bundle: string): Promise<void> {
  const ref = await codeRefFile(outDir, entry, codeHash);
  const text = path.basename(bundle);
  if ((await readFile(ref, "utf8").catch(() => undefined)) === text) {
    const now = new Date();
    await utimes(ref, now, now).catch(() => undefined);
    return;
  }
  const tmp = `${ref}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, ref);
}

/** How often the cache is pruned at most: every command is a process of its own, and a pass stats every file. */
const PRUNE_EVERY_MS = 3_600_000;
/** In the cache directory; its modification time is when it was last pruned. */
const PRUNED_MARKER = ".pruned";

/**
 * Deletes compiled files unused for a day, at most once an hour whichever process asks (the marker's time says when
 * the last pass began).
 */
export async function prune(outDir: string): Promise<void> {
  try {
    const marker = path.join(outDir, PRUNED_MARKER);
    const last = await stat(marker).catch(() => undefined);
    if (last && Date.now() - last.mtimeMs < PRUNE_EVERY_MS) return;
    // Claimed before the pass: processes starting meanwhile skip it (two passes at once would only repeat work).
    await writeFile(marker, "");
    const cutoff = Date.now() - STALE_AFTER_MS;
    for (const name of await readdir(outDir)) {
      if (name === PRUNED_MARKER) continue;
      const file = path.join(outDir, name);
      const info = await stat(file).catch(() => undefined);
      if (info?.isFile() && info.mtimeMs < cutoff) await rm(file, { force: true });
    }
  } catch {
    // Pruning is housekeeping; loading goes on without it.
  }
}

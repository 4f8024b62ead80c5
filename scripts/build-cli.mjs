#!/usr/bin/env node
// Precompiles the CLI and the child processes it starts (a LocalExecutor worker, a triggerer's trigger-kind
// child) into dist/cli with esbuild, so a command loads a few files of JavaScript instead of transpiling hundreds
// of TypeScript modules through tsx. `npm ci` (prepare) and `npm test` run it.
//
// bin/tributary.mjs runs the precompiled code only while dist/cli/inputs.json matches the sources: that file lists
// every file the build read with its size and modification time. Any difference, or no dist/cli at all, and it
// runs the sources through tsx.
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OUT_DIR = path.join(ROOT, "dist/cli");
const INPUTS_FILE = path.join(OUT_DIR, "inputs.json");
/**
 * Besides the sources esbuild reads: what decides how it reads them, and the lock file (when there is one), which
 * stands for the packages bundled from node_modules: npm rewrites it whenever they change, and their thousand files
 * are not listed one by one.
 */
const BUILD_INPUTS = ["tsconfig.json", "package.json", "package-lock.json", "scripts/build-cli.mjs"];
const META_NAMESPACE = "tributary-source-meta";
const META_BINDING = "__tributary_source_meta";
/** Output files of earlier builds are kept this long: a running process may still import one of its chunks. */
const OLD_OUTPUT_MS = 24 * 3_600_000;

const ENTRY_POINTS = {
  main: "src/cli/main.ts",
  // What definitions files import as `tributary` in these processes: the same module instances as the code around them.
  index: "src/index.ts",
  // Started as it is: it registers tsx only if it imports a user's file as it is (see typescript-imports.ts).
  "worker-child": "src/executor/worker-child.ts",
  "trigger-kind-entry": "src/triggerer/trigger-kind-entry.mjs",
};

/**
 * Each module's `import.meta.url` stays the URL of its source file, so paths the code finds relative to itself
 * (migrations, the UI, package.json, module hooks) are the same wherever the code was compiled to.
 * `import.meta.precompiled` is the URL of dist/cli/ in precompiled code (see src/precompiled.d.ts).
 */
const sourceMetaPlugin = {
  name: "source-meta",
  setup(b) {
    b.onResolve({ filter: new RegExp(`^${META_NAMESPACE}:`) }, (args) => ({
      path: args.path.slice(META_NAMESPACE.length + 1),
      namespace: META_NAMESPACE,
    }));
    b.onLoad({ filter: /.*/, namespace: META_NAMESPACE }, (args) => ({
      // Every output file is in OUT_DIR, so this module's own import.meta is OUT_DIR's wherever esbuild puts it.
      contents:
        `const meta = import.meta;\n` +
        `export const url = new URL(${JSON.stringify(path.relative(OUT_DIR, args.path).split(path.sep).join("/"))}, meta.url).href;\n` +
        `export const precompiled = new URL("./", meta.url).href;\n`,
      loader: "js",
    }));
    b.onLoad({ filter: /\.(?:m?ts|mjs)$/ }, async (args) => {
      if (args.path.split(path.sep).includes("node_modules")) return undefined;
      let contents = await readFile(args.path, "utf8");
      // Appended (imports are hoisted), so lines and columns stay where they were for the source map.
      if (contents.includes("import.meta")) {
        contents += `\n;import * as ${META_BINDING} from ${JSON.stringify(`${META_NAMESPACE}:${args.path}`)};\n`;
      }
      return { contents, loader: args.path.endsWith(".mjs") ? "js" : "ts" };
    });
  },
};

/**
 * Packages that stay in node_modules, loaded from there as they are from the sources: those with native or wasm files,
 * scripts or binaries found beside their code (PGlite, pg's optional native binding, esbuild, argon2, BullMQ's lua
 * scripts), and those only some processes load, imported when they are needed (the S3 SDK, BullMQ and ioredis,
 * openid-client and jose, tsx, GraphiQL's page). Every other package is bundled into the chunks: a command then reads
 * a few large files instead of resolving and compiling over a thousand small ones, which took a third of a second of
 * each start.
 */
const EXTERNAL_PACKAGES = new Set([
  "@electric-sql/pglite",
  "pg",
  "esbuild",
  "chokidar",
  "bullmq",
  "ioredis",
  "@node-rs/argon2",
  "openid-client",
  "jose",
  "tsx",
  "cli-progress",
  "@graphql-yoga/render-graphiql",
]);
const EXTERNAL_SCOPES = ["@aws-sdk/", "@smithy/"];
const externalPackages = {
  name: "external-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith("node:") || args.path.startsWith(`${META_NAMESPACE}:`)) return undefined;
      const parts = args.path.split("/");
      const name = args.path.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
      const external = EXTERNAL_PACKAGES.has(name) || EXTERNAL_SCOPES.some((scope) => name.startsWith(scope));
      return external ? { path: args.path, external: true } : undefined;
    });
  },
};

const started = performance.now();
await mkdir(OUT_DIR, { recursive: true });
// Gone first: while the build runs, a starting command finds no match and runs the sources.
await rm(INPUTS_FILE, { force: true });

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRY_POINTS,
  outdir: OUT_DIR,
  outExtension: { ".js": ".mjs" },
  entryNames: "[name]",
  chunkNames: "chunk-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  plugins: [sourceMetaPlugin, externalPackages],
  // Bundled CommonJS packages call require (Node's own modules, their optional parts) at run time.
  banner: {
    js: 'import { createRequire as __tributaryCreateRequire } from "node:module"; const require = __tributaryCreateRequire(import.meta.url);',
  },
  sourcemap: "linked",
  sourcesContent: false,
  define: {
    "import.meta.url": `${META_BINDING}.url`,
    "import.meta.precompiled": `${META_BINDING}.precompiled`,
    // Read unguarded only by graphql-js, which otherwise looks for a second copy of itself behind every failed
    // instanceof of its execution (a tenth of answering `assets { partitionStatus { counts } }` over 10 000 assets):
    // the bundle holds exactly one copy.
    "process.env.NODE_ENV": '"production"',
  },
  metafile: true,
  write: false,
  logLevel: "warning",
});

// Chunks before entry points, each written under a temporary name and renamed: a command starting meanwhile never
// reads half a file, and one that started before still finds its chunks (named by their content).
const outputs = [...result.outputFiles].sort((a, b) => Number(isEntry(a.path)) - Number(isEntry(b.path)));
for (const file of outputs) {
  const tmp = `${file.path}.${process.pid}.tmp`;
  await writeFile(tmp, file.contents);
  await rename(tmp, file.path);
}
const written = new Set(outputs.map((f) => f.path));
const cutoff = Date.now() - OLD_OUTPUT_MS;
for (const name of await readdir(OUT_DIR)) {
  const file = path.join(OUT_DIR, name);
  if (written.has(file) || file === INPUTS_FILE) continue;
  const info = await stat(file).catch(() => undefined);
  if (info && (info.mtimeMs < cutoff || name.endsWith(".tmp"))) await rm(file, { force: true });
}

const inputs = [
  ...new Set([
    ...Object.keys(result.metafile.inputs)
      .filter((p) => !p.startsWith(`${META_NAMESPACE}:`) && !p.split(/[\\/]/).includes("node_modules"))
      .map((p) => path.resolve(ROOT, p)),
    ...BUILD_INPUTS.map((p) => path.join(ROOT, p)).filter((p) => existsSync(p)),
  ]),
].sort();
const files = {};
for (const file of inputs) {
  const info = await stat(file);
  files[path.relative(ROOT, file).split(path.sep).join("/")] = { size: info.size, mtimeMs: info.mtimeMs };
}
const tmp = `${INPUTS_FILE}.${process.pid}.tmp`;
await writeFile(tmp, `${JSON.stringify({ entryPoints: Object.keys(ENTRY_POINTS), files }, null, 1)}\n`);
await rename(tmp, INPUTS_FILE);

const ms = Math.round(performance.now() - started);
process.stderr.write(`build-cli: ${inputs.length} files compiled into ${path.relative(ROOT, OUT_DIR)} in ${ms} ms\n`);

function isEntry(file) {
  return Object.keys(ENTRY_POINTS).some((name) => path.basename(file) === `${name}.mjs`);
}

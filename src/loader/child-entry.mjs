// The first module of a definitions child process: plain JS for plain node,
// with no TypeScript hooks. argv: the child runtime (child-main.ts bundled with
// the SDK and its packages, as one CommonJS script; see child-runtime.ts), the
// file for V8's code cache of it, and the load request (JSON).
//
// The runtime is compiled through vm.Script so V8 can reuse the code it
// compiled for an earlier child: node 20 caches no compiled code for modules,
// and compiling the SDK and its packages is a good part of a child's start-up.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import vm from "node:vm";

const [runtimeFile, codeCacheFile, requestJson] = process.argv.slice(2);
if (!process.send || !runtimeFile || !codeCacheFile || !requestJson) {
  process.stderr.write("child-entry: start me through the definitions loader (fork with IPC, runtime, code cache, request)\n");
  process.exit(2);
}

let cachedData;
try {
  cachedData = readFileSync(codeCacheFile);
} catch {
  // None yet: this child makes it.
}
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${readFileSync(runtimeFile, "utf8")}\n})`, {
  filename: runtimeFile,
  cachedData,
});
const runtime = { exports: {} };
script.runInThisContext()(runtime.exports, createRequire(runtimeFile), runtime, runtimeFile, path.dirname(runtimeFile));

/** Saves the code V8 compiled for the runtime (made after the import, it covers what the import ran). */
function saveCodeCache() {
  if (cachedData && !script.cachedDataRejected) return;
  const tmp = `${codeCacheFile}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, script.createCachedData());
    renameSync(tmp, codeCacheFile);
  } catch {
    // Only slower next time.
  }
}

runtime.exports.childMain({
  request: JSON.parse(requestJson),
  importModule: (url) => import(url),
  beforeExit: saveCodeCache,
});

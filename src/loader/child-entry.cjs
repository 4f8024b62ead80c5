// The script a definitions child process starts with: plain JS for plain
// node, with no TypeScript hooks. argv: the child runtime (child-main.ts
// bundled with the SDK and its packages, as one CommonJS script; see
// child-runtime.ts) and the file for V8's code cache of it. Requests come from
// the loader on file descriptor 3 and messages go back on it, one JSON per
// line; the process ends when the loader closes it.
//
// A CommonJS script talking through a socket, because every child pays for
// what node sets up for it, and the ES module loader (for an .mjs entry) and
// node's IPC channel each add several milliseconds to a child that otherwise
// takes a few tens. The runtime is compiled through vm.Script so V8 can reuse
// the code it compiled for an earlier child: node 20 caches no compiled code
// for modules, and compiling the SDK and its packages is a good part of a
// child's start-up.
"use strict";
const { readFileSync, renameSync, writeFileSync, writeSync } = require("node:fs");
const net = require("node:net");
const path = require("node:path");
const vm = require("node:vm");

const MESSAGE_FD = 3;
const [runtimeFile, codeCacheFile] = process.argv.slice(2);
if (!runtimeFile || !codeCacheFile) {
  process.stderr.write("child-entry: start me through the definitions loader (runtime, code cache; a socket on fd 3)\n");
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
script.runInThisContext()(runtime.exports, require, runtime, runtimeFile, path.dirname(runtimeFile));

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

/** Writes all of a message, whatever the pipe takes at once. */
function send(message) {
  const bytes = Buffer.from(`${JSON.stringify(message)}\n`);
  for (let offset = 0; offset < bytes.length;) {
    try {
      offset += writeSync(MESSAGE_FD, bytes, offset);
    } catch (err) {
      if (err.code !== "EAGAIN") throw err;
    }
  }
}

const load = runtime.exports.childMain({
  importModule: (url) => import(url),
  requireModule: require,
  send,
  afterFirstImport: saveCodeCache,
});

// Requests, one per line. The loader sends the next only after the reply to the last.
const channel = new net.Socket({ fd: MESSAGE_FD });
channel.setEncoding("utf8");
let buffered = "";
channel.on("data", (chunk) => {
  buffered += chunk;
  for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (line !== "") load(JSON.parse(line));
  }
});
// No more files: timers or sockets the files left open must not keep us alive.
channel.on("end", () => process.exit(0));
channel.on("error", () => process.exit(0));

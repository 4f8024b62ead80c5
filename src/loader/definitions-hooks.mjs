// Module customisation hooks for the definitions child process. Node runs
// them on its hooks thread, before tsx's own hooks; they are plain JS so they
// load without any transform.
//
// 1. `tributary` resolves to this checkout's SDK, wherever the definitions
//    directory lives, so the file shares the SDK instance the child warmed up.
// 2. Every file under the definitions directory is an ES module (top-level
//    await, import.meta), whatever package.json says or does not say.
// 3. The local files a definitions file imports are recorded, so watch mode
//    knows which files to reload when one of them changes.

/** @type {{ sdkUrl: string, dirUrl: string, port: import("node:worker_threads").MessagePort }} */
let state;
const imported = new Set();

export function initialize(data) {
  state = data;
  state.port.on("message", (message) => {
    if (message?.type === "imports") state.port.postMessage({ type: "imports", urls: [...imported] });
  });
  state.port.unref();
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "tributary") return { url: state.sdkUrl, format: "module", shortCircuit: true };
  const resolved = await nextResolve(specifier, context);
  if (!resolved.url.startsWith(state.dirUrl) || resolved.url.includes("/node_modules/")) return resolved;
  // tsx marks files it takes for CommonJS with query strings (some URL-encoded
  // into the path); the plain file URL loads as an ES module instead.
  const url = resolved.url.split(/%3F|\?|#/i)[0];
  imported.add(url);
  if (!/\.(?:m?ts|m?js)$/.test(url)) return resolved;
  return { url, format: "module", shortCircuit: true };
}

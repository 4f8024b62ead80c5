// Module customisation hooks of a worker child process. Node runs them on
// its hooks thread, before tsx's own hooks; plain JS so they load untransformed.
//
// 1. `tributary` resolves to this checkout's SDK wherever a definitions file
//    lives, so definitions and the worker runtime share one SDK instance.
// 2. Files under a definitions root are ES modules (top-level await,
//    import.meta) whatever package.json says or does not say. The worker adds
//    a root (the definitions directory, else a file's own directory) before
//    importing a file from outside the known ones, and waits for the ack.

/** @type {{ sdkUrl: string, port: import("node:worker_threads").MessagePort }} */
let state;
/** @type {string[]} */
const roots = [];

export function initialize(data) {
  state = data;
  for (const root of data.roots ?? []) roots.push(root);
  state.port.on("message", (message) => {
    if (message?.type === "add-root") {
      if (!roots.includes(message.url)) roots.push(message.url);
      state.port.postMessage({ type: "root-added", id: message.id });
    }
  });
  state.port.unref();
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "tributary") return { url: state.sdkUrl, format: "module", shortCircuit: true };
  const resolved = await nextResolve(specifier, context);
  if (resolved.url.includes("/node_modules/") || !roots.some((root) => resolved.url.startsWith(root))) return resolved;
  // tsx marks files it takes for CommonJS with query strings (some URL-encoded
  // into the path); the plain file URL loads as an ES module instead.
  const url = resolved.url.split(/%3F|\?|#/i)[0];
  if (!/\.(?:m?ts|m?js)$/.test(url)) return resolved;
  return { url, format: "module", shortCircuit: true };
}

// Asks a Web Worker for a layout; the last few layouts are kept by the graph's shape, so going back to the graph
// (or a status change, which does not move anything) draws at once.
import type { LayoutInput, LayoutResult } from "./graph-layout";
import type { LayoutRequest, LayoutResponse } from "./graph-layout.worker";

const cache = new Map<string, LayoutResult>();
const CACHE_SIZE = 4;

/** The graph's shape: nodes with their groups and the edges (the API lists them in a stable order). */
export function layoutSignature(input: LayoutInput): string {
  const nodes = input.nodes.map((n) => `${n.group}\u0000${n.id}`);
  const edges = input.edges.map((e) => `${e.from}\u0000${e.to}`);
  return `${nodes.join("\u0001")}\u0002${edges.join("\u0001")}`;
}

let nextId = 0;
let idle: Worker | undefined;

const newWorker = () => new Worker(new URL("./graph-layout.worker.ts", import.meta.url), { type: "module", name: "asset-graph-layout" });

/** Starts a worker now (loading dagre in it) while the page still waits for its data; the next layout uses it. */
export function prepareLayoutWorker(): void {
  idle ??= newWorker();
}

/** The layout of `input`; aborting terminates the worker. */
export function layoutInWorker(input: LayoutInput, signal: AbortSignal): Promise<LayoutResult> {
  const signature = layoutSignature(input);
  const cached = cache.get(signature);
  if (cached) return Promise.resolve(cached);
  return new Promise((resolve, reject) => {
    const worker = idle ?? newWorker();
    idle = undefined;
    const id = ++nextId;
    const finish = () => {
      worker.terminate();
      signal.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      finish();
      reject(new DOMException("layout aborted", "AbortError"));
    };
    signal.addEventListener("abort", onAbort);
    worker.onmessage = (e: MessageEvent<LayoutResponse>) => {
      if (e.data.id !== id) return;
      finish();
      if ("error" in e.data) return reject(new Error(`The graph layout failed: ${e.data.error}`));
      cache.set(signature, e.data.result);
      while (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
      resolve(e.data.result);
    };
    worker.onerror = (e) => {
      finish();
      reject(new Error(`The graph layout worker failed: ${e.message}`));
    };
    worker.postMessage({ id, input } satisfies LayoutRequest);
  });
}

// Runs the asset graph layout off the main thread: the page stays responsive while dagre works.
import { layoutAssetGraph, type LayoutInput, type LayoutResult } from "./graph-layout";

export type LayoutRequest = { readonly id: number; readonly input: LayoutInput };
export type LayoutResponse = { readonly id: number; readonly result: LayoutResult } | { readonly id: number; readonly error: string };

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<LayoutRequest>) => void) | null;
  postMessage(message: LayoutResponse): void;
};

scope.onmessage = (e) => {
  const { id, input } = e.data;
  try {
    scope.postMessage({ id, result: layoutAssetGraph(input) });
  } catch (err) {
    scope.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
};

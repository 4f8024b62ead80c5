import { partitionSpace } from "./partition-space.js";
import { DIMENSION_SEPARATOR } from "./spec-schema.js";
import type { PartitionsSpec } from "./types.js";

/** A partition as a step's context sees it: its data interval (UTC ISO instants) and its per-dimension keys. */
export interface PartitionInfo {
  readonly window: { readonly start: string; readonly end: string } | null;
  readonly dimensions: Readonly<Record<string, string>> | null;
}

/**
 * The window and per-dimension keys of a partition, without needing dynamic
 * keys: a multi key's time dimension gives the window. What executors hand to
 * `ctx.partition` (the reconciler's dispatches, the execution API's inputs).
 */
export function partitionInfo(spec: PartitionsSpec | null, key: string): PartitionInfo {
  if (!spec || key === "") return { window: null, dimensions: null };
  const windowOf = (s: PartitionsSpec, k: string) => {
    const w = partitionSpace(s).window(k);
    return w ? { start: w.start.toISOString(), end: w.end.toISOString() } : null;
  };
  if (spec.kind === "time") return { window: windowOf(spec, key), dimensions: null };
  if (spec.kind !== "multi") return { window: null, dimensions: null };
  const parts = key.split(DIMENSION_SEPARATOR);
  const dimensions: Record<string, string> = {};
  let window: { start: string; end: string } | null = null;
  spec.dimensions.forEach((d, i) => {
    const k = parts[i] ?? "";
    dimensions[d.name] = k;
    if (d.partitions.kind === "time") window = windowOf(d.partitions, k) ?? window;
  });
  return { window, dimensions };
}

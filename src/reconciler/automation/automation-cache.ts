import type { AssetGraph } from "../../graph/index.js";
import { dynamicNames, PartitionSubset, UNPARTITIONED, type PartitionContext, type PartitionSpace } from "../../partitions/index.js";
import type { StreamEvent } from "../../storage/index.js";
import type { AssetAutomationState } from "./automation-state.js";

// What the automation loop keeps in memory between ticks: each asset's materialised and failed partitions, kept
// current by the event stream, and its automation state.

const MATERIALIZING_KINDS = new Set(["materialization", "external", "observation"]);

export interface Cache {
  version: number;
  dynamicSignature: string;
  materialized: Map<string, PartitionSubset>;
  failed: Map<string, PartitionSubset>;
  states: Map<string, AssetAutomationState>;
  /** What is stored per asset (its state without lastEvaluatedAt) and when it was written. */
  written: Map<string, { essence: string; at: number }>;
}

/** Applies events to the cached partition states; returns, per asset, the keys they touched. */
export function applyEvents(
  events: readonly StreamEvent[],
  c: Cache,
  graph: AssetGraph,
  space: (key: string) => PartitionSpace | null,
): Map<string, { materialized: string[]; other: string[]; events: StreamEvent[] }> {
  const touched = new Map<string, { materialized: string[]; other: string[]; events: StreamEvent[] }>();
  for (const e of events) {
    if (!graph.has(e.assetKey)) continue;
    const s = space(e.assetKey);
    if (s && !s.has(e.partitionKey)) continue;
    const one = s ? PartitionSubset.single(s.indexOf(e.partitionKey)) : UNPARTITIONED;
    const entry = touched.get(e.assetKey) ?? { materialized: [], other: [], events: [] };
    touched.set(e.assetKey, entry);
    if (MATERIALIZING_KINDS.has(e.kind)) {
      c.materialized.set(e.assetKey, (c.materialized.get(e.assetKey) ?? PartitionSubset.EMPTY).union(one));
      c.failed.set(e.assetKey, (c.failed.get(e.assetKey) ?? PartitionSubset.EMPTY).difference(one));
      entry.materialized.push(e.partitionKey);
      entry.events.push(e);
    } else if (e.kind === "failure") {
      c.failed.set(e.assetKey, (c.failed.get(e.assetKey) ?? PartitionSubset.EMPTY).union(one));
      entry.other.push(e.partitionKey);
    } else if (e.kind === "check_result" && e.checkPassed !== undefined) {
      // A blocking check's verdict on the latest materialisation: failed data is not data to build on (as if
      // missing, so readers wait); a pass (the same data, or new data checked) makes it materialised again.
      const materialized = c.materialized.get(e.assetKey) ?? PartitionSubset.EMPTY;
      c.materialized.set(e.assetKey, e.checkPassed ? materialized.union(one) : materialized.difference(one));
      entry.other.push(e.partitionKey);
    } else if (e.kind === "wipe") {
      // Wiped: as if never materialised, and never failed either (its failures went with it).
      c.materialized.set(e.assetKey, (c.materialized.get(e.assetKey) ?? PartitionSubset.EMPTY).difference(one));
      c.failed.set(e.assetKey, (c.failed.get(e.assetKey) ?? PartitionSubset.EMPTY).difference(one));
      entry.other.push(e.partitionKey);
    }
  }
  return touched;
}

export function dynamicSignatureOf(graph: AssetGraph, ctx: PartitionContext): string {
  const names = new Set<string>();
  for (const a of graph.assets) if (a.partitions) for (const n of dynamicNames(a.partitions)) names.add(n);
  return [...names]
    .sort()
    .map((n) => `${n}:${ctx.dynamicKeys(n).length}`)
    .join(",");
}

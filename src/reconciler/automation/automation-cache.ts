import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import {
  dynamicNames,
  PartitionSubset,
  specHash,
  UNPARTITIONED,
  type PartitionContext,
  type PartitionSpace,
} from "../../partitions/index.js";
import type { PartitionSummary, StreamEvent } from "../../storage/index.js";
import { subsetOfKeyRanges, toKeyRanges, type AssetAutomationState } from "./automation-state.js";

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
  /** Assets whose partitions changed (or were read from partition_status) since their summary was last committed. */
  unsaved: Set<string>;
  /** Stored summaries of assets the definitions no longer have, deleted with the next commit. */
  orphans: string[];
  /** How many assets' partitions the last load read from partition_status (the others came from their summaries). */
  readFromRows: number;
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
    } else {
      // A planned run, a non-blocking check's result: the partitions held do not change.
      continue;
    }
    c.unsaved.add(e.assetKey);
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

/**
 * What an asset's partition summary is stored against: its partitions definition. None for definitions with dynamic
 * partitions, whose keys (and so the order ranges are taken in) change without the definition changing: those are
 * always read from partition_status.
 */
export function summaryDefinition(asset: SnapshotAsset): string | undefined {
  if (!asset.partitions) return "unpartitioned";
  return dynamicNames(asset.partitions).length > 0 ? undefined : specHash(asset.partitions);
}

/** The asset's partitions as the cache holds them, to store with the cursor. */
export function summaryOf(c: Cache, key: string, definition: string, space: PartitionSpace | null): PartitionSummary {
  return {
    partitions: definition,
    materialized: toKeyRanges(space, c.materialized.get(key) ?? PartitionSubset.EMPTY),
    failed: toKeyRanges(space, c.failed.get(key) ?? PartitionSubset.EMPTY),
  };
}

/**
 * A stored summary in the asset's space, when it was taken in this same definition and every range still names keys
 * of it; otherwise undefined (the asset's partitions are read from partition_status instead).
 */
export function restoreSummary(
  summary: PartitionSummary | undefined,
  definition: string | undefined,
  space: PartitionSpace | null,
): { materialized: PartitionSubset; failed: PartitionSubset } | undefined {
  if (!summary || definition === undefined || summary.partitions !== definition) return undefined;
  const materialized = subsetOfKeyRanges(space, summary.materialized);
  const failed = subsetOfKeyRanges(space, summary.failed);
  return materialized.complete && failed.complete ? { materialized: materialized.subset, failed: failed.subset } : undefined;
}

import { AssetGraph, validateGraph, type SnapshotAsset } from "../../src/graph/index.js";
import type { AssetDefinition } from "../../src/index.js";
import { partitionSpace, PartitionSubset } from "../../src/partitions/index.js";
import type { RunPlan } from "../../src/planner/index.js";

export const noop = (): null => null;

/** A validated graph of these definitions, as the loader would store them. */
export function graphOf(...defs: AssetDefinition[]): AssetGraph {
  const assets: SnapshotAsset[] = defs.map((d) => ({ ...d.spec, file: "defs.ts", exportName: d.key.replace(/\W/g, "_") }));
  const problems = validateGraph(assets);
  if (problems.length > 0) throw new Error(problems.map((p) => p.message).join("\n"));
  return new AssetGraph(assets);
}

export const nothing = (): PartitionSubset => PartitionSubset.EMPTY;

/** `materialized` from lists of keys per asset (`[""]` for an unpartitioned asset). */
export function materializedKeys(graph: AssetGraph, keys: Readonly<Record<string, readonly string[]>>) {
  return (assetKey: string): PartitionSubset => {
    const list = keys[assetKey];
    if (!list) return PartitionSubset.EMPTY;
    const spec = graph.require(assetKey).partitions;
    return spec === null ? PartitionSubset.range(0, list.length > 0 ? 1 : 0) : partitionSpace(spec).subset(list);
  };
}

/** `asset@partition` of every step, in plan order. */
export function stepNames(plan: RunPlan): string[] {
  return plan.steps.map((s) => `${s.assetKey}@${s.partitionKey}`);
}

/** `asset@partition` of the steps the named step reads. */
export function readsOf(plan: RunPlan, assetKey: string, partitionKey = ""): string[] {
  const step = plan.steps.find((s) => s.assetKey === assetKey && s.partitionKey === partitionKey);
  if (!step) throw new Error(`no step ${assetKey}@${partitionKey} in the plan`);
  return step.upstream.map((i) => `${plan.steps[i]!.assetKey}@${plan.steps[i]!.partitionKey}`);
}

/** Every edge points backwards and indices are positions. */
export function expectWellFormed(plan: RunPlan): void {
  plan.steps.forEach((s, i) => {
    if (s.index !== i) throw new Error(`step ${i} has index ${s.index}`);
    let previous = -1;
    for (const u of s.upstream) {
      if (u <= previous || u >= i) throw new Error(`step ${i} (${s.assetKey}@${s.partitionKey}) has upstream ${u} out of order`);
      previous = u;
    }
  });
}

/** `2025-03-01` … inclusive, UTC calendar days. */
export function days(from: string, to: string): string[] {
  const out: string[] = [];
  for (let d = new Date(`${from}T00:00:00Z`); d <= new Date(`${to}T00:00:00Z`); d = new Date(d.getTime() + 86_400_000)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

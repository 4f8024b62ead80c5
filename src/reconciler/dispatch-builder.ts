import path from "node:path";
import type { StepDispatch } from "../executor/index.js";
import type { AssetGraph, SnapshotAsset, SnapshotCheck } from "../graph/index.js";
import { partitionSpace, type PartitionsSpec } from "../partitions/index.js";
import type { ClaimedStep } from "../storage/index.js";

/** What a claimed step runs in these definitions: its asset and, for a check's step, the check; undefined once gone. */
export function definitionOfClaim(graph: AssetGraph, claim: ClaimedStep): { asset: SnapshotAsset; check?: SnapshotCheck } | undefined {
  const asset = graph.get(claim.assetKey);
  if (!asset) return undefined;
  if (claim.checkName === null) return { asset };
  const check = graph.checksFor(claim.assetKey).find((c) => c.name === claim.checkName);
  return check ? { asset, check } : undefined;
}

/**
 * Turns a claimed step into what an executor needs: where the asset's (or the
 * check's) code lives, the partition's data interval and dimensions, and where
 * its log goes.
 */
export function buildDispatch(
  claim: ClaimedStep,
  def: { asset: SnapshotAsset; check?: SnapshotCheck | undefined },
  dirs: { definitionsDir: string; logsDir: string },
): StepDispatch {
  const { asset, check } = def;
  const code = check ?? asset;
  return {
    stepId: claim.stepId,
    runId: claim.runId,
    tryNumber: claim.tryNumber,
    lastTry: claim.lastTry,
    assetKey: claim.assetKey,
    partitionKey: claim.partitionKey,
    mapIndex: claim.mapIndex,
    partition: partitionInfo(asset.partitions, claim.partitionKey),
    file: path.resolve(dirs.definitionsDir, code.file),
    exportName: code.exportName,
    ...(check ? { check: { name: check.name, blocking: check.blocking, severity: check.severity } } : {}),
    ...(claim.mapIndex >= 0 ? { map: { index: claim.mapIndex, item: claim.mapItem, label: claim.mapLabel } } : {}),
    timeoutMs: claim.timeoutMs,
    ...(claim.queue ? { queue: claim.queue } : {}),
    logRef: path.join(dirs.logsDir, claim.runId, `${claim.stepId}-${claim.tryNumber}.log`),
    ...(claim.resumed.length > 0 ? { resumed: claim.resumed } : {}),
    ...(claim.waitStartedAt ? { waitStartedAt: claim.waitStartedAt.toISOString() } : {}),
  };
}

/** The window and per-dimension keys of a partition, without needing dynamic keys. */
export function partitionInfo(spec: PartitionsSpec | null, key: string): StepDispatch["partition"] {
  if (!spec || key === "") return { window: null, dimensions: null };
  if (spec.kind === "time") {
    const w = partitionSpace(spec).window(key);
    return { window: w ? { start: w.start.toISOString(), end: w.end.toISOString() } : null, dimensions: null };
  }
  if (spec.kind === "multi") {
    const parts = key.split("|");
    const dimensions: Record<string, string> = {};
    let window: { start: string; end: string } | null = null;
    spec.dimensions.forEach((d, i) => {
      const k = parts[i] ?? "";
      dimensions[d.name] = k;
      if (d.partitions.kind === "time") {
        const w = partitionSpace(d.partitions).window(k);
        if (w) window = { start: w.start.toISOString(), end: w.end.toISOString() };
      }
    });
    return { window, dimensions };
  }
  return { window: null, dimensions: null };
}

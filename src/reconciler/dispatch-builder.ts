import path from "node:path";
import type { StepDispatch } from "../executor/index.js";
import type { AssetGraph, SnapshotAsset, SnapshotCheck } from "../graph/index.js";
import { partitionInfo } from "../partitions/index.js";
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
 * its log goes. The code is that of `planned`, the definition in the version
 * the step's run was planned with, when that version still has it: a step runs
 * the code it was planned with, even after the definitions changed.
 */
export function buildDispatch(
  claim: ClaimedStep,
  def: { asset: SnapshotAsset; check?: SnapshotCheck | undefined },
  dirs: { definitionsDir: string; logsDir: string },
  planned?: { asset: SnapshotAsset; check?: SnapshotCheck | undefined },
): StepDispatch {
  const { asset, check } = def;
  const code = planned ? (planned.check ?? planned.asset) : (check ?? asset);
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
    ...(code.codeHash ? { codeHash: code.codeHash } : {}),
    ...(check ? { check: { name: check.name, blocking: check.blocking, severity: check.severity } } : {}),
    ...(claim.mapIndex >= 0 ? { map: { index: claim.mapIndex, item: claim.mapItem, label: claim.mapLabel } } : {}),
    timeoutMs: claim.timeoutMs,
    ...(claim.queue ? { queue: claim.queue } : {}),
    logRef: path.join(dirs.logsDir, claim.runId, `${claim.stepId}-${claim.tryNumber}.log`),
    ...(claim.resumed.length > 0 ? { resumed: claim.resumed } : {}),
    ...(claim.waitStartedAt ? { waitStartedAt: claim.waitStartedAt.toISOString() } : {}),
  };
}

/** The window and per-dimension keys of a partition (kept here for the reconciler's callers). */
export { partitionInfo };

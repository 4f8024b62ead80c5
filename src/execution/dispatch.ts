import path from "node:path";
import { serializeError } from "../errors/index.js";
import type { AssetGraph, SnapshotAsset, SnapshotCheck } from "../graph/index.js";
import { partitionInfo } from "../partitions/index.js";
import { removedAssetCompletion, type ClaimedStep, type GraphCache, type StepCompletion } from "../storage/index.js";
import type { StepDispatch } from "./contract.js";

/** What a claimed step runs: its asset and, for a check's step, the check. */
export interface ClaimDefinition {
  readonly asset: SnapshotAsset;
  readonly check?: SnapshotCheck | undefined;
}

/** Where dispatched steps find their code and write their logs. */
export interface DispatchDirs {
  readonly definitionsDir: string;
  readonly logsDir: string;
}

/** What a claimed step runs in these definitions; undefined once its asset (or check) is gone from them. */
export function definitionOfClaim(graph: AssetGraph, claim: ClaimedStep): ClaimDefinition | undefined {
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
export function buildDispatch(claim: ClaimedStep, def: ClaimDefinition, dirs: DispatchDirs, planned?: ClaimDefinition): StepDispatch {
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

/** Claimed steps sorted out: what each executor runs, and the completions of those that cannot run. */
export interface ClaimDispatches {
  /** Per executor kind (the claim's `executor`), in claim order. */
  readonly byExecutor: ReadonlyMap<string, StepDispatch[]>;
  /**
   * To record at once: steps whose asset or check left the definitions (`removed`), and steps whose dispatch
   * cannot be built (failed for good, naming why).
   */
  readonly unrunnable: StepCompletion[];
}

/**
 * Claims → dispatches, for every path that hands claimed steps to executors (the reconciler's pass and the
 * completion fast path). A claim is judged by the current definitions, read afresh when the cached graph lacks
 * one of the claimed assets (another process may have stored a newer version), and runs the code of the version
 * its run was planned with.
 */
export async function dispatchClaims(
  claims: readonly ClaimedStep[],
  options: { readonly graphs: GraphCache; readonly dirs: DispatchDirs; readonly now: Date; readonly workerId: string | null },
): Promise<ClaimDispatches> {
  const byExecutor = new Map<string, StepDispatch[]>();
  const unrunnable: StepCompletion[] = [];
  if (claims.length === 0) return { byExecutor, unrunnable };
  let { graph } = await options.graphs.current();
  if (claims.some((c) => !definitionOfClaim(graph, c))) ({ graph } = await options.graphs.current({ fresh: true }));
  const planned = await plannedGraphsOf(options.graphs, claims);
  for (const claim of claims) {
    const def = definitionOfClaim(graph, claim);
    if (!def) {
      unrunnable.push(removedAssetCompletion(claim, options.now));
      continue;
    }
    try {
      const plannedGraph = planned.get(claim.snapshotVersion);
      const dispatch = buildDispatch(claim, def, options.dirs, plannedGraph && definitionOfClaim(plannedGraph, claim));
      const list = byExecutor.get(claim.executor);
      if (list) list.push(dispatch);
      else byExecutor.set(claim.executor, [dispatch]);
    } catch (err) {
      unrunnable.push({
        stepId: claim.stepId,
        tryNumber: claim.tryNumber,
        startedAt: null,
        endedAt: options.now,
        workerId: options.workerId,
        logRef: null,
        outcome: "failed",
        retryable: false,
        // The definitions cannot be made into a dispatch (see buildDispatch): every try would fail the same way.
        failureClass: "user",
        error: serializeError(err),
      });
    }
  }
  return { byExecutor, unrunnable };
}

/** The graphs of the versions the claimed steps' runs were planned with (a version that cannot be read is left out). */
async function plannedGraphsOf(graphs: GraphCache, claims: readonly ClaimedStep[]): Promise<Map<number, AssetGraph | undefined>> {
  const out = new Map<number, AssetGraph | undefined>();
  for (const version of new Set(claims.map((c) => c.snapshotVersion))) {
    out.set(version, await graphs.atVersion(version).catch(() => undefined));
  }
  return out;
}

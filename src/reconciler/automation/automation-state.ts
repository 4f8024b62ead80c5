import { PartitionSubset, type PartitionSpace } from "../../partitions/index.js";
import type { StoredEvaluation } from "../../storage/index.js";
import type { EvaluationRecord } from "./evaluate-asset.js";

/** Partitions as inclusive key ranges: stable across definition changes, unlike indices. */
export type KeyRanges = readonly (readonly [string, string])[];

/** What automation remembers about one asset between ticks (stored as JSON in automation_state). */
export interface AssetAutomationState {
  readonly firstEvaluatedAt: string;
  readonly lastEvaluatedAt: string;
  /**
   * Partitions that were due before this instant count as history: without
   * `catchup` only the latest of them is requested for being missing. Moved
   * to "now" on the first evaluation, on resume, and after a gap in
   * evaluation (reconciler down, clock jump).
   */
  readonly horizon: string;
  readonly paused: boolean;
  /** Per cron node (path in the condition tree): partitions a tick made due that were not requested yet (waiting on upstreams). */
  readonly owed: Readonly<Record<string, KeyRanges>>;
  /** Partitions an upstream event touched whose freshness is still to be settled (see upstream_updated). */
  readonly pendingUpdates: KeyRanges;
  /** Per cron node: its next tick after the last evaluation (until then, nothing to compute). */
  readonly nextCron?: Readonly<Record<string, string>>;
  /** Fingerprint of the last stored evaluation: only changes are stored. */
  readonly fingerprint: string | null;
}

/** Key ranges of a subset (an unpartitioned asset: [["", ""]] or []). */
export function toKeyRanges(space: PartitionSpace | null, subset: PartitionSubset): KeyRanges {
  if (subset.isEmpty()) return [];
  if (!space) return [["", ""]];
  const out: [string, string][] = [];
  for (const [a, b] of subset.ranges()) out.push([space.keyAt(a), space.keyAt(b - 1)]);
  return out;
}

/** The subset of key ranges in the current space; ranges whose keys left the definition are dropped. */
export function fromKeyRanges(space: PartitionSpace | null, ranges: KeyRanges | undefined): PartitionSubset {
  return subsetOfKeyRanges(space, ranges ?? []).subset;
}

/**
 * The subset of key ranges in the current space, and whether every range still names keys of it (an unpartitioned
 * asset's: exactly [["", ""]]). Ranges that do not are left out of the subset.
 */
export function subsetOfKeyRanges(space: PartitionSpace | null, ranges: KeyRanges): { subset: PartitionSubset; complete: boolean } {
  if (ranges.length === 0) return { subset: PartitionSubset.EMPTY, complete: true };
  if (!space) {
    return { subset: PartitionSubset.range(0, 1), complete: ranges.length === 1 && ranges[0]![0] === "" && ranges[0]![1] === "" };
  }
  const parts: [number, number][] = [];
  for (const range of ranges) {
    const indices = rangeIndices(space, range);
    if (indices) parts.push(indices);
  }
  return { subset: PartitionSubset.fromRanges(parts), complete: parts.length === ranges.length };
}

/** The [start, end) indices of an inclusive key range in the space; undefined when one of its keys left it. */
function rangeIndices(space: PartitionSpace, [from, to]: readonly [string, string]): [number, number] | undefined {
  if (!space.has(from) || !space.has(to)) return undefined;
  const a = space.indexOf(from);
  const b = space.indexOf(to);
  return b >= a ? [a, b + 1] : undefined;
}

/** An evaluation record as stored, with the runs it requested (several: named in an extra reason). */
export function toStored(r: EvaluationRecord, runIds: readonly string[] | undefined): StoredEvaluation {
  const requested = r.decision === "requested" && runIds && runIds.length > 0;
  return {
    assetKey: r.assetKey,
    decision: r.decision,
    partitions: r.partitions.length === 0 ? "" : JSON.stringify(r.partitions),
    condition: r.condition,
    reasons: requested && runIds.length > 1 ? [...r.reasons, { operand: "runs", detail: `${runIds.length} runs`, runIds }] : r.reasons,
    runId: requested ? runIds[0]! : null,
  };
}

export function essenceOf(s: AssetAutomationState): string {
  return JSON.stringify({ ...s, lastEvaluatedAt: undefined });
}

export function parseState(value: unknown): AssetAutomationState | undefined {
  const v = value as Partial<AssetAutomationState> | null;
  if (!v || typeof v.firstEvaluatedAt !== "string" || typeof v.lastEvaluatedAt !== "string" || typeof v.horizon !== "string")
    return undefined;
  return {
    firstEvaluatedAt: v.firstEvaluatedAt,
    lastEvaluatedAt: v.lastEvaluatedAt,
    horizon: v.horizon,
    paused: v.paused === true,
    owed: v.owed && typeof v.owed === "object" ? v.owed : {},
    pendingUpdates: Array.isArray(v.pendingUpdates) ? v.pendingUpdates : [],
    ...(v.nextCron && typeof v.nextCron === "object" ? { nextCron: v.nextCron } : {}),
    fingerprint: typeof v.fingerprint === "string" ? v.fingerprint : null,
  };
}

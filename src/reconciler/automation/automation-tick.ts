import type { AssetGraph } from "../../graph/index.js";
import { partitionSpace, specHash, type PartitionContext, type PartitionSpace, type PartitionSubset } from "../../partitions/index.js";
import type { AssetAutomationState } from "./automation-state.js";
import { describeCondition } from "./describe-condition.js";
import { evaluateAsset, type AssetView, type EvaluationRecord } from "./evaluate-asset.js";

/** Default gap in evaluation after which partitions due meanwhile count as history (see `catchup`). */
export const DEFAULT_GAP_MS = 10 * 60_000;
/** Default most partitions of one asset requested per tick. */
export const DEFAULT_MAX_REQUESTED = 500;

export interface AutomationTickInput {
  readonly graph: AssetGraph;
  readonly ctx: PartitionContext | undefined;
  readonly now: Date;
  readonly view: (assetKey: string) => AssetView;
  readonly states: ReadonlyMap<string, AssetAutomationState>;
  /** Evaluate only these assets (an incremental tick); default every asset with automation. */
  readonly only?: ReadonlySet<string> | undefined;
  readonly gapMs?: number;
  readonly maxRequestedPerAsset?: number;
  /** Partition spaces by asset (see spaceCache); built here when not given. */
  readonly space?: ((assetKey: string) => PartitionSpace | null) | undefined;
}

/**
 * Partition spaces by asset, built once per partitions definition: thousands
 * of assets usually share a handful of definitions.
 */
export function spaceCache(graph: AssetGraph, ctx: PartitionContext | undefined): (assetKey: string) => PartitionSpace | null {
  const bySpec = new Map<string, PartitionSpace>();
  const byAsset = new Map<string, PartitionSpace | null>();
  return (key) => {
    let s = byAsset.get(key);
    if (s === undefined) {
      const spec = graph.get(key)?.partitions ?? null;
      if (spec) {
        const hash = specHash(spec);
        s = bySpec.get(hash);
        if (!s) bySpec.set(hash, (s = partitionSpace(spec, ctx)));
      } else s = null;
      byAsset.set(key, s);
    }
    return s;
  };
}

/** One run to create: assets in dependency order, all for one partition key. */
export interface RunRequest {
  readonly assetKeys: readonly string[];
  /** null for unpartitioned assets. */
  readonly partitionKey: string | null;
}

export interface AutomationTickResult {
  readonly requested: ReadonlyMap<string, PartitionSubset>;
  readonly runs: readonly RunRequest[];
  readonly records: readonly EvaluationRecord[];
  /** New state of every evaluated asset. */
  readonly states: ReadonlyMap<string, AssetAutomationState>;
  readonly evaluated: number;
  /** When something time-driven is next due among the evaluated assets (a cron tick, a window closing). */
  readonly nextDueAt: Date | null;
}

/**
 * The automation tick: a pure function of (definitions, asset views, previous
 * states, now). Assets are evaluated upstream first, so a downstream asset can
 * join its upstream's run when both are requested for the same partition.
 * Requests are grouped into runs: the assets requested for one partition key
 * (of one partitions definition) become one run.
 */
export function runAutomationTick(input: AutomationTickInput): AutomationTickResult {
  const { graph, now } = input;
  const space = input.space ?? spaceCache(graph, input.ctx);
  const requested = new Map<string, PartitionSubset>();
  const records: EvaluationRecord[] = [];
  const states = new Map<string, AssetAutomationState>();
  let nextDueAt: Date | null = null;
  const soonest = (d: Date | null | undefined): void => {
    if (d && d > now && (!nextDueAt || d < nextDueAt)) nextDueAt = d;
  };
  let evaluated = 0;
  for (const key of graph.topologicalOrder()) {
    const asset = graph.get(key);
    if (!asset?.automation || asset.kind === "source") continue;
    if (input.only && !input.only.has(key)) continue;
    let result: ReturnType<typeof evaluateAsset>;
    try {
      result = evaluateAsset(asset, {
        now,
        graph,
        ctx: input.ctx,
        space,
        view: input.view,
        requestedThisTick: (k) => requested.get(k),
        previous: input.states.get(key),
        gapMs: input.gapMs ?? DEFAULT_GAP_MS,
        maxRequested: input.maxRequestedPerAsset ?? DEFAULT_MAX_REQUESTED,
      });
    } catch (err) {
      // One asset that cannot be evaluated never stops the others: its error is its record.
      evaluated++;
      const detail = `could not evaluate: ${(err as Error).message}`;
      const fingerprint = `error:${detail}`;
      const previous = input.states.get(key);
      if (previous?.fingerprint !== fingerprint) {
        records.push({
          assetKey: key,
          decision: "skipped",
          partitions: [],
          count: 0,
          condition: describeCondition(asset.automation),
          reasons: [{ operand: "evaluation_error", detail }],
        });
      }
      const at = now.toISOString();
      states.set(
        key,
        previous
          ? { ...previous, fingerprint }
          : { firstEvaluatedAt: at, lastEvaluatedAt: at, horizon: at, paused: false, owed: {}, pendingUpdates: [], fingerprint },
      );
      continue;
    }
    evaluated++;
    if (!result.requested.isEmpty()) requested.set(key, result.requested);
    records.push(...result.records);
    states.set(key, result.state);
    soonest(result.nextCronTick);
    const s = space(key);
    const existing = s?.count(now) ?? 0;
    // The next window to close (finite definitions end; static and dynamic ones have no windows).
    if (s && existing < s.size) soonest(s.windowAt(existing)?.end);
  }
  return { requested, runs: groupIntoRuns(graph, requested, space), records, states, evaluated, nextDueAt };
}

/** Assets requested for the same partition key of the same partitions definition share a run, in dependency order. */
function groupIntoRuns(
  graph: AssetGraph,
  requested: ReadonlyMap<string, PartitionSubset>,
  space: (key: string) => PartitionSpace | null,
): RunRequest[] {
  const groups = new Map<string, { assetKeys: string[]; partitionKey: string | null }>();
  // `requested` was filled in topological order, so each group's assets are too.
  for (const [key, subset] of requested) {
    const s = space(key);
    const hash = specHash(graph.require(key).partitions);
    if (!s) {
      const g = groups.get(hash) ?? { assetKeys: [], partitionKey: null };
      g.assetKeys.push(key);
      groups.set(hash, g);
      continue;
    }
    for (const index of subset) {
      const partitionKey = s.keyAt(index);
      const id = `${hash}\u0000${partitionKey}`;
      const g = groups.get(id) ?? { assetKeys: [], partitionKey };
      g.assetKeys.push(key);
      groups.set(id, g);
    }
  }
  return [...groups.values()];
}

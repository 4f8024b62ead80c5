import type { SnapshotAsset } from "../../graph/index.js";
import { partitionKeyWindowIso, partitionSpace, type PartitionContext, type PartitionSpace } from "../../partitions/index.js";
import type { ObservationTarget } from "../../storage/index.js";

/** Poll interval of an observation when the source asset names none. */
export const DEFAULT_OBSERVE_POLL_MS = 60_000;
/** Time windows of a source observed back from now. */
export const DEFAULT_OBSERVE_LOOKBACK = 14;
/** Most partitions of one source observed at once (static and dynamic keys, multi-partitions). */
export const DEFAULT_MAX_OBSERVED_PARTITIONS = 1_000;

export interface ObservationWindow {
  /** Index range [lo, hi) of the source's partitions to observe now. */
  readonly lo: number;
  readonly hi: number;
}

/**
 * Which partitions of a source are observed at `now`: the due ones (those
 * that exist: a time window that has closed, or is open within `endOffset`;
 * every static or dynamic key), limited to the latest `lookback` time windows
 * (every key of each, for a multi-partition with a time dimension) and to
 * `maxPartitions`. The latest partitions, because partitions are ordered by
 * time first: a source with 40 000 days of history costs 14.
 */
export function observationWindow(
  space: PartitionSpace,
  ctx: PartitionContext,
  now: Date,
  options: { lookback: number; maxPartitions: number },
): ObservationWindow {
  const hi = space.count(now);
  const perWindow = partitionsPerWindow(space, ctx);
  const wanted = perWindow === null ? hi : options.lookback * perWindow;
  return { lo: Math.max(0, hi - Math.min(wanted, options.maxPartitions)), hi };
}

/** The least time a partition due long ago is given for its first check before it may time out. */
const FIRST_CHECK_MS = 60_000;

/**
 * The observation triggers a source's partitions in `window` need, built from
 * its `observe` trigger: templates stay unrendered (the triggerer renders them
 * with the partition key and window the trigger carries). A time partition
 * times out `observeTimeoutMs` after its window ends, but never before a first
 * check has had its time (one poll interval from now, and at least a minute, as a
 * triggerer that is starting or busy may take a moment), so a partition due long
 * ago (a first start, a new source) is looked for before it counts as timed out;
 * an untimed one times out that long after its first observation trigger is made.
 */
export function observationTargets(
  asset: SnapshotAsset,
  space: PartitionSpace | null,
  window: ObservationWindow,
  now: Date,
): ObservationTarget[] {
  const observe = asset.observe;
  if (!observe) return [];
  const pollIntervalMs = asset.pollIntervalMs ?? DEFAULT_OBSERVE_POLL_MS;
  const timeoutAt = (windowEnd: Date | undefined): Date | null => {
    if (asset.observeTimeoutMs === null) return null;
    const floor = now.getTime() + Math.max(pollIntervalMs, FIRST_CHECK_MS);
    return new Date(windowEnd ? Math.max(windowEnd.getTime() + asset.observeTimeoutMs, floor) : now.getTime() + asset.observeTimeoutMs);
  };
  const target = (partitionKey: string, windowEnd: Date | undefined): ObservationTarget => ({
    assetKey: asset.key,
    partitionKey,
    kind: observe.kind,
    args: observe.args,
    partitionWindow: asset.partitions && partitionKey !== "" ? (partitionKeyWindowIso(asset.partitions, partitionKey) ?? null) : null,
    pollIntervalMs,
    timeoutAt: timeoutAt(windowEnd),
  });
  if (!space) return [target("", undefined)];
  const out: ObservationTarget[] = [];
  for (let i = window.lo; i < window.hi; i++) out.push(target(space.keyAt(i), space.windowAt(i)?.end));
  return out;
}

/** Partitions per time window (every key of the other dimensions); null without a time dimension. */
function partitionsPerWindow(space: PartitionSpace, ctx: PartitionContext): number | null {
  const spec = space.spec;
  if (spec.kind === "time") return 1;
  if (spec.kind !== "multi" || !spec.dimensions.some((d) => d.partitions.kind === "time")) return null;
  return spec.dimensions.reduce((n, d) => (d.partitions.kind === "time" ? n : n * partitionSpace(d.partitions, ctx).size), 1);
}

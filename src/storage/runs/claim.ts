import { sql } from "kysely";
import type { ClaimHolder, ClaimedStep } from "../run-store.js";
import { lockPools } from "./pools.js";
import { lockRuns } from "./run-counters.js";
import { handOutSteps, selectCandidates, type Candidate } from "./sql/claim-runnable.js";
import type { Trx } from "./step-rows.js";

/** What one claim may take: executor kinds with their free slots, how many to look at, the aging share. */
export interface ClaimScope {
  readonly kindNames: readonly string[];
  readonly capacity: ReadonlyMap<string, number>;
  readonly limit: number;
  readonly agingLimit: number;
  readonly now: Date;
  readonly defaultPoolSlots: number;
  /** Claim only among these steps (the follow-up claim of a completion). */
  readonly onlyIds?: readonly number[];
  /** Steps of onlyIds this transaction found runnable but left pending: handed out straight from pending. */
  readonly pendingRunnable?: readonly number[];
  /** Free slots of pools whose rows the caller already locked in this transaction (the follow-up claim of a completion). */
  readonly lockedPools?: ReadonlyMap<string, number>;
  readonly holder?: ClaimHolder;
}

/**
 * Picks runnable steps in preference order, admits those that fit (executor
 * capacity, pool slots, asset and run limits) and hands them out, inside the
 * caller's transaction.
 */
export async function claimIn(trx: Trx, o: ClaimScope): Promise<{ foundWork: boolean; steps: ClaimedStep[] }> {
  // Highest priority first, deeper steps first among equals (chains finish
  // instead of queueing behind every root), then FIFO; plus a share of the
  // longest-waiting steps whatever their priority, so low-priority work
  // (backfills) never starves. One statement picks and locks them.
  const { kindNames, limit, agingLimit, now } = o;
  const candidates = await selectCandidates(trx, {
    kindNames,
    limit,
    agingLimit,
    ...(o.onlyIds ? { onlyIds: o.onlyIds, pendingRunnable: o.pendingRunnable ?? [] } : {}),
  });
  if (candidates.length === 0) return { foundWork: false, steps: [] };
  const order = candidates
    .map((c) => ({ ...c, id: Number(c.id) }))
    .sort((x, y) => Number(y.aged) - Number(x.aged) || y.priority - x.priority || y.depth - x.depth || x.id - y.id);

  const pools = [...new Set(order.map((d) => d.pool))];
  const poolFree = pools.every((p) => o.lockedPools?.has(p)) ? new Map(o.lockedPools) : await lockPools(trx, pools, o.defaultPoolSlots);
  const limitedAssets = [...new Set(order.filter((d) => d.max_concurrency !== null).map((d) => d.asset_key))];
  const assetActive = new Map<string, number>();
  if (limitedAssets.length > 0) {
    const counts = await trx
      .selectFrom("steps")
      .select(["asset_key", sql<number>`count(*)::int`.as("n")])
      .where("state", "in", ["queued", "running"])
      .where("asset_key", "in", limitedAssets)
      .groupBy("asset_key")
      .execute();
    for (const c of counts) assetActive.set(c.asset_key, c.n);
  }
  const admitted = admit(order, { capacity: new Map(o.capacity), poolFree, assetActive });
  if (admitted.length === 0) return { foundWork: true, steps: [] };
  const admittedSet = new Set(admitted);
  await lockRuns(
    trx,
    order.filter((d) => admittedSet.has(d.id)).map((d) => d.run_id),
  );

  // Hand them out: state, try row, pool slots and run counters in one statement.
  const rows = await handOutSteps(trx, admitted, now, o.holder, o.pendingRunnable);
  const rank = new Map(admitted.map((id, i) => [id, i]));
  const steps = rows
    .map((r): ClaimedStep => ({
      stepId: Number(r.id),
      runId: r.run_id,
      tryNumber: r.try_number,
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      mapIndex: r.map_index,
      executor: r.executor,
      queue: r.queue,
      timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
      lastTry: r.last_try,
      snapshotVersion: r.snapshot_version,
      resumed: r.resumed ?? [],
      waitStartedAt: r.wait_started_at,
      checkName: r.check_name,
      mapItem: r.map_item ?? null,
      mapLabel: r.map_label,
    }))
    .sort((x, y) => rank.get(x.stepId)! - rank.get(y.stepId)!);
  return { foundWork: true, steps };
}

/**
 * Which candidates (in preference order) fit: executor capacity, pool slots,
 * the asset's maxConcurrency and the run's max active steps. The counters
 * passed in are consumed as steps are admitted.
 */
export function admit(
  order: readonly Candidate[],
  state: { capacity: Map<string, number>; poolFree: Map<string, number>; assetActive: Map<string, number> },
): number[] {
  const runActive = new Map<string, number>();
  const admitted: number[] = [];
  for (const d of order) {
    if (d.run_status !== "running" || d.cancel_requested_at) continue;
    const free = state.capacity.get(d.executor) ?? 0;
    if (free <= 0) continue;
    const poolLeft = state.poolFree.get(d.pool) ?? 0;
    if (poolLeft < d.pool_slots) continue;
    if (d.max_concurrency !== null && (state.assetActive.get(d.asset_key) ?? 0) >= d.max_concurrency) continue;
    const active = runActive.get(d.run_id) ?? d.steps_active;
    if (d.max_active_steps !== null && active >= d.max_active_steps) continue;
    admitted.push(d.id);
    state.capacity.set(d.executor, free - 1);
    state.poolFree.set(d.pool, poolLeft - d.pool_slots);
    state.assetActive.set(d.asset_key, (state.assetActive.get(d.asset_key) ?? 0) + 1);
    runActive.set(d.run_id, active + 1);
  }
  return admitted;
}

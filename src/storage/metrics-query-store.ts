import type { UNFINISHED_STEP_STATES } from "./partition-status-store.js";

/** A step state that is not final; only these are counted (finished steps are unbounded history). */
export type UnfinishedStepState = (typeof UNFINISHED_STEP_STATES)[number];

/** Runs that have not ended, by status. */
export type ActiveRunStatus = "queued" | "running";

/**
 * What `/metrics` reports about the database at one scrape. Every part is read
 * from a partial index or a small table, so its cost follows the work in
 * flight, not the history kept.
 */
export interface MetricsSnapshot {
  /** Unfinished steps by state (every state present, 0 when none). */
  readonly stepsByState: Readonly<Record<UnfinishedStepState, number>>;
  /** Scheduled steps waiting for a slot, by executor kind and queue (null: the executor's default queue). */
  readonly queueDepth: readonly { readonly executor: string; readonly queue: string | null; readonly steps: number }[];
  readonly runsByStatus: Readonly<Record<ActiveRunStatus, number>>;
  readonly pools: readonly { readonly name: string; readonly slots: number; readonly occupied: number }[];
  /** Scheduled steps waiting for a slot, by pool (the pool's queue). */
  readonly queuedByPool: readonly { readonly pool: string; readonly steps: number }[];
  /** Steps handed to an executor and not started yet (state queued), by executor kind and queue. */
  readonly handedOver: readonly { readonly executor: string; readonly queue: string | null; readonly steps: number }[];
  /** Waiting triggers by kind, and how many of them are due for a check now (the triggerers' backlog). */
  readonly waitingTriggers: readonly { readonly kind: string; readonly waiting: number; readonly due: number }[];
  /**
   * The planner's row estimates of the history tables (`pg_class.reltuples`,
   * kept by ANALYZE/autovacuum): cheap, approximate, and absent for a table
   * never analysed.
   */
  readonly tableRowEstimates: readonly { readonly table: string; readonly rows: number }[];
}

/** Dispatch latencies of step tries queued after a cursor. */
export interface DispatchLatencies {
  /** The highest try id read: pass it as `afterTryId` next time (null: nothing read yet). */
  readonly lastTryId: number | null;
  /** Per try read, queued_at - scheduled_at in milliseconds (tries whose step has moved on to a later try are left out). */
  readonly latenciesMs: readonly number[];
}

export interface DispatchLatencyOptions {
  /** Read tries after this id; null on the first read, which starts near the newest tries. */
  readonly afterTryId: number | null;
  /** Ignore tries queued before this instant (the scraping process's start). */
  readonly since: Date;
  /** Most tries read at once; a larger backlog is read over the next calls. */
  readonly limit: number;
}

/** Triggers by kind and status among ids after a cursor (see MetricsQueryStore.triggerCounts). */
export interface TriggerStatusCounts {
  /**
   * Per kind and status: every trigger after `afterId`, and those of them
   * that are settled — at or below both `settleUpTo` and `settledBelow`.
   */
  readonly counts: readonly { readonly kind: string; readonly status: string; readonly triggers: number; readonly settled: number }[];
  /**
   * The highest id below which no trigger is waiting now (the oldest waiting
   * trigger's id - 1, or the newest id when none waits); null on an empty table.
   * Triggers only leave `waiting`, never go back, so ids up to it keep their status.
   */
  readonly settledBelow: number | null;
}

/** Read-only, bounded queries for the metrics endpoint. */
export interface MetricsQueryStore {
  /** A few statements on one connection, each on a partial index or a small table. */
  snapshot(now: Date): Promise<MetricsSnapshot>;
  /** One statement over step_tries by primary key, at most `limit` rows. */
  dispatchLatencies(options: DispatchLatencyOptions): Promise<DispatchLatencies>;
  /**
   * Trigger counts by kind and status over the ids after `afterId` (a range of
   * the primary key: callers keep the counts of the settled ids below it), with
   * the settled part up to `settleUpTo` counted apart, and where settled ids end now. One statement.
   */
  triggerCounts(afterId: number, settleUpTo: number): Promise<TriggerStatusCounts>;
}

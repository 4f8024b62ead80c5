import type { TriggerStatus } from "./database.js";
import type { JsonValue } from "./json.js";

/** Every trigger status, waiting first (the order listings use). */
export const TRIGGER_STATUSES = ["waiting", "fired", "failed", "timed_out", "canceled"] as const satisfies readonly TriggerStatus[];

/** The most triggers one listing returns. */
export const MAX_TRIGGER_PAGE = 500;

/**
 * A trigger as people look at it: what it checks, for whom (a deferred step of
 * a run, or a source partition), and how its checks went.
 */
export interface TriggerView {
  readonly id: number;
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly status: TriggerStatus;
  /** The deferred step waiting on it; null for a source-asset observation. */
  readonly stepId: number | null;
  readonly runId: string | null;
  /** The observed source asset, or the deferred step's asset. */
  readonly assetKey: string | null;
  readonly partitionKey: string | null;
  /** The partition's time window (ISO instants), for `{start}`/`{end}` templates; null when untimed. */
  readonly partitionWindow: { readonly start: string; readonly end: string } | null;
  /** Checks run so far (failed ones included). */
  readonly attempts: number;
  readonly pollIntervalMs: number;
  /** A timeout skips the step instead of failing it. */
  readonly softFail: boolean;
  /** Null once it ended. */
  readonly nextCheckAt: Date | null;
  readonly timeoutAt: Date | null;
  readonly lastCheckedAt: Date | null;
  readonly lastResult: JsonValue | null;
  /** What it fired with. */
  readonly payload: JsonValue | null;
  /** The last failed check (consecutiveFailures counts them). */
  readonly error: JsonValue | null;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: Date | null;
  readonly createdAt: Date;
  readonly endedAt: Date | null;
}

/** Which triggers to count or list; absent fields do not filter. */
export interface TriggerFilter {
  readonly status?: TriggerStatus | undefined;
  /** The observed source asset or the deferred step's asset. */
  readonly assetKey?: string | undefined;
  readonly kind?: string | undefined;
}

export interface ListTriggersOptions extends TriggerFilter {
  /** 1 to {@link MAX_TRIGGER_PAGE}. */
  readonly limit: number;
  /** `endCursor` of the previous page. */
  readonly after?: string | undefined;
}

export interface TriggerPage {
  readonly nodes: readonly TriggerView[];
  /** Pass as `after` for the next page; null when the page is empty. */
  readonly endCursor: string | null;
  readonly hasNextPage: boolean;
}

export type TriggerCounts = Readonly<Record<TriggerStatus, number>>;

/**
 * Read-only queries over triggers for the API and the CLI: what waits, on
 * what, and how its checks went. Every method is one statement, whatever the
 * number of ids asked for.
 */
export interface TriggerQueryStore {
  /** Waiting triggers first, then the ended ones; newest first within each. */
  listTriggers(options: ListTriggersOptions): Promise<TriggerPage>;
  /** The triggers with these ids that exist, by id. */
  triggersById(ids: readonly number[]): Promise<ReadonlyMap<number, TriggerView>>;
  /** Each step's current trigger (the one steps.trigger_id names, in any status), by step id; steps without one are left out. */
  currentTriggersOfSteps(stepIds: readonly number[]): Promise<ReadonlyMap<number, TriggerView>>;
  countTriggers(filter?: Omit<TriggerFilter, "status">): Promise<TriggerCounts>;
}

import type { FailureClass } from "../errors/index.js";
import type { PartitionMappingSpec, PartitionsSpec } from "../partitions/index.js";
import type { AutomationSpec } from "./automation.js";
import type { JsonValue } from "./json.js";
import type { TriggerSpec } from "./triggers.js";

export const TRIGGER_RULES = [
  "all_success",
  "all_failed",
  "all_done",
  "all_skipped",
  "one_success",
  "one_failed",
  "one_done",
  "none_failed",
  "none_failed_min_one_success",
  "none_skipped",
  "always",
] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

/**
 * How many direct upstream steps a step has, and how many of them ended in
 * each terminal state. Upstreams still pending, scheduled, queued, running,
 * up for retry/reschedule or deferred are the ones not counted in any field.
 */
export interface UpstreamCounts {
  readonly total: number;
  readonly success: number;
  readonly failed: number;
  readonly upstreamFailed: number;
  readonly skipped: number;
  readonly removed: number;
}

/**
 * What a trigger rule says about a pending step now:
 * - `wait`: not decided yet (upstreams still running, or the rule is still reachable);
 * - `run`: the rule is met: the step may be scheduled;
 * - `skipped` / `upstream_failed`: the rule can no longer be met; the step ends in that state.
 */
export type TriggerDecision = "wait" | "run" | "skipped" | "upstream_failed";

export const EXECUTORS = ["local", "bullmq", "transactional", "kubernetes"] as const;
export type ExecutorKind = (typeof EXECUTORS)[number];

export interface RetryPolicySpec {
  /** Retries after the first try: `max: 3` means up to four tries. */
  readonly max: number;
  readonly delayMs: number;
  readonly backoff: "fixed" | "linear" | "exponential";
  readonly maxDelayMs: number | null;
  readonly jitter: boolean;
}

/** A try that just failed, as the retry decision sees it. */
export interface FailedTry {
  /** 1-based; counts across retries and clears. */
  readonly tryNumber: number;
  readonly failureClass: FailureClass;
  /** False for a failure that would fail the same way on every try (e.g. a return value that is too large). */
  readonly retryable: boolean;
  /** The asset's `retries`; null for a step that has none (a check's step). */
  readonly policy: RetryPolicySpec | null;
  /**
   * Tries that do not count against `policy`: those before the step was last cleared, hand-outs that never started,
   * and infrastructure failures that were re-run.
   */
  readonly triesBefore: number;
  /** Infrastructure failures of the step since its last clear that were re-run; this one not included. */
  readonly infrastructureFailures: number;
  /** Its run is being canceled. */
  readonly canceled: boolean;
}

/** Whether a failed try's step runs again. */
export type RetryDecision =
  /** Runs again after `delayMs`; `budget` is what the failed try used up (the asset's retries, or the infrastructure budget). */
  | { readonly retry: true; readonly delayMs: number; readonly budget: FailureClass }
  | { readonly retry: false; readonly why: "canceled" | "not_retryable" | "retries_spent" }
  /** An infrastructure failure with the budget spent: `max` re-runs were made already. */
  | { readonly retry: false; readonly why: "infrastructure_retries_spent"; readonly max: number };

export interface DepSpec {
  /** The argument name the asset function receives the value under. */
  readonly name: string;
  readonly assetKey: string;
  /** null: the default mapping for the two partitions definitions. */
  readonly mapping: PartitionMappingSpec | null;
}

/**
 * The serialised form of an asset: what the loader stores in a snapshot and
 * what the reconciler, planner and API read. Never holds functions.
 */
export interface AssetSpec {
  readonly key: string;
  readonly kind: "asset" | "source";
  readonly group: string;
  readonly owner: string | null;
  readonly description: string | null;
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, JsonValue>>;
  readonly partitions: PartitionsSpec | null;
  readonly deps: readonly DepSpec[];
  readonly automation: AutomationSpec | null;
  readonly pool: string | null;
  readonly poolSlots: number;
  readonly priority: number;
  readonly retries: RetryPolicySpec;
  readonly timeoutMs: number | null;
  readonly maxConcurrency: number | null;
  readonly maxActiveRuns: number | null;
  readonly catchup: boolean;
  readonly triggerRule: TriggerRule;
  readonly executor: ExecutorKind;
  readonly queue: string | null;
  readonly codeVersion: string | null;
  readonly deadlineMs: number | null;
  /** Source assets: how a partition is observed. */
  readonly observe: TriggerSpec | null;
  readonly pollIntervalMs: number | null;
  readonly observeTimeoutMs: number | null;
  /**
   * Set when the asset declares `map` or `maxMapItems`: whether `map` is declared (otherwise the function may
   * fan out with ctx.expand) and the most items one fan-out may have.
   */
  readonly fanOut?: { readonly declared: boolean; readonly maxItems: number };
  /** Set when the asset declares `retention`: how long its stored outputs, and its tries' logs, are kept. */
  readonly retention?: { readonly outputsMs?: number; readonly logsMs?: number; readonly historyMs?: number };
  /** Set when the asset declares an `erase` hook: the time limit of one call. */
  readonly erase?: { readonly timeoutMs: number };
}

export interface CheckSpec {
  readonly assetKey: string;
  readonly name: string;
  readonly blocking: boolean;
  readonly severity: "warn" | "error";
  readonly description: string | null;
  /**
   * The partitions the check runs on: these keys, or a range of a time-partitioned asset (either end open);
   * null (the default): every partition.
   */
  readonly partitions?: CheckPartitionsSpec | null;
}

export type CheckPartitionsSpec = { readonly keys: readonly string[] } | { readonly from: string | null; readonly to: string | null };

import { sql, type Transaction } from "kysely";
import type { RetryPolicySpec } from "../../sdk/index.js";
import type { Database, StepState } from "../database.js";

export const ACTIVE: readonly StepState[] = ["queued", "running"];
/** Join condition, aliases p and c: c is a mapped step of p (current or, past p.map_count, removed). */
export const MAPPED_STEP_OF = sql`c.run_id = p.run_id and c.asset_key = p.asset_key and c.partition_key = p.partition_key
  and c.check_name is null and c.map_index >= 0`;
/** States of a step that has not ended and is not merely waiting for its upstreams. */
export const UNFINISHED: readonly StepState[] = ["scheduled", "queued", "running", "up_for_retry", "up_for_reschedule", "deferred"];

export const DEFAULT_POOL = "default_pool";
export const HOUSEKEEPING_BATCH = 1000;

export type Trx = Transaction<Database>;
export type Terminal = "success" | "failed" | "skipped" | "upstream_failed";

export interface LockedStep {
  id: number;
  run_id: string;
  state: StepState;
  try_number: number;
  tries_before: number;
  infrastructure_failures: number;
  retry_policy: RetryPolicySpec | null;
  pool: string;
  pool_slots: number;
  asset_key: string;
  partition_key: string;
  map_index: number;
  check_name: string | null;
  cancel_requested: boolean;
}

export interface StepChange {
  id: number;
  run_id: string;
  state: StepState;
  /** Whether the step held an executor, a pool slot and an active-step count until now. */
  wasActive: boolean;
  pool: string;
  pool_slots: number;
}

/** States a completion leaves a step in that are not an end: the step runs again (or, expanded, gathers). */
export const WAITING_AGAIN: readonly StepState[] = ["up_for_retry", "scheduled", "deferred", "up_for_reschedule", "pending"];

export function isTerminalState(state: StepState): state is Terminal | "removed" {
  return state === "success" || state === "failed" || state === "skipped" || state === "upstream_failed" || state === "removed";
}

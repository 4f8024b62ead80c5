import type { Transaction } from "kysely";
import type { Database, TriggerStatus } from "../database.js";
import type { JsonValue } from "../json.js";
import type { ClaimedTrigger, TriggerWindow } from "../trigger-store.js";

export type Trx = Transaction<Database>;

/** A `triggers` row as `returning *` and `select *` give it. */
export interface TriggerRow {
  id: string | number;
  kind: string;
  args: Record<string, unknown>;
  step_id: string | number | null;
  asset_key: string | null;
  partition_key: string | null;
  status: TriggerStatus;
  attempts: number;
  next_check_at: Date;
  timeout_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  last_checked_at: Date | null;
  last_result: JsonValue | null;
  payload: JsonValue | null;
  error: JsonValue | null;
  ended_at: Date | null;
  partition_window: TriggerWindow | null;
  poll_interval_ms: number;
  soft_fail: boolean;
  try_number: number | null;
}

/** What a trigger checks and for whom, whatever its status. */
export function baseOf(r: TriggerRow): Omit<ClaimedTrigger, "leaseExpiresAt"> {
  return {
    id: Number(r.id),
    kind: r.kind,
    args: r.args,
    stepId: r.step_id === null ? null : Number(r.step_id),
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    partitionWindow: r.partition_window,
    pollIntervalMs: r.poll_interval_ms,
    softFail: r.soft_fail,
    tryNumber: r.try_number,
    attempts: r.attempts,
    nextCheckAt: r.next_check_at,
    timeoutAt: r.timeout_at,
    lastResult: r.last_result,
  };
}

/** The columns that say what an ending trigger was for. */
export interface HeldTrigger {
  id: string;
  kind: string;
  step_id: string | null;
  asset_key: string | null;
  partition_key: string | null;
}

/** A trigger that ends in this transaction (fired, failed, timed out), with what the ending carries. */
export type Ending<T = object> = {
  id: number;
  kind: string;
  stepId: number | null;
  assetKey: string | null;
  partitionKey: string | null;
} & T;

export function ending(row: HeldTrigger): Ending {
  return {
    id: Number(row.id),
    kind: row.kind,
    stepId: row.step_id === null ? null : Number(row.step_id),
    assetKey: row.asset_key,
    partitionKey: row.partition_key,
  };
}

/** An observation trigger's source partition ("" for an unpartitioned source). */
export function observationOf(t: Ending): { triggerId: number; assetKey: string; partitionKey: string } {
  return { triggerId: t.id, assetKey: t.assetKey ?? "", partitionKey: t.partitionKey ?? "" };
}

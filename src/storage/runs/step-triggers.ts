import { sql } from "kysely";
import { notifyIn } from "../database-handle.js";
import type { StepState } from "../database.js";
import { toJson } from "../json.js";
import type { StepCompletion } from "../run-store.js";
import { TRIGGERS_CHANNEL } from "./channels.js";
import type { LockedStep, Trx } from "./step-rows.js";

/**
 * The triggers of deferring tries, in the transaction that moves their steps
 * to `deferred`: a step is never deferred without its trigger. At most one
 * waiting trigger per step (unique index), so a repeated report adds none.
 * Returns the new trigger of each step, for steps.trigger_id.
 */
export async function createStepTriggers(
  trx: Trx,
  applied: readonly { c: StepCompletion; step: LockedStep; state: StepState }[],
  now: Date,
): Promise<Map<number, number>> {
  const rows = applied.flatMap(({ c, step }) =>
    c.outcome === "deferred"
      ? [
          {
            kind: c.trigger.kind,
            args: c.trigger.args,
            step_id: step.id,
            asset_key: step.asset_key,
            partition_key: step.partition_key,
            partition_window: c.trigger.partitionWindow,
            poll_interval_ms: Math.max(1, Math.round(c.trigger.pollIntervalMs)),
            soft_fail: c.trigger.softFail,
            timeout_at: c.trigger.timeoutAt.toISOString(),
            try_number: c.tryNumber,
          },
        ]
      : [],
  );
  if (rows.length === 0) return new Map();
  const { rows: created } = await sql<{ id: string; step_id: string }>`
    insert into triggers (kind, args, step_id, asset_key, partition_key, partition_window, poll_interval_ms, soft_fail,
                          timeout_at, try_number, next_check_at, created_at, updated_at)
    select kind, args, step_id, asset_key, partition_key, partition_window, poll_interval_ms, soft_fail,
           timeout_at, try_number, ${now}, ${now}, ${now}
    from jsonb_to_recordset(${toJson(rows)}::jsonb)
      as x(kind text, args jsonb, step_id bigint, asset_key text, partition_key text, partition_window jsonb,
           poll_interval_ms int, soft_fail boolean, timeout_at timestamptz, try_number int)
    order by step_id
    on conflict (step_id) where status = 'waiting' and step_id is not null do nothing
    returning id, step_id`.execute(trx);
  await notifyIn(trx, TRIGGERS_CHANNEL, "deferred");
  return new Map(created.map((r) => [Number(r.step_id), Number(r.id)]));
}

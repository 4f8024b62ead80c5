import { sql } from "kysely";
import type { SerializedError } from "../../errors/index.js";
import { toJson } from "../json.js";
import type { StepCompletion } from "../run-store.js";
import { upsertPartitionStatus } from "./partition-status.js";
import type { LockedStep, Trx } from "./step-rows.js";

/**
 * Steps that failed for good: a failure event, an alert and the partition's status. `stepError`: the step's error
 * when it is not the try's own (the infrastructure retry budget is spent).
 */
export async function recordFailures(
  trx: Trx,
  failed: readonly { c: StepCompletion; step: LockedStep; stepError?: SerializedError | undefined }[],
  now: Date,
): Promise<void> {
  if (failed.length === 0) return;
  const rows = failed.map(({ c, step, stepError }) => {
    const error = stepError ?? (c.outcome === "failed" || c.outcome === "released" ? c.error : null);
    const failureClass = c.outcome === "failed" ? c.failureClass : c.outcome === "released" ? "infrastructure" : "user";
    return {
      asset_key: step.asset_key,
      partition_key: step.partition_key,
      run_id: step.run_id,
      step_id: step.id,
      try_number: c.tryNumber,
      metadata: { error: error ? { code: error.code, message: error.message } : null, failureClass },
      // A step of a canceled run failing is what the user asked for, not news.
      alert: !step.cancel_requested,
    };
  });
  // The failure event and the alert (routed by the asset's owner) in one
  // statement; cause_key makes a second report of the same try a no-op.
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, partition_key text, run_id uuid, step_id bigint, try_number int, metadata jsonb, alert boolean)
    ), ev as (
      insert into events (kind, asset_key, partition_key, run_id, step_id, try_number, metadata, created_at)
      select 'failure', x.asset_key, x.partition_key, x.run_id, x.step_id, x.try_number, x.metadata, ${now} from x
    )
    insert into alerts (cause_key, kind, asset_key, partition_key, run_id, owner, payload, next_attempt_at, created_at)
    select 'step_failed:' || x.step_id || ':' || x.try_number, 'step_failed', x.asset_key, nullif(x.partition_key, ''),
           x.run_id, a.owner,
           jsonb_build_object('asset', x.asset_key, 'partition', nullif(x.partition_key, ''), 'run', x.run_id,
                              'step', x.step_id, 'try', x.try_number, 'error', x.metadata->'error',
                              'failureClass', x.metadata->'failureClass'),
           ${now}, ${now}
    from x left join assets a on a.key = x.asset_key
    where x.alert
    on conflict (cause_key) do nothing`.execute(trx);
  await upsertPartitionStatus(
    trx,
    rows.map((r) => ({
      asset_key: r.asset_key,
      partition_key: r.partition_key,
      run_id: r.run_id,
      step_id: r.step_id,
      event_id: null,
      data_version: null,
      code_version: null,
    })),
    "failed",
    now,
  );
}

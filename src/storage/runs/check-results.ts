import { sql } from "kysely";
import type { StepState } from "../database.js";
import { toJson } from "../json.js";
import type { StepCompletion } from "../run-store.js";
import type { LockedStep, Trx } from "./step-rows.js";

/**
 * Results of the check steps that ended: one row per try (a verdict, or a failed result carrying the error of
 * a step that never reached one: a timeout, a check gone from its file). A failed blocking check marks the
 * partition's latest materialisation — when it is the one judged — as failing its checks; a pass of the same
 * check on it clears the mark. Every failure is alerted to the asset's owner (blocking or not).
 */
export async function recordCheckResults(
  trx: Trx,
  ended: readonly { c: StepCompletion; step: LockedStep; state: StepState }[],
  now: Date,
): Promise<void> {
  if (ended.length === 0) return;
  const rows = ended.map(({ c, step, state }) => {
    const verdict = c.outcome === "check" ? c : undefined;
    const error = verdict ? verdict.error : c.outcome === "failed" || c.outcome === "released" ? c.error : null;
    return {
      asset_key: step.asset_key,
      partition_key: step.partition_key,
      check_name: step.check_name!,
      run_id: step.run_id,
      step_id: step.id,
      try_number: c.tryNumber,
      passed: verdict?.passed === true,
      severity: verdict?.check.severity ?? "error",
      // Without a verdict the step's own state says whether it blocked its readers.
      blocking: verdict ? verdict.check.blocking : state === "failed",
      metadata: verdict?.metadata ?? {},
      error: error ? { code: error.code, message: error.message } : null,
      event_id: verdict?.eventId ?? null,
      alert: !(verdict?.passed === true) && !step.cancel_requested && state !== "skipped" && state !== "removed",
    };
  });
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, partition_key text, check_name text, run_id uuid, step_id bigint, try_number int, passed boolean,
             severity text, blocking boolean, metadata jsonb, error jsonb, event_id bigint, alert boolean)
    ), ins as (
      insert into check_results (asset_key, check_name, partition_key, run_id, step_id, event_id, passed, severity, blocking,
                                 metadata, try_number, error, created_at)
      select asset_key, check_name, partition_key, run_id, step_id, event_id, passed, severity, blocking, metadata, try_number,
             error, ${now}
      from x
      on conflict (step_id, try_number) where step_id is not null do nothing
    )
    insert into alerts (cause_key, kind, asset_key, partition_key, run_id, owner, payload, next_attempt_at, created_at)
    select 'check_failed:' || x.step_id || ':' || x.try_number, 'check_failed', x.asset_key, nullif(x.partition_key, ''),
           x.run_id, a.owner,
           jsonb_build_object('asset', x.asset_key, 'partition', nullif(x.partition_key, ''), 'run', x.run_id, 'step', x.step_id,
                              'check', x.check_name, 'blocking', x.blocking, 'severity', x.severity, 'metadata', x.metadata,
                              'error', x.error),
           ${now}, ${now}
    from x left join assets a on a.key = x.asset_key
    where x.alert
    on conflict (cause_key) do nothing`.execute(trx);
  // The mark follows the latest verdict of a blocking check on the materialisation it judged.
  const marks = rows.filter((r) => r.blocking && r.event_id !== null);
  if (marks.length > 0) {
    // Per partition at once (two checks of one partition may end in one batch): a failure wins over a pass.
    await sql`
      update partition_status ps
      set failed_check = coalesce(g.failing, case when ps.failed_check = any(g.passing) then null else ps.failed_check end),
          updated_at = ${now}
      from (
        select asset_key, partition_key, event_id,
               min(check_name) filter (where not passed) as failing,
               coalesce(array_agg(check_name) filter (where passed), '{}') as passing
        from jsonb_to_recordset(${toJson(marks)}::jsonb) as x(asset_key text, partition_key text, check_name text, passed boolean, event_id bigint)
        group by asset_key, partition_key, event_id
      ) g
      where ps.asset_key = g.asset_key and ps.partition_key = g.partition_key and ps.last_materialization_event_id = g.event_id`.execute(
      trx,
    );
    // In the event stream too, so automation's cached view of what is materialised follows the verdicts.
    await sql`
      insert into events (kind, asset_key, partition_key, run_id, step_id, try_number, metadata, created_at)
      select 'check_result', x.asset_key, x.partition_key, x.run_id, x.step_id, x.try_number,
             jsonb_build_object('check', x.check_name, 'passed', x.passed, 'blocking', true, 'judgedEventId', x.event_id), ${now}
      from jsonb_to_recordset(${toJson(marks)}::jsonb)
        as x(asset_key text, partition_key text, check_name text, passed boolean, event_id bigint, run_id uuid, step_id bigint, try_number int)`.execute(
      trx,
    );
  }
}

import { sql } from "kysely";
import type { TriggerRule } from "../../sdk/index.js";
import type { StepState } from "../database.js";
import type { RunDecisions } from "../run-decisions.js";
import { toJson } from "../json.js";
import { recordGathered } from "./gathered-outputs.js";
import type { StepChange, Trx } from "./step-rows.js";

/**
 * Applies the trigger rule of every pending step downstream of steps that just
 * ended. The pending steps are locked first (in id order: concurrent
 * completions never deadlock), then their upstreams' states are counted: under
 * READ COMMITTED that statement sees every upstream that ended in a
 * transaction that held the lock before, so two upstreams ending at once
 * cannot both leave a step waiting. Steps that become skipped or
 * upstream_failed end too, so this repeats until nothing changes.
 *
 * With `holdRunnable`, steps whose upstreams let them run are returned in
 * `scheduled` but left pending (and locked): the caller hands out those it
 * can in the same transaction, straight from pending to queued, and
 * schedules the rest with {@link scheduleRunnable}, so a step handed out at
 * once is written once instead of twice.
 */
export async function propagate(
  trx: Trx,
  terminal: readonly StepChange[],
  now: Date,
  decide: Pick<RunDecisions, "triggerRule">,
  /** Pending steps to judge as well (expanded steps whose mapped steps all ended, or one failed). */
  judge: readonly number[] = [],
  options: { readonly holdRunnable?: boolean } = {},
): Promise<{ scheduled: number[]; cascaded: StepChange[] }> {
  let frontier = terminal.map((t) => t.id);
  let extra = [...judge];
  const scheduled: number[] = [];
  const held = new Set<number>();
  const cascaded: StepChange[] = [];
  while (frontier.length > 0 || extra.length > 0) {
    // The candidates as an array, looked up by primary key: as `id in (…) or id = any(…)`, the planner walked every
    // unfinished step (steps_asset_unfinished_idx) on each completion, however few steps were downstream.
    const locked = await sql<{ id: number }>`
      select s.id from steps s
      where s.id = any(array(select d.step_id from step_deps d where d.upstream_step_id = any(${frontier}::bigint[])
                             union select unnest(${extra}::bigint[])))
        and s.state = 'pending'
      order by s.id for no key update of s`.execute(trx);
    extra = [];
    // A step held runnable was decided: it is no longer waiting, as if it had been written scheduled.
    const judged = locked.rows.map((r) => Number(r.id)).filter((id) => !held.has(id));
    if (judged.length === 0) break;
    const { rows } = await sql<{
      id: number;
      run_id: string;
      trigger_rule: TriggerRule;
      pool: string;
      pool_slots: number;
      total: number;
      success: number;
      failed: number;
      upstream_failed: number;
      skipped: number;
      removed: number;
      cancel_requested: boolean;
      failed_check: string | null;
      map_count: number | null;
      failed_item: number | null;
      skipped_item: number | null;
    }>`
      select s.id, s.run_id, s.pool, s.pool_slots, s.map_count,
             -- An expanded step gathers its mapped steps: all of them must succeed, whatever its own rule.
             case when s.map_count is null then s.trigger_rule else 'all_success' end as trigger_rule,
             coalesce(s.map_count, s.upstream_total) as total,
             -- A blocking check that failed upstream: named in the reason the step does not run.
             min(format('blocking check "%s" of asset "%s" failed on %s', u.check_name, u.asset_key,
                        case when u.partition_key = '' then 'the asset' else format('partition "%s"', u.partition_key) end))
               filter (where u.state = 'failed' and u.check_name is not null) as failed_check,
             min(u.map_index) filter (where u.map_index >= 0 and u.state in ('failed', 'upstream_failed')) as failed_item,
             min(u.map_index) filter (where u.map_index >= 0 and u.state = 'skipped') as skipped_item,
             count(*) filter (where u.state = 'success')::int as success,
             count(*) filter (where u.state = 'failed')::int as failed,
             count(*) filter (where u.state = 'upstream_failed')::int as upstream_failed,
             count(*) filter (where u.state = 'skipped')::int as skipped,
             count(*) filter (where u.state = 'removed')::int as removed,
             (r.cancel_requested_at is not null) as cancel_requested
      from steps s
      join runs r on r.id = s.run_id
      join step_deps d on d.step_id = s.id
      join steps u on u.id = d.upstream_step_id
                  -- Gathering, an expanded step counts its current mapped steps only; otherwise (not expanded yet, or
                  -- to expand again) its planned upstreams only.
                  and (case when s.map_count is null then u.map_index < 0 else u.map_index >= 0 and u.map_index < s.map_count end)
      where s.id = any(${judged}::bigint[])
      group by s.id, r.cancel_requested_at`.execute(trx);
    const decisions: { id: number; state: StepState; reason: string | null }[] = [];
    for (const r of rows) {
      const decision = decide.triggerRule(r.trigger_rule, {
        total: r.total,
        success: r.success,
        failed: r.failed,
        upstreamFailed: r.upstream_failed,
        skipped: r.skipped,
        removed: r.removed,
      });
      if (decision === "wait") continue;
      if (r.cancel_requested) decisions.push({ id: Number(r.id), state: "skipped", reason: "run canceled" });
      // Its mapped steps all succeeded: the expanded step gathers them, here, without running anything.
      else if (decision === "run" && r.map_count !== null) decisions.push({ id: Number(r.id), state: "success", reason: null });
      else if (decision === "run") decisions.push({ id: Number(r.id), state: "scheduled", reason: null });
      else if (r.map_count !== null) {
        decisions.push({
          id: Number(r.id),
          state: decision,
          reason:
            decision === "skipped"
              ? `mapped step ${r.skipped_item ?? "?"} was skipped: the partition's outputs are not all there to gather`
              : `mapped step ${r.failed_item ?? "?"} failed: the partition's outputs are not all there to gather`,
        });
      } else {
        decisions.push({
          id: Number(r.id),
          state: decision,
          reason:
            decision === "skipped"
              ? `trigger rule ${r.trigger_rule}: upstream steps were skipped or did not meet it`
              : r.failed_check
                ? `not run on data that failed its checks: ${r.failed_check}`
                : null,
        });
      }
    }
    if (decisions.length === 0) break;
    const written = options.holdRunnable ? decisions.filter((d) => d.state !== "scheduled") : decisions;
    if (written.length > 0) {
      await sql`
        update steps set state = x.state, skip_reason = x.reason, updated_at = ${now},
                         scheduled_at = case when x.state = 'scheduled' then ${now}::timestamptz else steps.scheduled_at end,
                         ended_at = case when x.state = 'scheduled' then null else ${now}::timestamptz end
        from jsonb_to_recordset(${toJson(written)}::jsonb) as x(id bigint, state text, reason text)
        where steps.id = x.id and steps.state = 'pending'`.execute(trx);
    }
    await recordGathered(
      trx,
      decisions.filter((d) => d.state === "success").map((d) => d.id),
      now,
    );
    const rowById = new Map(rows.map((r) => [Number(r.id), r]));
    frontier = [];
    for (const d of decisions) {
      if (d.state === "scheduled") {
        scheduled.push(d.id);
        if (options.holdRunnable) held.add(d.id);
        continue;
      }
      const r = rowById.get(d.id)!;
      frontier.push(d.id);
      cascaded.push({ id: d.id, run_id: r.run_id, state: d.state, wasActive: false, pool: r.pool, pool_slots: r.pool_slots });
    }
  }
  return { scheduled, cascaded };
}

/** Steps that {@link propagate} left pending with `holdRunnable` and the caller did not hand out: scheduled now. */
export async function scheduleRunnable(trx: Trx, stepIds: readonly number[], now: Date): Promise<void> {
  if (stepIds.length === 0) return;
  await sql`
    update steps set state = 'scheduled', skip_reason = null, updated_at = ${now}, scheduled_at = ${now}, ended_at = null
    where id = any(${[...stepIds]}::bigint[]) and state = 'pending'`.execute(trx);
}

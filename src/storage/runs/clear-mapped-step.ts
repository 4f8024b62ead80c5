import { sql, type Kysely } from "kysely";
import { withAudit, type AuditEntry } from "../audit-trail.js";
import { InputError } from "../../errors/index.js";
import { notifyIn } from "../database-handle.js";
import type { Database, StepState } from "../database.js";
import { toJson } from "../json.js";
import type { ClearedMappedStep, MappedStepRef } from "../run-store.js";
import { WAKE_CHANNEL } from "./channels.js";
import { lockRuns } from "./run-counters.js";
import { isUuid, runNotFound, SUMMARY_COLUMNS, toRunSummary } from "./run-summary.js";
import { isTerminalState, MAPPED_STEP_OF, UNFINISHED } from "./step-rows.js";

export async function clearMappedStep(
  db: Kysely<Database>,
  target: MappedStepRef,
  now: Date,
  audit?: AuditEntry,
): Promise<ClearedMappedStep> {
  const { runId, assetKey, partitionKey, mapIndex } = target;
  if (!Number.isSafeInteger(mapIndex) || mapIndex < 0) {
    throw new InputError(`map index must be a whole number from 0, got ${String(mapIndex)}`, {
      code: "MAP_INDEX_INVALID",
      location: { field: "mapIndex" },
    });
  }
  if (!isUuid(runId)) throw runNotFound(runId);
  const where = `asset "${assetKey}"${partitionKey ? ` partition "${partitionKey}"` : ""}`;
  return db.transaction().execute(async (trx) =>
    withAudit(trx, audit, now, async () => {
      const run = await trx.selectFrom("runs").select(["id"]).where("id", "=", runId).executeTakeFirst();
      if (!run) throw runNotFound(runId);
      const { rows: found } = await sql<{ id: number; map_index: number; map_count: number | null }>`
      select id, map_index, map_count from steps
      where run_id = ${runId}::uuid and asset_key = ${assetKey} and partition_key = ${partitionKey} and check_name is null
        and map_index in (-1, ${mapIndex}::int)`.execute(trx);
      const parent = found.find((f) => f.map_index === -1);
      const step = found.find((f) => f.map_index === mapIndex);
      if (!step) {
        const why = !parent
          ? `run ${runId} has no step of ${where}`
          : parent.map_count === null
            ? `the step of ${where} in run ${runId} has no mapped steps: it has not fanned out`
            : `the fan-out of ${where} in run ${runId} has ${parent.map_count} item(s): map indices 0 to ${parent.map_count - 1}`;
        throw new InputError(`no mapped step ${mapIndex}: ${why}`, {
          code: "STEP_NOT_FOUND",
          location: { assetKey, partitionKey, field: "mapIndex" },
        });
      }
      // The step and every step after it in the run (its expanded step, then theirs), locked in id order.
      const { rows: reach } = await sql<{
        id: number;
        state: StepState;
        asset_key: string;
        partition_key: string;
        map_index: number;
        check_name: string | null;
        map_count: number | null;
      }>`
      with recursive down(id) as (
        select ${step.id}::bigint
        union
        select d.step_id from step_deps d join down on d.upstream_step_id = down.id
      )
      select s.id, s.state, s.asset_key, s.partition_key, s.map_index, s.check_name, s.map_count
      from steps s where s.id in (select id from down) order by s.id for no key update`.execute(trx);
      const steps = reach.map((r) => ({ ...r, id: Number(r.id) }));
      const describe = (r: (typeof steps)[number]) =>
        `${r.check_name ? `check "${r.check_name}" of ` : ""}asset "${r.asset_key}"${r.partition_key ? ` partition "${r.partition_key}"` : ""}` +
        `${r.map_index >= 0 ? ` mapped step ${r.map_index}` : ""}`;
      const self = steps.find((r) => r.id === Number(step.id))!;
      if (self.state === "removed") {
        throw new InputError(`${describe(self)} was removed from run ${runId}: its fan-out has fewer items now`, {
          code: "STEP_REMOVED",
          location: { assetKey, partitionKey },
        });
      }
      for (const r of steps) {
        if (UNFINISHED.includes(r.state)) {
          throw new InputError(
            `${describe(r)} is ${r.state} in run ${runId}: wait for it to end (or cancel the run) before clearing ${r.id === self.id ? "it" : `${describe(self)}, which it follows`}`,
            { code: "STEP_ACTIVE", location: { assetKey: r.asset_key, partitionKey: r.partition_key } },
          );
        }
      }
      // Other expanded steps after it fan out again: their mapped steps must all have ended.
      const refanned = steps.filter((r) => r.map_count !== null && r.id !== Number(parent!.id)).map((r) => r.id);
      if (refanned.length > 0) {
        const { rows: busy } = await sql<{ asset_key: string; partition_key: string; map_index: number; state: StepState }>`
        select c.asset_key, c.partition_key, c.map_index, c.state from steps p
        join steps c on ${MAPPED_STEP_OF}
        where p.id = any(${refanned}::bigint[]) and c.state = any(${UNFINISHED}::text[]) limit 1`.execute(trx);
        const b = busy[0];
        if (b) {
          throw new InputError(
            `asset "${b.asset_key}"${b.partition_key ? ` partition "${b.partition_key}"` : ""} mapped step ${b.map_index} is ${b.state} in run ${runId}: wait for it to end before clearing ${describe(self)}`,
            {
              code: "STEP_ACTIVE",
              location: { assetKey: b.asset_key, partitionKey: b.partition_key },
            },
          );
        }
      }
      // A later run that materialised (or is materialising) one of these partitions superseded this run there.
      const partitions = steps
        .filter((r) => r.map_index === -1 && r.check_name === null)
        .map((r) => ({ asset_key: r.asset_key, partition_key: r.partition_key, step_id: r.id }));
      const { rows: newer } = await sql<{ run_id: string; asset_key: string; partition_key: string; state: StepState; created_at: Date }>`
      select s2.run_id, s2.asset_key, s2.partition_key, s2.state, r2.created_at
      from jsonb_to_recordset(${toJson(partitions)}::jsonb) as x(asset_key text, partition_key text, step_id bigint)
      join steps s2 on s2.asset_key = x.asset_key and s2.partition_key = x.partition_key and s2.map_index = -1 and s2.check_name is null
                   and s2.id > x.step_id and s2.run_id <> ${runId}::uuid
      join runs r2 on r2.id = s2.run_id
      where s2.state not in ('skipped', 'removed', 'upstream_failed')
      order by s2.id desc limit 1`.execute(trx);
      const n = newer[0];
      if (n) {
        const what = n.state === "success" ? "materialised it" : n.state === "failed" ? "tried to materialise it" : "is materialising it";
        throw new InputError(
          `run ${runId} was superseded for asset "${n.asset_key}"${n.partition_key ? ` partition "${n.partition_key}"` : ""}: ` +
            `run ${n.run_id} (created ${n.created_at.toISOString()}) ${what} since. Clearing ${describe(self)} inside the old run ` +
            `would overwrite newer data; clear the partition instead (\`tributary clear ${n.asset_key}${n.partition_key ? ` --partition ${n.partition_key}` : ""}\`)`,
          { code: "CLEAR_SUPERSEDED", location: { assetKey: n.asset_key, partitionKey: n.partition_key } },
        );
      }
      const done = steps.filter((r) => isTerminalState(r.state)).length;
      const failed = steps.filter((r) => r.state === "failed" || r.state === "upstream_failed").length;
      await sql`
      update steps set state = case when id = ${self.id}::bigint then 'scheduled' else 'pending' end,
                       scheduled_at = case when id = ${self.id}::bigint then ${now}::timestamptz else scheduled_at end,
                       error = null, skip_reason = null, ended_at = null, next_retry_at = null, heartbeat_at = null,
                       updated_at = ${now},
                       -- Its expanded step only gathers again (no try of its own); the others run again, with a
                       -- fresh retry budget (and infrastructure budget), and an expanded step among them fans out again.
                       tries_before = case when id = ${Number(parent!.id)}::bigint then tries_before else try_number end,
                       infrastructure_failures = case when id = ${Number(parent!.id)}::bigint then infrastructure_failures else 0 end,
                       started_at = case when id = ${Number(parent!.id)}::bigint then started_at end,
                       worker_id = case when id = ${Number(parent!.id)}::bigint then worker_id end,
                       map_count = case when id = ${Number(parent!.id)}::bigint then map_count end,
                       map_open = case when id = ${Number(parent!.id)}::bigint then map_open end
      where id = any(${steps.map((r) => r.id)}::bigint[]) and state <> 'pending'`.execute(trx);
      // The expanded step gathers once its mapped steps that have not ended (the cleared one among them) end. Counted
      // afresh: once the expanded step was judged (a mapped step failed), its siblings ending counted nothing down.
      await sql`
      update steps p set map_open = (select count(*)::int from steps c where ${MAPPED_STEP_OF} and c.map_index < p.map_count
                                                                and c.state = any(${UNFINISHED}::text[]))
      where p.id = ${Number(parent!.id)}::bigint`.execute(trx);
      await lockRuns(trx, [runId]);
      const updated = await sql<Parameters<typeof toRunSummary>[0]>`
      update runs set steps_done = steps_done - ${done}::int, steps_failed = steps_failed - ${failed}::int, status = 'running',
                      ended_at = null, cancel_requested_at = null, plan_version = plan_version + 1, updated_at = ${now}
      where id = ${runId}::uuid
      returning ${sql.join(SUMMARY_COLUMNS.map((c) => sql.ref(c)))}`.execute(trx);
      await notifyIn(trx, WAKE_CHANNEL, "clear");
      return {
        run: toRunSummary(updated.rows[0]!),
        stepId: self.id,
        cleared: [self, ...steps.filter((r) => r.id !== self.id)].map((r) => ({
          stepId: r.id,
          assetKey: r.asset_key,
          partitionKey: r.partition_key,
          mapIndex: r.map_index,
          checkName: r.check_name,
        })),
      };
    }),
  );
}

import { sql, type Kysely } from "kysely";
import type { Database, RunStatus } from "../database.js";
import type { RunDetail, RunSummary, StepRecord, StepTryRecord } from "../run-store.js";
import { isUuid, SUMMARY_COLUMNS, toRunSummary } from "./run-summary.js";

export async function getRun(db: Kysely<Database>, runId: string): Promise<RunDetail | undefined> {
  if (!isUuid(runId)) return undefined;
  const run = await db.selectFrom("runs").selectAll().where("id", "=", runId).executeTakeFirst();
  if (!run) return undefined;
  const [steps, deps, tries] = await Promise.all([
    db.selectFrom("steps").selectAll().where("run_id", "=", runId).orderBy("id").execute(),
    db
      .selectFrom("step_deps")
      .innerJoin("steps", "steps.id", "step_deps.step_id")
      .select(["step_deps.step_id", "step_deps.upstream_step_id"])
      .where("steps.run_id", "=", runId)
      .execute(),
    db.selectFrom("step_tries").selectAll().where("run_id", "=", runId).orderBy("try_number").execute(),
  ]);
  const upstream = new Map<number, number[]>();
  for (const d of deps) upstream.set(d.step_id, [...(upstream.get(d.step_id) ?? []), d.upstream_step_id]);
  const triesByStep = new Map<number, StepTryRecord[]>();
  for (const t of tries) {
    const list = triesByStep.get(t.step_id) ?? [];
    list.push({
      tryNumber: t.try_number,
      state: t.state,
      workerId: t.worker_id,
      hostname: t.hostname,
      pid: t.pid,
      queuedAt: t.queued_at,
      startedAt: t.started_at,
      endedAt: t.ended_at,
      durationMs: t.duration_ms,
      error: t.error,
      failureClass: t.failure_class,
      logRef: t.log_ref,
    });
    triesByStep.set(t.step_id, list);
  }
  const stepRecords: StepRecord[] = steps.map((s) => ({
    id: s.id,
    runId: s.run_id,
    assetKey: s.asset_key,
    partitionKey: s.partition_key,
    mapIndex: s.map_index,
    checkName: s.check_name,
    mapLabel: s.map_label,
    mapCount: s.map_count,
    state: s.state,
    tryNumber: s.try_number,
    maxTries: s.max_tries + s.tries_before,
    pool: s.pool,
    priority: s.priority,
    scheduledAt: s.scheduled_at,
    queuedAt: s.queued_at,
    startedAt: s.started_at,
    endedAt: s.ended_at,
    nextRetryAt: s.next_retry_at,
    workerId: s.worker_id,
    skipReason: s.skip_reason,
    error: s.error,
    upstream: (upstream.get(s.id) ?? []).sort((a, b) => a - b),
    tries: triesByStep.get(s.id) ?? [],
  }));
  return { ...toRunSummary(run), plan: run.plan, steps: stepRecords };
}

export async function getRunSummary(db: Kysely<Database>, runId: string): Promise<RunSummary | undefined> {
  if (!isUuid(runId)) return undefined;
  const row = await db.selectFrom("runs").select(SUMMARY_COLUMNS).where("id", "=", runId).executeTakeFirst();
  return row && toRunSummary(row);
}

export async function listRuns(
  db: Kysely<Database>,
  options: { limit?: number; status?: RunStatus; before?: Date; backfillId?: string } = {},
): Promise<RunSummary[]> {
  let q = db
    .selectFrom("runs")
    .select(SUMMARY_COLUMNS)
    .orderBy("created_at", "desc")
    .orderBy("id")
    .limit(options.limit ?? 50);
  if (options.status) q = q.where("status", "=", options.status);
  if (options.backfillId !== undefined)
    q = isUuid(options.backfillId) ? q.where("backfill_id", "=", options.backfillId) : q.where(sql<boolean>`false`);
  if (options.before) q = q.where("created_at", "<", options.before);
  return (await q.execute()).map(toRunSummary);
}

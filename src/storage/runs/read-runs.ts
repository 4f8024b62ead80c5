import { sql, type Kysely } from "kysely";
import type { Database, RunStatus } from "../database.js";
import type { RunDetail, RunSummary, StepRecord, StepTryRecord } from "../run-store.js";
import { isUuid, SUMMARY_COLUMNS, toRunSummary } from "./run-summary.js";

export async function getRun(db: Kysely<Database>, runId: string): Promise<RunDetail | undefined> {
  if (!isUuid(runId)) return undefined;
  const [run, steps] = await Promise.all([
    db.selectFrom("runs").selectAll().where("id", "=", runId).executeTakeFirst(),
    stepsOfRuns(db, [runId]),
  ]);
  if (!run) return undefined;
  return { ...toRunSummary(run), plan: run.plan, steps: steps.get(runId) ?? [] };
}

/**
 * The steps of each run, with their upstream step ids and their tries, in id order: three statements whatever the
 * number of runs (a page of runs asking for its steps). A run without steps, or no such run, is absent.
 */
export async function stepsOfRuns(db: Kysely<Database>, runIds: readonly string[]): Promise<Map<string, StepRecord[]>> {
  const ids = [...new Set(runIds.filter(isUuid))];
  const out = new Map<string, StepRecord[]>();
  if (ids.length === 0) return out;
  const [steps, deps, tries] = await Promise.all([
    db.selectFrom("steps").selectAll().where("run_id", "in", ids).orderBy("id").execute(),
    db
      .selectFrom("step_deps")
      .innerJoin("steps", "steps.id", "step_deps.step_id")
      .select(["step_deps.step_id", "step_deps.upstream_step_id"])
      .where("steps.run_id", "in", ids)
      .execute(),
    db.selectFrom("step_tries").selectAll().where("run_id", "in", ids).orderBy("step_id").orderBy("try_number").execute(),
  ]);
  const upstream = new Map<number, number[]>();
  for (const d of deps) listIn(upstream, d.step_id).push(d.upstream_step_id);
  const triesByStep = new Map<number, StepTryRecord[]>();
  for (const t of tries) {
    const record: StepTryRecord = {
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
    };
    listIn(triesByStep, t.step_id).push(record);
  }
  for (const s of steps) {
    const record: StepRecord = {
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
    };
    listIn(out, s.run_id).push(record);
  }
  return out;
}

/** The list under `key`, added empty when there is none. */
function listIn<K, V>(map: Map<K, V[]>, key: K): V[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
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

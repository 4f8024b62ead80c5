import { sql } from "kysely";
import { notifyIn } from "../database-handle.js";
import { toJson } from "../json.js";
import type { NewRun } from "../run-store.js";
import { WAKE_CHANNEL } from "./channels.js";
import { DEFAULT_POOL, type Trx } from "./step-rows.js";

/**
 * Creates a run, its steps and their edges, and starts it, inside the
 * caller's transaction (a backfill creates its runs in the transaction that
 * moves its cursor). With an idempotency key that exists already, returns
 * that run (created: false) and writes nothing.
 */
export async function insertRun(trx: Trx, run: NewRun, now: Date): Promise<{ runId: string; created: boolean }> {
  const steps = run.steps;
  const inserted = await trx
    .insertInto("runs")
    .values({
      status: "queued",
      origin: run.origin,
      backfill_id: run.backfillId ?? null,
      idempotency_key: run.idempotencyKey ?? null,
      snapshot_version: run.snapshotVersion,
      plan: toJson(run.plan),
      job_name: run.jobName ?? null,
      priority: run.priority ?? 0,
      tags: toJson(run.tags ?? {}),
      max_active_steps: run.maxActiveSteps ?? null,
      max_active_runs: run.maxActiveRuns ?? null,
      steps_total: steps.length,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("idempotency_key").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted) {
    const existing = await trx
      .selectFrom("runs")
      .select("id")
      .where("idempotency_key", "=", run.idempotencyKey ?? "")
      .executeTakeFirstOrThrow();
    return { runId: existing.id, created: false };
  }
  const runId = inserted.id;
  // Admitted now, the run's steps without upstreams are written scheduled (they pass every trigger rule).
  const admitted = await admits(trx, run.jobName ?? null, run.maxActiveRuns ?? null);
  if (steps.length > 0) {
    const { rows: idRows } = await sql<{ id: number }>`
      select nextval('steps_id_seq') as id from generate_series(1, ${steps.length}::int)`.execute(trx);
    const ids = idRows.map((r) => Number(r.id)).sort((a, b) => a - b);
    // Plan steps come in topological order: every upstream index is smaller.
    const depth: number[] = [];
    steps.forEach((s, i) => (depth[i] = s.upstream.reduce((d, up) => Math.max(d, (depth[up] ?? 0) + 1), 0)));
    const stepRows = steps.map((s, i) => {
      const cfg = run.settings(s.assetKey);
      // A check's step runs once under all_success (a check that throws is a failed result, not a retry) and
      // otherwise shares its asset's pool, executor, queue, timeout and priority.
      const isCheck = s.check !== undefined;
      return {
        id: ids[i],
        asset_key: s.assetKey,
        partition_key: s.partitionKey,
        check_name: s.check ?? null,
        trigger_rule: isCheck ? "all_success" : cfg.triggerRule,
        max_tries: isCheck ? 1 : cfg.retries.max + 1,
        retry_policy: isCheck ? null : cfg.retries,
        priority: cfg.priority + (run.priority ?? 0),
        pool: cfg.pool ?? DEFAULT_POOL,
        pool_slots: cfg.poolSlots,
        executor: cfg.executor,
        queue: cfg.queue,
        timeout_ms: cfg.timeoutMs,
        max_concurrency: cfg.maxConcurrency,
        upstream_total: s.upstream.length,
        depth: depth[i],
      };
    });
    await sql`
      insert into steps (id, run_id, asset_key, partition_key, check_name, trigger_rule, max_tries, retry_policy, priority, pool,
                         pool_slots, executor, queue, timeout_ms, max_concurrency, upstream_total, depth, state, scheduled_at,
                         created_at, updated_at)
      select x.id, ${runId}::uuid, x.asset_key, x.partition_key, x.check_name, x.trigger_rule, x.max_tries, x.retry_policy, x.priority,
             x.pool, x.pool_slots, x.executor, x.queue, x.timeout_ms, x.max_concurrency, x.upstream_total, x.depth,
             case when ${admitted} and x.upstream_total = 0 then 'scheduled' else 'pending' end,
             case when ${admitted} and x.upstream_total = 0 then ${now}::timestamptz end, ${now}, ${now}
      from jsonb_to_recordset(${toJson(stepRows)}::jsonb) as x(
        id bigint, asset_key text, partition_key text, check_name text, trigger_rule text, max_tries int, retry_policy jsonb,
        priority int, pool text, pool_slots int, executor text, queue text, timeout_ms bigint, max_concurrency int,
        upstream_total int, depth int)`.execute(trx);
    const edges: [number, number][] = [];
    steps.forEach((s, i) => {
      for (const up of s.upstream) edges.push([ids[i]!, ids[up]!]);
    });
    if (edges.length > 0) {
      await sql`
        insert into step_deps (step_id, upstream_step_id)
        select (e->>0)::bigint, (e->>1)::bigint from jsonb_array_elements(${toJson(edges)}::jsonb) e`.execute(trx);
    }
  }
  if (admitted) await markStarted(trx, runId, steps.length === 0, now);
  await notifyIn(trx, WAKE_CHANNEL, "run");
  return { runId, created: true };
}

/** Starts a queued run if its job has room: its root steps become scheduled. */
export async function startRun(trx: Trx, runId: string, now: Date): Promise<boolean> {
  const run = await trx
    .selectFrom("runs")
    .select(["id", "status", "job_name", "max_active_runs", "steps_total"])
    .where("id", "=", runId)
    .executeTakeFirst();
  if (!run || run.status !== "queued" || !(await admits(trx, run.job_name, run.max_active_runs))) return false;
  await markStarted(trx, runId, run.steps_total === 0, now);
  // Steps without upstreams pass every trigger rule.
  await trx
    .updateTable("steps")
    .set({ state: "scheduled", scheduled_at: now, updated_at: now })
    .where("run_id", "=", runId)
    .where("state", "=", "pending")
    .where("upstream_total", "=", 0)
    .execute();
  return true;
}

/** Whether a run of `jobName` may start now: its job has fewer than `maxActiveRuns` running (one decision at a time per job). */
async function admits(trx: Trx, jobName: string | null, maxActiveRuns: number | null): Promise<boolean> {
  if (!jobName || !maxActiveRuns) return true;
  // One transaction at a time decides a job's admissions.
  await sql`select pg_advisory_xact_lock(hashtext(${`tributary.job:${jobName}`}))`.execute(trx);
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from runs where job_name = ${jobName} and status = 'running'`.execute(trx);
  return (rows[0]?.n ?? 0) < maxActiveRuns;
}

/** The run is running from now (or, without steps, ended successfully). */
async function markStarted(trx: Trx, runId: string, empty: boolean, now: Date): Promise<void> {
  await trx
    .updateTable("runs")
    .set({ status: empty ? "success" : "running", started_at: now, updated_at: now, ...(empty ? { ended_at: now } : {}) })
    .where("id", "=", runId)
    .execute();
}

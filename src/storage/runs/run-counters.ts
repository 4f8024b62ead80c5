import { sql } from "kysely";
import type { RunStatus } from "../database.js";
import { toJson } from "../json.js";
import { isTerminalState, type StepChange, type Trx } from "./step-rows.js";

/** Changes to a run's counters besides its steps' own moves: steps added (an expansion), steps counted done no more. */
export interface RunAdjust {
  total: number;
  done: number;
  failed: number;
  /** Plan versions to add (one per expansion or clear). */
  plan: number;
}

export function addAdjust(map: Map<string, RunAdjust>, runId: string, a: Partial<RunAdjust>): void {
  const cur = map.get(runId) ?? { total: 0, done: 0, failed: 0, plan: 0 };
  cur.total += a.total ?? 0;
  cur.done += a.done ?? 0;
  cur.failed += a.failed ?? 0;
  cur.plan += a.plan ?? 0;
  map.set(runId, cur);
}

/** Keeps the run counters in step and finishes runs whose steps are all done. */
export async function updateRunCounters(
  trx: Trx,
  changes: readonly StepChange[],
  now: Date,
  adjust: ReadonlyMap<string, RunAdjust> = new Map(),
): Promise<{ runId: string; status: RunStatus }[]> {
  const perRun = new Map<string, { done: number; failed: number; active: number; total: number; plan: number }>();
  const agg = (runId: string) => {
    let a = perRun.get(runId);
    if (!a) perRun.set(runId, (a = { done: 0, failed: 0, active: 0, total: 0, plan: 0 }));
    return a;
  };
  for (const c of changes) {
    const a = agg(c.run_id);
    if (isTerminalState(c.state)) a.done++;
    if (c.state === "failed" || c.state === "upstream_failed") a.failed++;
    if (c.wasActive) a.active++;
  }
  for (const [runId, x] of adjust) {
    const a = agg(runId);
    a.total += x.total;
    a.done += x.done;
    a.failed += x.failed;
    a.plan += x.plan;
  }
  await lockRuns(trx, [...perRun.keys()]);
  const input = toJson([...perRun].map(([run_id, a]) => ({ run_id, ...a })));
  const { rows } = await sql<{ id: string; status: RunStatus; finished: boolean }>`
    update runs set
      steps_total = runs.steps_total + x.total,
      steps_done = runs.steps_done + x.done,
      steps_failed = runs.steps_failed + x.failed,
      steps_active = greatest(0, runs.steps_active - x.active),
      plan_version = runs.plan_version + x.plan,
      status = case
        when runs.status not in ('queued', 'running') then runs.status
        when runs.steps_done + x.done < runs.steps_total + x.total then runs.status
        when runs.cancel_requested_at is not null then 'canceled'
        when runs.steps_failed + x.failed > 0 then 'failed'
        else 'success' end,
      ended_at = case when runs.status in ('queued', 'running') and runs.steps_done + x.done >= runs.steps_total + x.total
                      then ${now}::timestamptz else runs.ended_at end,
      updated_at = ${now}
    from jsonb_to_recordset(${input}::jsonb) as x(run_id uuid, done int, failed int, active int, total int, plan int)
    where runs.id = x.run_id
    returning runs.id, runs.status, (runs.ended_at = ${now}::timestamptz) as finished`.execute(trx);
  return rows.filter((r) => r.finished && r.status !== "running" && r.status !== "queued").map((r) => ({ runId: r.id, status: r.status }));
}

/**
 * Locks runs rows in id order. Transactions that update several runs (claims,
 * completions, housekeeping) lock them this way first, after their steps and
 * pools: taken in the order an UPDATE … FROM happens to visit them, two
 * transactions touching the same runs deadlock (as pools, locked by name).
 * Row locks throughout are FOR NO KEY UPDATE, never FOR UPDATE: updating a step
 * a second time in one transaction (propagated, then claimed) re-checks its
 * foreign key and takes KEY SHARE on the run, which FOR UPDATE waits for; two
 * completions in one run would each hold that and wait for the other.
 */
export async function lockRuns(trx: Trx, runIds: readonly string[]): Promise<void> {
  if (runIds.length === 0) return;
  await sql`select id from runs where id = any(${[...new Set(runIds)]}::uuid[]) order by id for no key update`.execute(trx);
}

export async function adjustRunActive(trx: Trx, runIds: readonly string[], sign: 1 | -1, now: Date): Promise<void> {
  if (runIds.length === 0) return;
  const perRun = new Map<string, number>();
  for (const r of runIds) perRun.set(r, (perRun.get(r) ?? 0) + 1);
  await lockRuns(trx, [...perRun.keys()]);
  const input = toJson([...perRun].map(([run_id, n]) => ({ run_id, n: n * sign })));
  await sql`
    update runs set steps_active = greatest(0, steps_active + x.n), updated_at = ${now}
    from jsonb_to_recordset(${input}::jsonb) as x(run_id uuid, n int)
    where runs.id = x.run_id`.execute(trx);
}

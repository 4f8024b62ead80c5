import { sql } from "kysely";
import type { StepState } from "../database.js";
import { toJson } from "../json.js";
import type { StepCompletion } from "../run-store.js";
import { addAdjust, type RunAdjust } from "./run-counters.js";
import { isTerminalState, MAPPED_STEP_OF, type LockedStep, type Trx } from "./step-rows.js";

/**
 * The mapped steps of steps that fanned out, in the transaction that moves them to `pending`: one per item,
 * scheduled at once (they read what their expanded step read, which has all ended), each an upstream of the
 * expanded step, which gathers them. A step expanded before (cleared since, inside its run) reuses its
 * mapped steps by index: those within the new list run again on their new item, those past it are removed.
 */
export async function expandSteps(
  trx: Trx,
  expanded: readonly { c: StepCompletion; step: LockedStep }[],
  now: Date,
): Promise<{ scheduled: number[]; adjust: Map<string, RunAdjust> }> {
  const adjust = new Map<string, RunAdjust>();
  if (expanded.length === 0) return { scheduled: [], adjust };
  const lists = expanded.flatMap(({ c, step }) =>
    c.outcome === "expanded" ? [{ parent: step.id, items: JSON.parse(c.itemsJson) as unknown[], labels: c.labels ?? [] }] : [],
  );
  const parentIds = lists.map((l) => l.parent);
  const { rows: earlier } = await sql<{ id: number; parent: number; run_id: string; map_index: number; state: StepState }>`
    select c.id, p.id as parent, c.run_id, c.map_index, c.state
    from steps p join steps c on ${MAPPED_STEP_OF}
    where p.id = any(${parentIds}::bigint[])
    order by c.id for no key update of c`.execute(trx);
  const runOf = new Map(expanded.map(({ step }) => [step.id, step.run_id]));
  const reuse: { id: number; item: unknown; label: string | null }[] = [];
  const removed: number[] = [];
  const existing = new Map<string, number>();
  for (const e of earlier) {
    const parent = Number(e.parent);
    existing.set(`${parent}:${e.map_index}`, Number(e.id));
    const list = lists.find((l) => l.parent === parent)!;
    const wasDone = isTerminalState(e.state);
    const wasFailed = e.state === "failed" || e.state === "upstream_failed";
    if (e.map_index < list.items.length) {
      reuse.push({ id: Number(e.id), item: list.items[e.map_index], label: list.labels[e.map_index] ?? null });
      addAdjust(adjust, e.run_id, { done: wasDone ? -1 : 0, failed: wasFailed ? -1 : 0 });
    } else if (e.state !== "removed") {
      removed.push(Number(e.id));
      addAdjust(adjust, e.run_id, { done: wasDone ? 0 : 1, failed: wasFailed ? -1 : 0 });
    }
  }
  const fresh = lists.flatMap((l) =>
    l.items.flatMap((item, index) =>
      existing.has(`${l.parent}:${index}`) ? [] : [{ parent: l.parent, map_index: index, item, label: l.labels[index] ?? null }],
    ),
  );
  const scheduled: number[] = [];
  if (fresh.length > 0) {
    // Ids first (as insertRun does), so the edges to the expanded steps need no join back to the new rows.
    const { rows: idRows } = await sql<{ id: number }>`
      select nextval('steps_id_seq') as id from generate_series(1, ${fresh.length}::int)`.execute(trx);
    const ids = idRows.map((r) => Number(r.id)).sort((a, b) => a - b);
    const rows = fresh.map((f, i) => ({ ...f, id: ids[i]! }));
    await sql`
      insert into steps (id, run_id, asset_key, partition_key, map_index, state, trigger_rule, max_tries, retry_policy, priority,
                         pool, pool_slots, executor, queue, timeout_ms, max_concurrency, upstream_total, depth, scheduled_at,
                         map_item, map_label, created_at, updated_at)
      select x.id, p.run_id, p.asset_key, p.partition_key, x.map_index, 'scheduled', p.trigger_rule, p.max_tries, p.retry_policy,
             p.priority, p.pool, p.pool_slots, p.executor, p.queue, p.timeout_ms, p.max_concurrency, 0, p.depth, ${now},
             x.item, x.label, ${now}, ${now}
      from jsonb_to_recordset(${toJson(rows)}::jsonb) as x(id bigint, parent bigint, map_index int, item jsonb, label text)
      join steps p on p.id = x.parent
      order by x.id`.execute(trx);
    await sql`
      insert into step_deps (step_id, upstream_step_id)
      select x.parent, x.id from jsonb_to_recordset(${toJson(rows.map((r) => ({ parent: r.parent, id: r.id })))}::jsonb) as x(parent bigint, id bigint)`.execute(
      trx,
    );
    for (const r of rows) {
      scheduled.push(r.id);
      addAdjust(adjust, runOf.get(r.parent)!, { total: 1 });
    }
  }
  if (reuse.length > 0) {
    await sql`
      update steps set state = 'scheduled', map_item = x.item, map_label = x.label, tries_before = steps.try_number,
                       infrastructure_failures = 0,
                       error = null, skip_reason = null, ended_at = null, next_retry_at = null, started_at = null,
                       worker_id = null, heartbeat_at = null, scheduled_at = ${now}, updated_at = ${now}
      from jsonb_to_recordset(${toJson(reuse)}::jsonb) as x(id bigint, item jsonb, label text)
      where steps.id = x.id`.execute(trx);
    scheduled.push(...reuse.map((r) => r.id));
  }
  if (removed.length > 0) {
    await sql`
      update steps set state = 'removed', skip_reason = 'the fan-out has fewer items now', ended_at = ${now}, updated_at = ${now}
      where id = any(${removed}::bigint[])`.execute(trx);
  }
  for (const l of lists) addAdjust(adjust, runOf.get(l.parent)!, { plan: 1 });
  return { scheduled, adjust };
}

/**
 * Mapped steps that ended: their expanded steps' counts of open mapped steps go down (the expanded steps are
 * locked in id order first, as propagate locks). Returns the expanded steps to judge now: those with none
 * open, and those with a mapped step that did not succeed (all_success fails fast).
 */
export async function countDownExpanded(trx: Trx, ended: readonly { step: LockedStep; state: StepState }[], now: Date): Promise<number[]> {
  if (ended.length === 0) return [];
  const groups = new Map<string, { run_id: string; asset_key: string; partition_key: string; n: number; bad: boolean }>();
  for (const { step, state } of ended) {
    const k = `${step.run_id}\u0000${step.asset_key}\u0000${step.partition_key}`;
    const g = groups.get(k) ?? { run_id: step.run_id, asset_key: step.asset_key, partition_key: step.partition_key, n: 0, bad: false };
    g.n++;
    if (state !== "success") g.bad = true;
    groups.set(k, g);
  }
  const { rows } = await sql<{ id: number; open: number; bad: boolean }>`
    with x as (
      select * from jsonb_to_recordset(${toJson([...groups.values()])}::jsonb)
        as x(run_id uuid, asset_key text, partition_key text, n int, bad boolean)
    ), p as (
      select s.id, x.n, x.bad from x
      join steps s on s.run_id = x.run_id and s.asset_key = x.asset_key and s.partition_key = x.partition_key
                  and s.map_index = -1 and s.check_name is null
      where s.state = 'pending' and s.map_count is not null
      order by s.id for no key update of s
    )
    update steps set map_open = steps.map_open - p.n, updated_at = ${now}
    from p where steps.id = p.id
    returning steps.id, steps.map_open as open, p.bad`.execute(trx);
  return rows.filter((r) => r.open <= 0 || r.bad).map((r) => Number(r.id));
}

import { sql } from "kysely";
import { toJson } from "../json.js";
import type { Trx } from "./step-rows.js";

/** Of these pools, the ones whose slots deferred steps keep holding (include_deferred). */
export async function poolsCountingDeferred(trx: Trx, pools: readonly string[]): Promise<Set<string>> {
  const names = [...new Set(pools)];
  if (names.length === 0) return new Set();
  const { rows } = await sql<{ name: string }>`
    select name from pools where name = any(${names}::text[]) and include_deferred`.execute(trx);
  return new Set(rows.map((r) => r.name));
}

/**
 * Deferred steps leaving their wait (their trigger fired): gives back the
 * pool slots they held in pools that count deferred steps. Call before the
 * steps leave `deferred`, in the same transaction.
 */
export async function releaseDeferredPoolSlotsIn(trx: Trx, stepIds: readonly number[]): Promise<void> {
  if (stepIds.length === 0) return;
  const { rows } = await sql<{ pool: string; slots: number }>`
    select s.pool, s.pool_slots as slots from steps s join pools p on p.name = s.pool and p.include_deferred
    where s.id = any(${[...stepIds]}::bigint[]) and s.state = 'deferred'`.execute(trx);
  await adjustPools(trx, rows, -1);
}

/**
 * Locks the pools' rows (creating missing ones) and returns their free slots.
 * The lock serialises concurrent dispatchers per pool, so a pool's slots are
 * never exceeded however many reconcilers run.
 */
export async function lockPools(trx: Trx, names: readonly string[], defaultSlots: number): Promise<Map<string, number>> {
  const sorted = [...names].sort();
  const select = () =>
    sql<{ name: string; slots: number; occupied_slots: number }>`
    select name, slots, occupied_slots from pools where name = any(${sorted}::text[]) order by name for no key update`.execute(trx);
  let { rows } = await select();
  if (rows.length < sorted.length) {
    await sql`
      insert into pools (name, slots, description)
      select n, ${defaultSlots}::int, 'created on first use by a step'
      from unnest(${sorted}::text[]) n on conflict (name) do nothing`.execute(trx);
    ({ rows } = await select());
  }
  return new Map(rows.map((p) => [p.name, p.slots - p.occupied_slots]));
}

export async function adjustPools(trx: Trx, taken: readonly { pool: string; slots: number }[], sign: 1 | -1): Promise<void> {
  if (taken.length === 0) return;
  const perPool = new Map<string, number>();
  for (const t of taken) perPool.set(t.pool, (perPool.get(t.pool) ?? 0) + t.slots);
  await sql`select name from pools where name = any(${[...perPool.keys()]}::text[]) order by name for no key update`.execute(trx);
  const input = toJson([...perPool].map(([name, n]) => ({ name, n: n * sign })));
  await sql`
    update pools set occupied_slots = greatest(0, occupied_slots + x.n), updated_at = now()
    from jsonb_to_recordset(${input}::jsonb) as x(name text, n int)
    where pools.name = x.name`.execute(trx);
}

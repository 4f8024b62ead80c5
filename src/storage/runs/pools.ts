import { sql } from "kysely";
import { toJson } from "../json.js";
import type { Trx } from "./step-rows.js";

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
  const perPool = slotsPerPool(taken);
  if (perPool.size === 0) return;
  await sql`select name from pools where name = any(${[...perPool.keys()]}::text[]) order by name for no key update`.execute(trx);
  await addOccupied(trx, perPool, sign);
}

/** Slots per pool of these steps. */
export function slotsPerPool(taken: readonly { pool: string; slots: number }[]): Map<string, number> {
  const perPool = new Map<string, number>();
  for (const t of taken) perPool.set(t.pool, (perPool.get(t.pool) ?? 0) + t.slots);
  return perPool;
}

/** Adds (or with -1 takes) slots to the pools' occupied slots, never below 0; the caller holds their rows' locks. */
export async function addOccupied(trx: Trx, perPool: ReadonlyMap<string, number>, sign: 1 | -1): Promise<void> {
  if (perPool.size === 0) return;
  const input = toJson([...perPool].map(([name, n]) => ({ name, n: n * sign })));
  await sql`
    update pools set occupied_slots = greatest(0, occupied_slots + x.n), updated_at = now()
    from jsonb_to_recordset(${input}::jsonb) as x(name text, n int)
    where pools.name = x.name`.execute(trx);
}

/** A pool row as a completion locks it. */
export interface LockedPool {
  readonly slots: number;
  readonly occupied: number;
  /** Whether deferred steps keep holding their slots. */
  readonly includeDeferred: boolean;
}

/**
 * Locks, in name order, the existing rows of the named pools and of the pools of the given steps, in one statement;
 * returns them by name (a pool without a row is left out).
 */
export async function lockPoolsOf(trx: Trx, names: readonly string[], stepIds: readonly number[]): Promise<Map<string, LockedPool>> {
  const { rows } = await sql<{ name: string; slots: number; occupied_slots: number; include_deferred: boolean }>`
    select name, slots, occupied_slots, include_deferred from pools
    where name = any(${[...new Set(names)]}::text[])
       or name = any(array(select distinct pool from steps where id = any(${[...stepIds]}::bigint[])))
    order by name for no key update`.execute(trx);
  return new Map(rows.map((r) => [r.name, { slots: r.slots, occupied: r.occupied_slots, includeDeferred: r.include_deferred }]));
}

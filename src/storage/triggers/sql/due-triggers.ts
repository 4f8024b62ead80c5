import { sql, type Kysely } from "kysely";
import type { Database } from "../../database.js";
import type { HeldTrigger, TriggerRow, Trx } from "../trigger-rows.js";

// The picks of due triggers: each locks a batch with SKIP LOCKED (so concurrent triggerers take disjoint rows)
// and updates it in the same data-modifying CTE, which the builder does not express.

/** Up to `limit` due waiting triggers with a free or lapsed lease, leased to `owner` until `expires`. */
export async function leaseDueTriggers(
  db: Kysely<Database>,
  owner: string,
  now: Date,
  expires: Date,
  limit: number,
): Promise<TriggerRow[]> {
  const { rows } = await sql<TriggerRow>`
    with due as (
      select id from triggers
      where status = 'waiting' and next_check_at <= ${now}
        and (lease_expires_at is null or lease_expires_at <= ${now})
      order by next_check_at, id
      limit ${limit}
      for no key update skip locked
    )
    update triggers t set lease_owner = ${owner}, lease_expires_at = ${expires}, updated_at = ${now}
    from due where t.id = due.id
    returning t.*`.execute(db);
  return rows;
}

/**
 * Up to `limit` waiting triggers past their timeout, ended `timed_out` whoever holds the lease: the holder's
 * later result is ignored because the trigger is no longer waiting.
 */
export async function timeOutDueTriggers(trx: Trx, now: Date, limit: number): Promise<(HeldTrigger & { soft_fail: boolean })[]> {
  const { rows } = await sql<HeldTrigger & { soft_fail: boolean }>`
    with due as (
      select id from triggers
      where status = 'waiting' and timeout_at is not null and timeout_at <= ${now}
      order by timeout_at, id limit ${limit}
      for no key update skip locked
    )
    update triggers t set status = 'timed_out', ended_at = ${now}, updated_at = ${now},
           lease_owner = null, lease_expires_at = null
    from due where t.id = due.id
    returning t.id, t.kind, t.step_id, t.asset_key, t.partition_key, t.soft_fail`.execute(trx);
  return rows;
}

import { sql, type Kysely } from "kysely";
import type { Database } from "../database.js";
import type { TriggerRecord } from "../trigger-store.js";
import { baseOf, type TriggerRow } from "./trigger-rows.js";

/** The triggers with these ids, in id order; unknown ids are left out. */
export async function getTriggers(db: Kysely<Database>, ids: readonly number[]): Promise<TriggerRecord[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<TriggerRow>`select * from triggers where id = any(${[...ids]}::bigint[]) order by id`.execute(db);
  return rows.map((r) => ({
    ...baseOf(r),
    status: r.status,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    lastCheckedAt: r.last_checked_at,
    payload: r.payload,
    error: r.error,
    endedAt: r.ended_at,
  }));
}

import { sql, type Kysely } from "kysely";
import type { Database } from "../database.js";
import type { ClaimedTrigger } from "../trigger-store.js";
import { leaseDueTriggers } from "./sql/due-triggers.js";
import { baseOf } from "./trigger-rows.js";

/** Due waiting triggers with a free or lapsed lease, leased to `owner`, soonest due first. */
export async function claimDue(
  db: Kysely<Database>,
  owner: string,
  now: Date,
  options: { limit: number; leaseMs: number },
): Promise<ClaimedTrigger[]> {
  if (options.limit <= 0) return [];
  const expires = new Date(now.getTime() + options.leaseMs);
  const rows = await leaseDueTriggers(db, owner, now, expires, options.limit);
  return rows
    .map((r): ClaimedTrigger => ({ ...baseOf(r), leaseExpiresAt: r.lease_expires_at ?? expires }))
    .sort((a, b) => a.nextCheckAt.getTime() - b.nextCheckAt.getTime() || a.id - b.id);
}

/** Extends every lease `owner` still holds; returns how many. */
export async function renewLeases(db: Kysely<Database>, owner: string, now: Date, leaseMs: number): Promise<number> {
  const expires = new Date(now.getTime() + leaseMs);
  // Only leases still held: one that lapsed may have been taken over, and
  // one that lapsed but was not taken is still this owner's to keep.
  const result = await sql`
    update triggers set lease_expires_at = ${expires}, updated_at = ${now}
    where status = 'waiting' and lease_owner = ${owner}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** Gives back every lease of `owner`; returns how many. */
export async function releaseLeases(db: Kysely<Database>, owner: string): Promise<number> {
  const result = await sql`
    update triggers set lease_owner = null, lease_expires_at = null, updated_at = now()
    where status = 'waiting' and lease_owner = ${owner}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

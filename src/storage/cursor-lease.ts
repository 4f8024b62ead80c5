import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import { toJson } from "./json.js";

/** A `cursors` row whose lease was just taken, with who held it before. */
export interface TakenCursorLease<V> {
  readonly value: V;
  readonly previousOwner: string | null;
  readonly previousUntil: string | null;
}

/**
 * Takes (or renews) the lease on the `cursors` row `name`, creating it with
 * `initial` first: granted when the lease is free, ours, or expired. SKIP
 * LOCKED: while another holder commits on the row, this is simply "not now"
 * (undefined), never a wait. The value's `owner` and `until` fields hold the lease.
 */
export async function takeCursorLease<V>(
  db: Kysely<Database>,
  name: string,
  initial: object,
  owner: string,
  now: Date,
  ttlMs: number,
): Promise<TakenCursorLease<V> | undefined> {
  await sql`insert into cursors (name, value, updated_at) values (${name}, ${toJson({ ...initial, owner: null, until: null })}::jsonb, ${now})
            on conflict (name) do nothing`.execute(db);
  const until = new Date(now.getTime() + ttlMs).toISOString();
  const { rows } = await sql<{ value: V; previous_owner: string | null; previous_until: string | null }>`
    with old as (
      select value from cursors where name = ${name} for no key update skip locked
    )
    update cursors c set value = c.value || jsonb_build_object('owner', ${owner}::text, 'until', ${until}::text), updated_at = ${now}
    from old
    where c.name = ${name}
      and (old.value->>'owner' is null or old.value->>'owner' = ${owner} or (old.value->>'until')::timestamptz < ${now})
    returning c.value, old.value->>'owner' as previous_owner, old.value->>'until' as previous_until`.execute(db);
  const row = rows[0];
  return row ? { value: row.value, previousOwner: row.previous_owner, previousUntil: row.previous_until } : undefined;
}

/** Gives up the lease on the `cursors` row `name` if `owner` holds it. */
export async function releaseCursorLease(db: Kysely<Database>, name: string, owner: string): Promise<void> {
  await sql`update cursors set value = value || '{"owner": null, "until": null}'::jsonb
            where name = ${name} and value->>'owner' = ${owner}`.execute(db);
}

import { sql, type Kysely } from "kysely";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import type { Database } from "./database.js";
import { notifyIn } from "./database-handle.js";
import { WAKE_CHANNEL } from "./runs/channels.js";
import type { PoolRecord, PoolStore, SetPoolSlots } from "./pool-store.js";

type PoolRow = {
  name: string;
  slots: number;
  occupied: number;
  queued: number;
  include_deferred: boolean;
  description: string;
  updated_at: Date;
};

/** PoolStore on the pools table, counting scheduled steps per pool in one grouped query. */
export class PgPoolStore implements PoolStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async list(): Promise<PoolRecord[]> {
    return (await selectPools(this.#db, null)).map(toRecord);
  }

  async setSlots(input: SetPoolSlots, now: Date, audit?: AuditEntry): Promise<PoolRecord> {
    return this.#db.transaction().execute(async (trx) =>
      withAudit(trx, audit, now, async () => {
        // Its deferred steps first, then the pool row: the order in which the transactions that move steps lock them.
        const deferredSlots = input.includeDeferred === undefined ? 0 : await lockDeferredSlots(trx, input.name);
        const existing = await sql<{ include_deferred: boolean }>`
        select include_deferred from pools where name = ${input.name} for no key update`.execute(trx);
        const before = existing.rows[0]?.include_deferred;
        const includeDeferred = input.includeDeferred ?? before ?? false;
        // Deferred steps hold slots only where the pool counts them: keep occupied_slots true to that when it changes.
        const change = before === undefined || before === includeDeferred ? 0 : (includeDeferred ? 1 : -1) * deferredSlots;
        await sql`
        insert into pools (name, slots, description, include_deferred, created_at, updated_at)
        values (${input.name}, ${input.slots}, 'created by setPoolSlots', ${includeDeferred}, ${now}, ${now})
        on conflict (name) do update
          set slots = excluded.slots, include_deferred = excluded.include_deferred, updated_at = excluded.updated_at,
              occupied_slots = greatest(0, pools.occupied_slots + ${change}::int)`.execute(trx);
        await notifyIn(trx, WAKE_CHANNEL, "pool");
        return toRecord((await selectPools(trx, input.name))[0]!);
      }),
    );
  }
}

/** Locks the pool's deferred steps (none can start or end its wait meanwhile) and sums the slots they take. */
async function lockDeferredSlots(db: Kysely<Database>, pool: string): Promise<number> {
  const { rows } = await sql<{ slots: number }>`
    select coalesce(sum(pool_slots), 0)::int as slots
    from (select pool_slots from steps where pool = ${pool} and state = 'deferred' for no key update) d`.execute(db);
  return rows[0]!.slots;
}

async function selectPools(db: Kysely<Database>, name: string | null): Promise<PoolRow[]> {
  const { rows } = await sql<PoolRow>`
    select p.name, p.slots, p.occupied_slots as occupied, coalesce(q.n, 0)::int as queued, p.include_deferred, p.description, p.updated_at
    from pools p
    left join (select pool, count(*) as n from steps where state = 'scheduled' group by pool) q on q.pool = p.name
    where ${name}::text is null or p.name = ${name}
    order by p.name`.execute(db);
  return rows;
}

function toRecord(r: PoolRow): PoolRecord {
  return {
    name: r.name,
    slots: r.slots,
    occupied: r.occupied,
    queued: r.queued,
    includeDeferred: r.include_deferred,
    description: r.description,
    updatedAt: r.updated_at,
  };
}

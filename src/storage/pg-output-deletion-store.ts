import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import type { ClaimedObjectDeletion, OutputDeletionStore } from "./output-deletion-store.js";

/** OutputDeletionStore on output_object_deletions (server Postgres and PGlite). */
export class PgOutputDeletionStore implements OutputDeletionStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async claim(
    options: { readonly limit: number; readonly leaseMs: number; readonly ids?: readonly number[] },
    now: Date,
  ): Promise<ClaimedObjectDeletion[]> {
    if (options.ids?.length === 0) return [];
    const until = new Date(now.getTime() + options.leaseMs);
    const { rows } = await sql<{ id: string | number; storage_ref: string; attempts: number }>`
      update output_object_deletions d set attempts = d.attempts + 1, next_attempt_at = ${until}
      from (
        select id from output_object_deletions
        where next_attempt_at <= ${now} ${options.ids ? sql`and id = any(${options.ids.map(String)}::bigint[])` : sql``}
        order by next_attempt_at, id limit ${options.limit}
        for update skip locked
      ) due
      where d.id = due.id
      returning d.id, d.storage_ref, d.attempts - 1 as attempts`.execute(this.#db);
    return rows.map((r) => ({ id: Number(r.id), storageRef: r.storage_ref, attempts: r.attempts }));
  }

  async done(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await sql`delete from output_object_deletions where id = any(${ids.map(String)}::bigint[])`.execute(this.#db);
  }

  async failed(id: number, error: string, retryAt: Date): Promise<void> {
    await sql`update output_object_deletions set last_error = ${error}, next_attempt_at = ${retryAt} where id = ${id}`.execute(this.#db);
  }

  async pending(): Promise<{ readonly count: number; readonly lastError: string | null }> {
    const { rows } = await sql<{ count: number; last_error: string | null }>`
      select (select count(*) from output_object_deletions)::int as count,
             (select last_error from output_object_deletions where last_error is not null
              order by next_attempt_at desc limit 1) as last_error`.execute(this.#db);
    return { count: rows[0]?.count ?? 0, lastError: rows[0]?.last_error ?? null };
  }
}

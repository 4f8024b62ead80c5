import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import type { EndedTry, LogRetentionStore, TryLogKey } from "./log-retention-store.js";
import { UNFINISHED_STEP_STATES } from "./partition-status-store.js";

/** LogRetentionStore in Postgres SQL (server Postgres and PGlite). */
export class PgLogRetentionStore implements LogRetentionStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async endedTries(keys: readonly TryLogKey[]): Promise<EndedTry[]> {
    if (keys.length === 0) return [];
    const { rows } = await sql<{ run_id: string; step_id: string; try_number: number; asset_key: string; ended_at: Date }>`
      select t.run_id, t.step_id, t.try_number, s.asset_key, t.ended_at
      from unnest(${keys.map((k) => k.stepId)}::bigint[], ${keys.map((k) => k.tryNumber)}::int[]) as k(step_id, try_number)
      join step_tries t on t.step_id = k.step_id and t.try_number = k.try_number
      join steps s on s.id = t.step_id
      where t.ended_at is not null and t.state <> all(${[...UNFINISHED_STEP_STATES]}::text[])`.execute(this.#db);
    const wanted = new Set(keys.map((k) => `${k.runId}/${k.stepId}-${k.tryNumber}`));
    return rows
      .map((r) => ({ runId: r.run_id, stepId: Number(r.step_id), tryNumber: r.try_number, assetKey: r.asset_key, endedAt: r.ended_at }))
      .filter((t) => wanted.has(`${t.runId}/${t.stepId}-${t.tryNumber}`));
  }
}

import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import type { StepTryState, StepTryStateStore } from "./step-try-state-store.js";

/** StepTryStateStore in Postgres SQL: one statement on the primary key of steps and the (step, try) key of step_tries. */
export class PgStepTryStateStore implements StepTryStateStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async tryState(stepId: number, tryNumber: number): Promise<StepTryState | undefined> {
    const { rows } = await sql<{ run_status: string; step_try: number; state: string | null; ended_at: Date | null; error: unknown }>`
      select r.status as run_status, s.try_number as step_try, t.state, t.ended_at, t.error
      from steps s join runs r on r.id = s.run_id
      left join step_tries t on t.step_id = s.id and t.try_number = ${tryNumber}::int
      where s.id = ${stepId}::bigint`.execute(this.#db);
    const row = rows[0];
    if (!row) return undefined;
    return {
      runStatus: row.run_status,
      stepTryNumber: row.step_try,
      ...(row.state === null
        ? {}
        : { attempt: { state: row.state, endedAt: row.ended_at === null ? null : new Date(row.ended_at), error: row.error ?? null } }),
    };
  }
}

import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "./database.js";

/** Settings of the planner and executor for one transaction (`jit`, `work_mem`, `enable_hashjoin`, …). */
export type PlannerSettings = Readonly<Record<string, string>>;

/**
 * Runs `fn` in a transaction whose statements run with `settings`, set local to that transaction: the session's own
 * settings are back once it ends, whatever `fn` does.
 */
export async function withPlannerSettings<T>(
  db: Kysely<Database>,
  settings: PlannerSettings,
  fn: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const set = Object.entries(settings).map(([name, value]) => sql`set_config(${name}, ${value}, true)`);
    if (set.length > 0) await sql`select ${sql.join(set)}`.execute(trx);
    return fn(trx);
  });
}

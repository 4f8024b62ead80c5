import { sql, type Kysely } from "kysely";
import type { SerializedError } from "../../errors/index.js";
import { notifyIn } from "../database-handle.js";
import type { Database } from "../database.js";
import { toJson } from "../json.js";
import { WAKE_CHANNEL } from "./channels.js";
import { adjustPools } from "./pools.js";
import { adjustRunActive } from "./run-counters.js";
import { queuedBefore, requeueListed, type RequeuedStep } from "./sql/housekeeping-batches.js";
import type { Trx } from "./step-rows.js";

/**
 * The bookkeeping of steps just scheduled again after their executor lost them (never started): their try ends
 * failed with `error` (it does not count against the retry policy: `tries_before` moved with it), and the pool
 * slots and run counters it held are given back.
 */
export async function requeuedIn(trx: Trx, steps: readonly RequeuedStep[], now: Date, error: SerializedError): Promise<void> {
  if (steps.length === 0) return;
  await sql`
    update step_tries t set state = 'failed', ended_at = ${now}, error = ${toJson(error)}::jsonb, failure_class = 'infrastructure'
    from jsonb_to_recordset(${toJson(steps.map((r) => ({ step_id: r.id, try_number: r.try_number })))}::jsonb)
      as x(step_id bigint, try_number int)
    where t.step_id = x.step_id and t.try_number = x.try_number`.execute(trx);
  await adjustPools(
    trx,
    steps.map((r) => ({ pool: r.pool, slots: r.pool_slots })),
    -1,
  );
  await adjustRunActive(
    trx,
    steps.map((r) => r.run_id),
    -1,
    now,
  );
}

/** A try handed to an executor and not started yet. */
export interface HandedOutTry {
  readonly stepId: number;
  readonly runId: string;
  readonly tryNumber: number;
  readonly executor: string;
  readonly queue: string | null;
}

/** Tries of these executor kinds handed out before `before` and not started, oldest first (at most `limit`). */
export async function handedOutBefore(
  db: Kysely<Database>,
  executors: readonly string[],
  before: Date,
  limit: number,
): Promise<HandedOutTry[]> {
  if (executors.length === 0) return [];
  const rows = await queuedBefore(db, executors, before, limit);
  return rows.map((r) => ({ stepId: Number(r.step_id), runId: r.run_id, tryNumber: r.try_number, executor: r.executor, queue: r.queue }));
}

/**
 * The executor lost these tries before they started (its queue lost the jobs): each whose step is still queued on
 * that try is scheduled again at once, as a new try that does not count against the retry policy. Returns how
 * many were. Two reconcilers reporting the same try schedule it once (the row lock and the try number decide).
 */
export async function requeueLost(
  db: Kysely<Database>,
  tries: readonly { readonly stepId: number; readonly tryNumber: number }[],
  now: Date,
  reason: string,
): Promise<number> {
  if (tries.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    const moved = await requeueListed(trx, tries, now);
    await requeuedIn(trx, moved, now, { name: "DispatchLost", code: "STEP_DISPATCH_LOST", message: `${reason}; handed out again` });
    if (moved.length > 0) await notifyIn(trx, WAKE_CHANNEL, "requeued");
    return moved.length;
  });
}

/** Records that this reconciler is alive now (by the database's clock). */
export async function holderAlive(
  db: Kysely<Database>,
  holder: { readonly id: string; readonly hostname: string; readonly pid: number },
): Promise<void> {
  await db
    .insertInto("component_heartbeats")
    .values({ id: holder.id, kind: "reconciler", hostname: holder.hostname, pid: holder.pid })
    .onConflict((oc) => oc.column("id").doUpdateSet({ heartbeat_at: sql<Date>`now()` }))
    .execute();
}

/** Removes this reconciler's heartbeat: what it still holds is handed out again by the next housekeeping. */
export async function holderStopped(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom("component_heartbeats").where("id", "=", id).where("kind", "=", "reconciler").execute();
}

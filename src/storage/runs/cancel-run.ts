import type { Kysely } from "kysely";
import { recordAudit, type AuditEntry } from "../audit-trail.js";
import { notifyIn } from "../database-handle.js";
import type { Database } from "../database.js";
import type { RunSummary } from "../run-store.js";
import { WAKE_CHANNEL } from "./channels.js";
import { isUuid, runNotFound, SUMMARY_COLUMNS, toRunSummary } from "./run-summary.js";

export async function requestCancel(db: Kysely<Database>, runId: string, now: Date, audit?: AuditEntry): Promise<RunSummary> {
  if (!isUuid(runId)) throw runNotFound(runId);
  const row = await db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable("runs")
      .set({ cancel_requested_at: now, updated_at: now })
      .where("id", "=", runId)
      .where("cancel_requested_at", "is", null)
      .where("status", "in", ["queued", "running"])
      .returning("id")
      .executeTakeFirst();
    if (updated) await notifyIn(trx, WAKE_CHANNEL, "cancel");
    if (audit) await recordAudit(trx, audit, now);
    return trx.selectFrom("runs").select(SUMMARY_COLUMNS).where("id", "=", runId).executeTakeFirst();
  });
  if (!row) throw runNotFound(runId);
  return toRunSummary(row);
}

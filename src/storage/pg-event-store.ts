import { sql, type Kysely, type Transaction } from "kysely";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import type { Database } from "./database.js";
import { notifyIn } from "./database-handle.js";
import type { EventRecord, EventStore, ListEventsOptions, ReportedEvent } from "./event-store.js";
import { toJson } from "./json.js";
import { WAKE_CHANNEL } from "./runs/channels.js";

/**
 * Appends events inside the caller's transaction and marks each partition
 * `materialized` with its latest event, then wakes the reconciler (on commit).
 * One JSON parameter and one statement whatever the batch size. Shared by
 * reported events and the triggerer's source observations. Returns the new
 * event ids in input order.
 */
export async function reportEventsIn(trx: Transaction<Database>, events: readonly ReportedEvent[], now: Date): Promise<number[]> {
  if (events.length === 0) return [];
  const rows = events.map((e, i) => ({
    ord: i,
    kind: e.kind,
    asset_key: e.assetKey,
    partition_key: e.partitionKey,
    data_version: e.dataVersion ?? null,
    metadata: e.metadata,
  }));
  const { rows: inserted } = await sql<{ id: string | number }>`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(ord int, kind text, asset_key text, partition_key text, data_version text, metadata jsonb)
    ), ev as (
      insert into events (kind, asset_key, partition_key, data_version, metadata, created_at)
      select kind, asset_key, partition_key, data_version, coalesce(metadata, '{}'::jsonb), ${now}
      from x order by ord
      returning id, asset_key, partition_key, data_version
    ), st as (
      insert into partition_status as ps (asset_key, partition_key, status, last_materialization_event_id,
                                          data_version, code_version, materialized_at, updated_at)
      -- One row per partition (ON CONFLICT cannot touch a row twice): the latest event wins.
      select distinct on (asset_key, partition_key)
             asset_key, partition_key, 'materialized', id, data_version, null, ${now}::timestamptz, ${now}::timestamptz
      from ev
      order by asset_key, partition_key, id desc
      on conflict (asset_key, partition_key) do update set
        status = excluded.status,
        last_materialization_event_id = excluded.last_materialization_event_id,
        -- The data now in the partition came from no step: the previous step's
        -- output is no longer its value (inputs read from it arrive as null).
        last_step_id = null,
        data_version = excluded.data_version,
        code_version = null,
        materialized_at = excluded.materialized_at,
        updated_at = excluded.updated_at,
        failed_check = null
    )
    -- ids are drawn in ord order, so ascending ids are the events in input order.
    select id from ev order by id`.execute(trx);
  await notifyIn(trx, WAKE_CHANNEL, "event");
  return inserted.map((r) => Number(r.id));
}

/**
 * EventStore in Postgres SQL (server Postgres and PGlite). A batch is one JSON
 * parameter and one statement: events, then partition status (see reportEventsIn).
 */
export class PgEventStore implements EventStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async reportEvents(events: readonly ReportedEvent[], now: Date, audit?: AuditEntry): Promise<number[]> {
    if (events.length === 0) return [];
    return this.#db.transaction().execute((trx) =>
      withAudit(
        trx,
        audit,
        now,
        () => reportEventsIn(trx, events, now),
        (ids) => ({ eventIds: ids }),
      ),
    );
  }

  async listEvents(options: ListEventsOptions): Promise<EventRecord[]> {
    let q = this.#db
      .selectFrom("events")
      .select(["id", "kind", "asset_key", "partition_key", "run_id", "step_id", "data_version", "code_version", "metadata", "created_at"])
      .limit(options.limit);
    if (options.assetKey !== undefined) q = q.where("asset_key", "=", options.assetKey);
    q = options.afterId === undefined ? q.orderBy("id", "desc") : q.where("id", ">", options.afterId).orderBy("id", "asc");
    const rows = await q.execute();
    return rows.map((r) => ({
      id: Number(r.id),
      kind: r.kind,
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      runId: r.run_id,
      stepId: r.step_id === null ? null : Number(r.step_id),
      dataVersion: r.data_version,
      codeVersion: r.code_version,
      metadata: (r.metadata ?? {}) as Record<string, unknown>,
      createdAt: r.created_at,
    }));
  }
}

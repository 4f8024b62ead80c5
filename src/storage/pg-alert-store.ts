import { sql, type Kysely, type Selectable } from "kysely";
import type { AlertRecord, AlertSettlement, AlertStore, DeadlineCandidate, ListAlertsOptions } from "./alert-store.js";
import { deadlineCursorName } from "./alert-store.js";
import type { AlertsTable, Database } from "./database.js";
import { toJson } from "./json.js";

const DEFAULT_PAGE = 50;

/**
 * AlertStore in Postgres SQL (server Postgres and PGlite). Producers insert
 * with `ON CONFLICT (cause_key) DO NOTHING` behind a NOT EXISTS: the unique
 * key is the backstop for racing reconcilers, the NOT EXISTS keeps a cause
 * seen on every pass (a file that stays broken) from drawing a sequence value
 * each time.
 */
export class PgAlertStore implements AlertStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async recordLoadErrors(now: Date): Promise<number> {
    // The owners are those of the assets the file defined when it last loaded
    // (definition_files.assets keeps the last good load's specs).
    const { rows } = await sql<{ id: number }>`
      with broken as (
        select f.path, f.source_hash, f.error, f.last_success_at, f.loaded_at,
               'load_error:' || f.path || ':' || f.source_hash as cause_key,
               coalesce((select jsonb_agg(o order by o) from (
                 select distinct a->>'owner' as o from jsonb_array_elements(f.assets) a where a->>'owner' is not null) s),
                 '[]'::jsonb) as owners,
               coalesce((select jsonb_agg(a->>'key' order by a->>'key') from jsonb_array_elements(f.assets) a), '[]'::jsonb) as assets
        from definition_files f
        where f.status = 'error'
      )
      insert into alerts (cause_key, kind, owner, payload, next_attempt_at, created_at)
      select b.cause_key, 'load_error', b.owners->>0,
             jsonb_build_object('file', b.path, 'sourceHash', b.source_hash, 'owners', b.owners, 'assets', b.assets,
                                'error', jsonb_build_object('code', b.error->'code', 'message', b.error->'message'),
                                'lastSuccessAt', b.last_success_at, 'failedAt', b.loaded_at),
             ${now}, ${now}
      from broken b
      where not exists (select 1 from alerts al where al.cause_key = b.cause_key)
      on conflict (cause_key) do nothing
      returning id`.execute(this.#db);
    return rows.length;
  }

  async deadlineCursors(assetKeys: readonly string[]): Promise<Map<string, Date>> {
    const out = new Map<string, Date>();
    if (assetKeys.length === 0) return out;
    const byName = new Map(assetKeys.map((k) => [deadlineCursorName(k), k]));
    const rows = await this.#db
      .selectFrom("cursors")
      .select(["name", "value"])
      .where("name", "in", [...byName.keys()])
      .execute();
    for (const r of rows) {
      const until = (r.value as { until?: unknown }).until;
      const key = byName.get(r.name);
      if (key !== undefined && typeof until === "string" && !Number.isNaN(Date.parse(until))) out.set(key, new Date(until));
    }
    return out;
  }

  async recordDeadlineChecks(candidates: readonly DeadlineCandidate[], cursors: ReadonlyMap<string, Date>, now: Date): Promise<number> {
    if (candidates.length === 0 && cursors.size === 0) return 0;
    const input = toJson(
      candidates.map((c) => ({
        asset_key: c.assetKey,
        partition_key: c.partitionKey,
        owner: c.owner,
        window_start: c.windowStart,
        window_end: c.windowEnd,
        deadline_at: c.deadlineAt,
        deadline_ms: c.deadlineMs,
      })),
    );
    const cursorRows = toJson(
      [...cursors].map(([assetKey, until]) => ({ name: deadlineCursorName(assetKey), until: until.toISOString() })),
    );
    return this.#db.transaction().execute(async (trx) => {
      let created = 0;
      if (candidates.length > 0) {
        const { rows } = await sql<{ id: number }>`
          with x as (
            select *, 'deadline:' || asset_key || ':' || partition_key as cause_key
            from jsonb_to_recordset(${input}::jsonb) as x(asset_key text, partition_key text, owner text, window_start text,
                                                          window_end text, deadline_at text, deadline_ms bigint)
          )
          insert into alerts (cause_key, kind, asset_key, partition_key, owner, payload, next_attempt_at, created_at)
          select x.cause_key, 'deadline_missed', x.asset_key, x.partition_key, x.owner,
                 jsonb_build_object('asset', x.asset_key, 'partition', x.partition_key, 'windowStart', x.window_start,
                                    'windowEnd', x.window_end, 'deadlineAt', x.deadline_at, 'deadlineMs', x.deadline_ms),
                 ${now}, ${now}
          from x
          where not exists (select 1 from partition_status ps
                            where ps.asset_key = x.asset_key and ps.partition_key = x.partition_key
                              and ps.last_materialization_event_id is not null)
            and not exists (select 1 from alerts al where al.cause_key = x.cause_key)
          on conflict (cause_key) do nothing
          returning id`.execute(trx);
        created = rows.length;
      }
      if (cursors.size > 0) {
        // Forward only: a reconciler with an older view never moves a cursor back.
        await sql`
          insert into cursors as c (name, value, updated_at)
          select x.name, jsonb_build_object('until', x.until), ${now}
          from jsonb_to_recordset(${cursorRows}::jsonb) as x(name text, until text)
          on conflict (name) do update set value = excluded.value, updated_at = excluded.updated_at
          where (c.value->>'until') is null or (c.value->>'until')::timestamptz < (excluded.value->>'until')::timestamptz`.execute(trx);
      }
      return created;
    });
  }

  async claimDue(options: { now: Date; limit: number; leaseMs: number }): Promise<AlertRecord[]> {
    if (options.limit <= 0) return [];
    const leaseUntil = new Date(options.now.getTime() + options.leaseMs);
    const { rows } = await sql<Selectable<AlertsTable>>`
      update alerts set attempts = attempts + 1, next_attempt_at = ${leaseUntil}
      where id in (select id from alerts where status = 'pending' and next_attempt_at <= ${options.now}
                   order by next_attempt_at, id limit ${options.limit}::int for no key update skip locked)
      returning *`.execute(this.#db);
    return rows.map(toRecord).sort((a, b) => a.id - b.id);
  }

  async settle(settlements: readonly AlertSettlement[], now: Date): Promise<void> {
    if (settlements.length === 0) return;
    const input = toJson(
      settlements.map((s) => ({
        id: s.id,
        attempt: s.attempt,
        sent: s.sent,
        sent_to: [...s.sentTo],
        error: s.error ?? null,
        give_up: !s.sent && (s.nextAttemptAt === null || s.nextAttemptAt === undefined),
        next_attempt_at: s.nextAttemptAt?.toISOString() ?? null,
      })),
    );
    // Fenced by the attempt number: a claimer whose lease ran out and whose
    // alert was claimed again cannot overwrite the newer attempt's outcome.
    await sql`
      update alerts set
        status = case when x.sent then 'sent' when x.give_up then 'failed' else 'pending' end,
        sent_at = case when x.sent then ${now}::timestamptz else alerts.sent_at end,
        sent_to = x.sent_to,
        last_error = case when x.sent then alerts.last_error else x.error end,
        next_attempt_at = coalesce(x.next_attempt_at, alerts.next_attempt_at)
      from jsonb_to_recordset(${input}::jsonb)
        as x(id bigint, attempt int, sent boolean, sent_to jsonb, error jsonb, give_up boolean, next_attempt_at timestamptz)
      where alerts.id = x.id and alerts.attempts = x.attempt and alerts.status = 'pending'`.execute(this.#db);
  }

  async list(options: ListAlertsOptions = {}): Promise<AlertRecord[]> {
    let q = this.#db
      .selectFrom("alerts")
      .selectAll()
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(options.first ?? DEFAULT_PAGE);
    if (options.assetKey !== undefined) q = q.where("asset_key", "=", options.assetKey);
    if (options.status !== undefined) q = q.where("status", "=", options.status);
    return (await q.execute()).map(toRecord);
  }
}

function toRecord(r: Selectable<AlertsTable>): AlertRecord {
  return {
    id: Number(r.id),
    causeKey: r.cause_key,
    kind: r.kind,
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    runId: r.run_id,
    owner: r.owner,
    payload: r.payload as AlertRecord["payload"],
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    sentAt: r.sent_at,
    sentTo: Array.isArray(r.sent_to) ? r.sent_to : [],
    createdAt: r.created_at,
  };
}

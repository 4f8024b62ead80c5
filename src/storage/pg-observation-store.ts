import { sql, type Kysely, type RawBuilder, type Transaction } from "kysely";
import type { Database } from "./database.js";
import { notifyIn } from "./database-handle.js";
import { toJson } from "./json.js";
import type {
  EnsureObservationsResult,
  FiredObservation,
  ObservationStore,
  ObservedSource,
  TimedOutObservation,
} from "./observation-store.js";
import { reportEventsIn } from "./pg-event-store.js";
import { TRIGGERS_CHANNEL } from "./runs/channels.js";

type Trx = Transaction<Database>;

/**
 * Records fired observation triggers inside the triggerer's transaction: an
 * `observation` event per row (metadata `{ triggerId, payload }`) and the
 * partition `materialized` with that event, exactly as a reported observation
 * (`tributary report --observation`) is recorded. Automation downstream treats
 * the event like a materialisation.
 */
export async function recordObservationsIn(trx: Trx, rows: readonly FiredObservation[], now: Date): Promise<void> {
  await reportEventsIn(
    trx,
    rows.map((r) => ({
      kind: "observation",
      assetKey: r.assetKey,
      partitionKey: r.partitionKey ?? "",
      metadata: { triggerId: r.triggerId, payload: r.payload },
    })),
    now,
  );
}

/**
 * Records expired observation triggers inside the triggerer's transaction:
 * each partition not observed by now becomes `timed_out`, and its asset's
 * owner gets an `observation_timed_out` alert (one per trigger, through the
 * alerts table the reconciler's alerts task delivers from). A partition that
 * was observed meanwhile (say, reported by hand) is left alone, unalerted.
 */
export async function recordObservationTimeoutsIn(trx: Trx, rows: readonly TimedOutObservation[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  const input = rows.map((r) => ({ trigger_id: r.triggerId, asset_key: r.assetKey, partition_key: r.partitionKey ?? "" }));
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(input)}::jsonb) as x(trigger_id bigint, asset_key text, partition_key text)
    ), st as (
      insert into partition_status as ps (asset_key, partition_key, status, updated_at)
      select distinct asset_key, partition_key, 'timed_out', ${now}::timestamptz from x
      on conflict (asset_key, partition_key) do update set status = 'timed_out', updated_at = excluded.updated_at
      where ps.last_materialization_event_id is null
      returning asset_key, partition_key
    )
    insert into alerts (cause_key, kind, asset_key, partition_key, owner, payload, next_attempt_at, created_at)
    select 'observation_timed_out:' || x.trigger_id, 'observation_timed_out', x.asset_key, nullif(x.partition_key, ''), a.owner,
           jsonb_build_object('asset', x.asset_key, 'partition', nullif(x.partition_key, ''), 'trigger', x.trigger_id,
                              'kind', t.kind, 'args', t.args, 'waitingSince', t.created_at, 'timeoutAt', t.timeout_at),
           ${now}, ${now}
    from x
    join st on st.asset_key = x.asset_key and st.partition_key = x.partition_key
    left join assets a on a.key = x.asset_key
    left join triggers t on t.id = x.trigger_id
    on conflict (cause_key) do nothing`.execute(trx);
}

/** ObservationStore in Postgres SQL (server Postgres and PGlite): a batch is two statements in one transaction. */
export class PgObservationStore implements ObservationStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async ensureObservationTriggers(sources: readonly ObservedSource[], now: Date): Promise<EnsureObservationsResult> {
    if (sources.length === 0) return { created: 0, canceled: 0 };
    const assetKeys = toJson(sources.map((s) => s.assetKey));
    const input = toJson(
      sources.flatMap((s) =>
        s.targets.map((t) => ({
          asset_key: t.assetKey,
          partition_key: t.partitionKey,
          kind: t.kind,
          args: t.args,
          partition_window: t.partitionWindow,
          poll_interval_ms: t.pollIntervalMs,
          timeout_at: t.timeoutAt?.toISOString() ?? null,
        })),
      ),
    );
    const x = sql`jsonb_to_recordset(${input}::jsonb) as x(asset_key text, partition_key text, kind text, args jsonb,
                    partition_window jsonb, poll_interval_ms int, timeout_at timestamptz)`;
    return this.#db.transaction().execute(async (trx) => {
      // Waits that are no longer wanted end: rows are locked in id order, so two
      // reconcilers canceling the same triggers cannot deadlock.
      const canceled = await cancelWaiting(
        trx,
        sql`select t.id from triggers t
            left join ${x} on x.asset_key = t.asset_key and x.partition_key = coalesce(t.partition_key, '')
            where t.status = 'waiting' and t.step_id is null
              and t.asset_key in (select jsonb_array_elements_text(${assetKeys}::jsonb))
              and (x.asset_key is null or t.kind <> x.kind or t.args <> x.args or t.poll_interval_ms <> x.poll_interval_ms)`,
        now,
      );
      // The unique index on waiting observations is the backstop for a
      // reconciler creating the same triggers at the same time.
      const created = await sql<{ id: string }>`
        insert into triggers (kind, args, asset_key, partition_key, partition_window, poll_interval_ms,
                              next_check_at, timeout_at, created_at, updated_at)
        select x.kind, x.args, x.asset_key, x.partition_key, x.partition_window, x.poll_interval_ms,
               ${now}, x.timeout_at, ${now}, ${now}
        from ${x}
        where not exists (
                select 1 from partition_status ps
                where ps.asset_key = x.asset_key and ps.partition_key = x.partition_key
                  and (ps.last_materialization_event_id is not null or ps.status = 'timed_out'))
          and not exists (
                select 1 from triggers t
                where t.step_id is null and t.asset_key = x.asset_key and coalesce(t.partition_key, '') = x.partition_key
                  and (t.status = 'waiting' or (t.status = 'failed' and t.kind = x.kind and t.args = x.args)))
        order by x.asset_key, x.partition_key
        on conflict (asset_key, (coalesce(partition_key, '')), kind)
          where status = 'waiting' and step_id is null and asset_key is not null do nothing
        returning id`.execute(trx);
      // Triggerers check new triggers at once rather than at their next poll.
      if (created.rows.length > 0) await notifyIn(trx, TRIGGERS_CHANNEL, "observation");
      return { created: created.rows.length, canceled };
    });
  }

  async cancelObservationsExcept(assetKeys: readonly string[], now: Date): Promise<number> {
    return this.#db.transaction().execute((trx) =>
      cancelWaiting(
        trx,
        sql`select t.id from triggers t
            where t.status = 'waiting' and t.step_id is null and t.asset_key is not null
              and t.asset_key not in (select jsonb_array_elements_text(${toJson(assetKeys)}::jsonb))`,
        now,
      ),
    );
  }
}

/** Cancels the waiting triggers `ids` selects (column `id`, of triggers `t`), locking them in id order; returns how many. */
async function cancelWaiting(trx: Trx, ids: RawBuilder<unknown>, now: Date): Promise<number> {
  const { rows } = await sql<{ id: string }>`
    update triggers set status = 'canceled', lease_owner = null, lease_expires_at = null, ended_at = ${now}, updated_at = ${now}
    where id in (${ids} order by t.id for no key update of t)
    returning id`.execute(trx);
  return rows.length;
}

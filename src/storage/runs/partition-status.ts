import { sql, type Kysely } from "kysely";
import type { Database, PartitionState } from "../database.js";
import { toJson } from "../json.js";
import type { Trx } from "./step-rows.js";

export async function upsertPartitionStatus(
  trx: Trx,
  rows: readonly {
    asset_key: string;
    partition_key: string;
    event_id: number | null;
    run_id: string;
    step_id: number;
    data_version: string | null;
    code_version: string | null;
  }[],
  status: "materialized" | "failed",
  now: Date,
): Promise<void> {
  // One row per partition per statement (ON CONFLICT cannot touch a row twice).
  const latest = new Map<string, (typeof rows)[number]>();
  for (const r of rows) latest.set(`${r.asset_key}\u0000${r.partition_key}`, r);
  await sql`
    insert into partition_status as ps (asset_key, partition_key, status, last_materialization_event_id, last_run_id,
                                        last_step_id, data_version, code_version, materialized_at, updated_at)
    select x.asset_key, x.partition_key, ${status}, x.event_id, x.run_id, x.step_id, x.data_version, x.code_version,
           case when x.event_id is null then null else ${now}::timestamptz end, ${now}
    from jsonb_to_recordset(${toJson([...latest.values()])}::jsonb)
      as x(asset_key text, partition_key text, event_id bigint, run_id uuid, step_id bigint, data_version text,
           code_version text)
    on conflict (asset_key, partition_key) do update set
      status = excluded.status,
      last_materialization_event_id = coalesce(excluded.last_materialization_event_id, ps.last_materialization_event_id),
      last_step_id = case when excluded.last_materialization_event_id is null then ps.last_step_id else excluded.last_step_id end,
      last_run_id = excluded.last_run_id,
      data_version = coalesce(excluded.data_version, ps.data_version),
      code_version = coalesce(excluded.code_version, ps.code_version),
      materialized_at = coalesce(excluded.materialized_at, ps.materialized_at),
      updated_at = excluded.updated_at`.execute(trx);
}

export async function materializedKeys(db: Kysely<Database>, assetKeys: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(assetKeys.map((k) => [k, []]));
  if (assetKeys.length === 0) return out;
  const rows = await db
    .selectFrom("partition_status")
    .select(["asset_key", "partition_key"])
    .where("asset_key", "in", [...assetKeys])
    .where("last_materialization_event_id", "is not", null)
    .execute();
  for (const r of rows) out.get(r.asset_key)?.push(r.partition_key);
  return out;
}

export async function partitionKeysWithStatus(db: Kysely<Database>, assetKey: string, status: PartitionState): Promise<string[]> {
  const rows = await db
    .selectFrom("partition_status")
    .select("partition_key")
    .where("asset_key", "=", assetKey)
    .where("status", "=", status)
    .orderBy("partition_key")
    .execute();
  return rows.map((r) => r.partition_key);
}

/** Change rows of an asset kept by pruning whatever their age: a reader's version of an asset reads these at least. */
export const CHANGES_KEPT_PER_ASSET = 8;

/**
 * Change rows younger than this are kept: a reader that holds an asset's statuses as of a snapshot and looks again
 * within it finds every change since, and derives only the partitions they name.
 */
export const CHANGES_KEPT_MS = 60_000;

/**
 * Deletes the change rows that version partition statuses (see migration partition_status_changes) beyond the newest
 * {@link CHANGES_KEPT_PER_ASSET} of each asset and older than `minAgeMs`, at most `limit` at a time; one pruner at a
 * time (others skip). It records the newest transaction whose rows of each asset it deleted
 * (partition_status_changes_pruned_assets; the newest of all in partition_status_changes_pruned): a reader whose
 * snapshot is older than that of the asset or of an upstream it read may have lost a change, and reads the asset in
 * full.
 */
export async function prunePartitionStatusChanges(
  db: Kysely<Database>,
  options: { readonly limit?: number; readonly minAgeMs?: number } = {},
): Promise<number> {
  const limit = options.limit ?? 50_000;
  const minAgeMs = options.minAgeMs ?? CHANGES_KEPT_MS;
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ locked: boolean }>`
      select pg_try_advisory_xact_lock(hashtext('tributary.partition_status_changes.prune')) as locked`.execute(trx);
    if (!rows[0]?.locked) return 0;
    const { rows: pruned } = await sql<{ n: number }>`
      with deleted as (
        delete from partition_status_changes c
        where c.id in (
          select id from (
            select id, created_at, row_number() over (partition by asset_key order by id desc) as newer
            from partition_status_changes
          ) ranked
          where ranked.newer > ${CHANGES_KEPT_PER_ASSET} and ranked.created_at < clock_timestamp() - make_interval(secs => ${minAgeMs / 1000})
          limit ${limit}
        )
        returning c.asset_key, c.tx_id
      ), horizon as (
        -- The newest over all assets, kept for a server that still versions statuses by it during a rolling upgrade.
        insert into partition_status_changes_pruned as p (singleton, through_tx)
        select true, max(tx_id::text::bigint) from deleted having count(*) > 0
        on conflict (singleton) do update set through_tx = greatest(p.through_tx, excluded.through_tx)
      ), asset_horizons as (
        -- In key order: two statements upserting the same assets lock them alike.
        insert into partition_status_changes_pruned_assets as p (asset_key, through_tx)
        select asset_key, max(tx_id::text::bigint) from deleted group by asset_key order by asset_key
        on conflict (asset_key) do update set through_tx = greatest(p.through_tx, excluded.through_tx)
      )
      select count(*)::int as n from deleted`.execute(trx);
    return pruned[0]?.n ?? 0;
  });
}

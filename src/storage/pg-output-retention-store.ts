import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import type { OutputRetentionPolicy, OutputRetentionStore, PrunedOutputs } from "./output-retention-store.js";

/**
 * Output retention in Postgres SQL (server Postgres and PGlite): outputs older than a cut-off are deleted, oldest
 * first, a batch per statement, except what a step may still read: the outputs of the run that wrote each partition's
 * latest materialisation (its own and its mapped steps', which downstream steps read as inputs) and the outputs of
 * runs that have not ended. Their objects are queued for deletion in the same statement. Rows locked by another
 * pruner (or a wipe) are skipped, so any number of reconcilers may prune at once.
 */
export class PgOutputRetentionStore implements OutputRetentionStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async prune(options: OutputRetentionPolicy & { readonly limit: number }, now: Date): Promise<PrunedOutputs> {
    const assets = options.assets ?? [];
    if (options.before === null && assets.length === 0) return { outputs: 0, objects: 0 };
    // The latest cut-off of all: an index range that every deletable output is in.
    const latest = new Date(Math.max(options.before?.getTime() ?? 0, ...assets.map((a) => a.before.getTime())));
    const { rows } = await sql<{ outputs: number; objects: number }>`
      with policy as (
        select * from unnest(${assets.map((a) => a.assetKey)}::text[], ${assets.map((a) => a.before)}::timestamptz[])
          as p(asset_key, before)
      ), doomed as (
        select o.id from outputs o left join policy p on p.asset_key = o.asset_key
        where o.created_at < ${latest} and o.created_at < coalesce(p.before, ${options.before}::timestamptz)
          and not exists (select 1 from partition_status ps
                          where ps.asset_key = o.asset_key and ps.partition_key = o.partition_key and ps.last_run_id = o.run_id)
          and not exists (select 1 from runs r where r.id = o.run_id and r.status in ('queued', 'running'))
        order by o.created_at
        limit ${options.limit}
        for update of o skip locked
      ), removed as (
        delete from outputs o using doomed d where o.id = d.id
        returning o.storage_ref, o.asset_key, o.partition_key
      ), queued as (
        insert into output_object_deletions (storage_ref, reason, asset_key, partition_key, requested_at, next_attempt_at)
        select storage_ref, 'retention', asset_key, partition_key, ${now}, ${now} from removed where storage_ref is not null
        on conflict (storage_ref) do nothing
        returning 1
      )
      select (select count(*) from removed)::int as outputs, (select count(*) from queued)::int as objects`.execute(this.#db);
    return { outputs: rows[0]?.outputs ?? 0, objects: rows[0]?.objects ?? 0 };
  }
}

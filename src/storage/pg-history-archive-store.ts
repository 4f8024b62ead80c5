import { sql, type Kysely, type RawBuilder } from "kysely";
import { StorageError } from "../errors/index.js";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import type { Database } from "./database.js";
import {
  HISTORY_TABLES,
  type HistoryArchiveDay,
  type HistoryArchiveObject,
  type HistoryArchiveStore,
  type HistoryBatch,
  type HistoryRetentionPolicy,
  type HistoryTable,
  type RestoredHistory,
  type ScrubbedLog,
  type WrittenArchive,
} from "./history-archive-store.js";

/** The day (UTC) of a timestamp, as YYYY-MM-DD. */
const dayOf = (column: RawBuilder<unknown>) => sql`((${column} at time zone 'UTC')::date)`;

/** Per table, the statement selecting a batch's rows as JSON text (runs $1: uuid[], events $2: bigint[], checks $3). */
function rowsOf(
  table: HistoryTable,
  runIds: readonly string[],
  eventIds: readonly string[],
  checkIds: readonly string[],
): RawBuilder<{ row: string }> {
  const runs = sql`${[...runIds]}::uuid[]`;
  switch (table) {
    case "runs":
      return sql`select to_jsonb(t)::text as row from runs t where t.id = any(${runs}) order by t.created_at, t.id`;
    case "steps":
      return sql`select to_jsonb(t)::text as row from steps t where t.run_id = any(${runs}) order by t.id`;
    case "step_deps":
      return sql`select to_jsonb(t)::text as row from step_deps t join steps s on s.id = t.step_id where s.run_id = any(${runs})
                 order by t.step_id, t.upstream_step_id`;
    case "step_tries":
      return sql`select to_jsonb(t)::text as row from step_tries t where t.run_id = any(${runs}) order by t.id`;
    case "triggers":
      return sql`select to_jsonb(t)::text as row from triggers t join steps s on s.id = t.step_id where s.run_id = any(${runs})
                 order by t.id`;
    case "events":
      return sql`select to_jsonb(t)::text as row from events t where t.id = any(${[...eventIds]}::bigint[]) order by t.id`;
    case "event_inputs":
      return sql`select to_jsonb(t)::text as row from event_inputs t where t.event_id = any(${[...eventIds]}::bigint[])
                 order by t.event_id, t.upstream_asset_key, t.upstream_partition_key`;
    case "check_results":
      return sql`select to_jsonb(t)::text as row from check_results t where t.id = any(${[...checkIds]}::bigint[]) order by t.id`;
  }
}

/**
 * HistoryArchiveStore in Postgres SQL (server Postgres and PGlite). A claim locks its candidates with SKIP LOCKED and
 * records each under a unique claim, so concurrent archivers take disjoint batches; completing re-checks the batch
 * under row locks and deletes nothing unless everything claimed may still go.
 */
export class PgHistoryArchiveStore implements HistoryArchiveStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async claim(
    policy: HistoryRetentionPolicy,
    options: { readonly limit: number; readonly owner: string; readonly orphans?: boolean },
    now: Date,
  ): Promise<HistoryBatch | null> {
    const assets = policy.assets ?? [];
    if (policy.before === null && assets.length === 0) return null;
    // The latest cut-off of all: every run and event past its retention ended or was recorded before it.
    const latest = new Date(Math.max(policy.before?.getTime() ?? 0, ...assets.map((a) => a.before.getTime())));
    const cutoffs = sql`(select * from unnest(${assets.map((a) => a.assetKey)}::text[], ${assets.map((a) => a.before)}::timestamptz[])
                           as p(asset_key, before))`;
    const fallback = sql`${policy.before}::timestamptz`;
    const held = (at: RawBuilder<unknown>) =>
      sql`exists (select 1 from history_holds h where h.day = ${dayOf(at)} and h.held_until > ${now})`;
    return this.#db.transaction().execute(async (trx) => {
      // Short statements over index probes: a JIT compilation would cost more than any of them.
      await sql`set local jit = off`.execute(trx);
      // Ended runs oldest first, a page at a time (an index walk that stops early), each page then filtered: ended
      // before the retention of every asset they ran, not of a backfill still going, not claimed, not held.
      const runs = await oldestDay(
        async (after) =>
          (
            await sql<Candidate & { version: string }>`
              select r.id::text, ${dayOf(sql`r.created_at`)}::text as day, r.created_at::text as at, r.updated_at::text as version
              from runs r
              where r.status in ('success', 'failed', 'canceled') and r.ended_at < ${latest}
                and (${after === null} or (r.created_at, r.id) > (${after?.at ?? null}::timestamptz, ${after?.id ?? null}::uuid))
              order by r.created_at, r.id
              limit ${PAGE}`.execute(trx)
          ).rows,
        async (ids) =>
          (
            await sql<{ id: string }>`
              select r.id::text from runs r
              where r.id = any(${ids}::uuid[])
                and exists (select 1 from steps s where s.run_id = r.id)
                and coalesce((select true from steps s left join ${cutoffs} p on p.asset_key = s.asset_key
                              where s.run_id = r.id
                                and (coalesce(p.before, ${fallback}) is null or r.ended_at >= coalesce(p.before, ${fallback}))
                              limit 1), false) = false
                and not exists (select 1 from backfills b where b.id = r.backfill_id and b.status in ('requested', 'running', 'canceling'))
                and not exists (select 1 from history_archive_claims c where c.run_id = r.id)
                and not ${held(sql`r.created_at`)}
              for update of r skip locked`.execute(trx)
          ).rows.map((r) => r.id),
        options.limit,
      );
      // Events of no run past their asset's retention that nothing needs; with `orphans`, also those whose run was
      // archived while they were still needed (a partition's latest), since superseded.
      const keepEvents = async (ids: string[]) =>
        (
          await sql<{ id: string }>`
            select e.id::text from events e left join ${cutoffs} p on p.asset_key = e.asset_key
            where e.id = any(${ids}::bigint[]) and e.created_at < coalesce(p.before, ${fallback})
              and ${superseded(sql`e`)}
              and not (e.id = any(array(select ps.last_materialization_event_id from partition_status ps
                                        where ps.last_materialization_event_id = any(${ids}::bigint[]))))
              and not (e.id = any(array(select ei.upstream_event_id from event_inputs ei where ei.upstream_event_id = any(${ids}::bigint[]))))
              and not exists (select 1 from history_archive_claims c where c.event_id = e.id)
              and not ${held(sql`e.created_at`)}
            for update of e skip locked`.execute(trx)
        ).rows.map((r) => r.id);
      const loose = await oldestDay(
        async (after) =>
          (
            await sql<Candidate>`
              select e.id::text, ${dayOf(sql`e.created_at`)}::text as day, e.created_at::text as at
              from events e
              where e.run_id is null and e.created_at < ${latest}
                and (${after === null} or (e.created_at, e.id) > (${after?.at ?? null}::timestamptz, ${after?.id ?? null}::bigint))
              order by e.created_at, e.id
              limit ${PAGE}`.execute(trx)
          ).rows,
        keepEvents,
        options.limit,
      );
      if (options.orphans) {
        // One pass over the events whose run is gone (a hash anti-join), filtered a page at a time.
        const { rows: orphans } = await sql<Candidate>`
          select e.id::text, ${dayOf(sql`e.created_at`)}::text as day, e.created_at::text as at
          from events e
          where e.run_id is not null and e.created_at < ${latest} and not exists (select 1 from runs r where r.id = e.run_id)
          order by e.created_at, e.id`.execute(trx);
        const found = await oldestDay(async (after) => pageAfter(orphans, after), keepEvents, options.limit);
        if (found.length > 0 && (loose.length === 0 || found[0]!.day < loose[0]!.day)) loose.splice(0, loose.length, ...found);
        else if (found.length > 0 && found[0]!.day === loose[0]!.day) loose.push(...found.slice(0, options.limit - loose.length));
      }
      const day = [runs[0]?.day, loose[0]?.day].filter((d): d is string => d !== undefined).sort()[0];
      if (day === undefined) return null;
      const { id: archiveId } = await trx
        .insertInto("history_archives")
        .values({ day, archived_by: options.owner, created_at: now })
        .returning("id")
        .executeTakeFirstOrThrow();
      const claimedRuns = await claimAll(
        trx,
        archiveId,
        "run_id",
        runs.filter((r) => r.day === day).map((r) => r.id),
      );
      const claimedLoose = await claimAll(
        trx,
        archiveId,
        "event_id",
        loose.filter((e) => e.day === day).map((e) => e.id),
      );
      if (claimedRuns.length === 0 && claimedLoose.length === 0) {
        await trx.deleteFrom("history_archives").where("id", "=", archiveId).execute();
        return null;
      }
      const { eventIds, checkIds } = await archivable(trx, claimedRuns, claimedLoose);
      const rows = {} as Record<HistoryTable, string[]>;
      for (const table of HISTORY_TABLES) {
        rows[table] = (await rowsOf(table, claimedRuns, eventIds, checkIds).execute(trx)).rows.map((r) => r.row);
      }
      const versions = new Map(runs.map((r) => [r.id, r.version]));
      return {
        archiveId,
        day,
        runIds: claimedRuns,
        eventIds: claimedLoose,
        rows,
        runVersions: Object.fromEntries(claimedRuns.map((id) => [id, versions.get(id)!])),
      };
    });
  }

  async written(archiveId: string, object: WrittenArchive): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .updateTable("history_archives")
        .set({ storage_ref: object.storageRef, size_bytes: object.sizeBytes, log_count: object.logCount })
        .where("id", "=", archiveId)
        .where("state", "=", "writing")
        .execute();
      const parts = object.logPartitions;
      if (parts.length === 0) return;
      await sql`insert into history_archive_log_partitions (archive_id, asset_key, partition_key)
                select ${archiveId}::uuid, a, p from unnest(${parts.map((x) => x.assetKey)}::text[], ${parts.map((x) => x.partitionKey)}::text[]) as x(a, p)
                on conflict do nothing`.execute(trx);
    });
  }

  async complete(batch: HistoryBatch, now: Date): Promise<{ readonly archived: boolean; readonly rows: number }> {
    try {
      return await this.#db.transaction().execute(async (trx) => {
        await sql`set local jit = off`.execute(trx);
        const { rows: locked } = await sql<{ id: string; version: string }>`
          select id, updated_at::text as version from runs where id = any(${[...batch.runIds]}::uuid[]) order by id for update`.execute(
          trx,
        );
        const changed = locked.length !== batch.runIds.length || locked.some((r) => batch.runVersions[r.id] !== r.version);
        const { eventIds, checkIds } = await archivable(trx, batch.runIds, batch.eventIds);
        if (changed || !sameIds(eventIds, idsOf(batch.rows.events)) || !sameIds(checkIds, idsOf(batch.rows.check_results))) {
          throw new BatchChanged();
        }
        const deleted = await sql<{ n: number }>`
          with checks as (delete from check_results where id = any(${[...checkIds]}::bigint[]) returning 1),
               inputs as (select count(*)::int as n from event_inputs where event_id = any(${[...eventIds]}::bigint[])),
               evs as (delete from events where id = any(${[...eventIds]}::bigint[]) returning 1),
               deps as (select count(*)::int as n from step_deps d join steps s on s.id = d.step_id where s.run_id = any(${[...batch.runIds]}::uuid[])),
               waits as (select count(*)::int as n from triggers t join steps s on s.id = t.step_id where s.run_id = any(${[...batch.runIds]}::uuid[])),
               tries as (select count(*)::int as n from step_tries where run_id = any(${[...batch.runIds]}::uuid[])),
               steps as (select count(*)::int as n from steps where run_id = any(${[...batch.runIds]}::uuid[]))
          select ((select count(*) from checks) + (select n from inputs) + (select count(*) from evs) + (select n from deps)
                  + (select n from waits) + (select n from tries) + (select n from steps))::int as n`.execute(trx);
        // Runs last: their steps, dependencies, tries and waits go with them.
        const runsDeleted = await sql`delete from runs where id = any(${[...batch.runIds]}::uuid[])`.execute(trx);
        const rows = (deleted.rows[0]?.n ?? 0) + Number(runsDeleted.numAffectedRows ?? 0);
        const expected = HISTORY_TABLES.reduce((n, t) => n + batch.rows[t].length, 0);
        // A step added to a claimed run, a row gone meanwhile: the object would not hold what was deleted.
        if (rows !== expected) throw new BatchChanged();
        await trx
          .updateTable("history_archives")
          .set({ state: "archived", archived_at: now, runs: batch.runIds.length, events: eventIds.length, row_count: rows })
          .where("id", "=", batch.archiveId)
          .where("state", "=", "writing")
          .execute();
        await trx.deleteFrom("history_archive_claims").where("archive_id", "=", batch.archiveId).execute();
        return { archived: true, rows };
      });
    } catch (error) {
      if (!(error instanceof BatchChanged)) throw error;
      await this.release(batch.archiveId, now);
      return { archived: false, rows: 0 };
    }
  }

  async release(archiveId: string, now: Date): Promise<void> {
    await dropArchives(this.#db, sql`id = ${archiveId} and state = 'writing'`, now);
  }

  async releaseAbandoned(before: Date, now: Date): Promise<number> {
    return dropArchives(this.#db, sql`state = 'writing' and created_at < ${before}`, now);
  }

  async days(): Promise<HistoryArchiveDay[]> {
    const { rows } = await sql<{
      day: string;
      archives: number;
      runs: number;
      events: number;
      rows: number;
      logs: number;
      size_bytes: string;
      last_archived_at: Date | null;
      restored: number;
      last_restored_at: Date | null;
      held_until: Date | null;
    }>`
      select a.day::text as day,
             count(*) filter (where a.state = 'archived')::int as archives,
             coalesce(sum(a.runs) filter (where a.state = 'archived'), 0)::int as runs,
             coalesce(sum(a.events) filter (where a.state = 'archived'), 0)::int as events,
             coalesce(sum(a.row_count) filter (where a.state = 'archived'), 0)::int as rows,
             coalesce(sum(a.log_count) filter (where a.state = 'archived'), 0)::int as logs,
             coalesce(sum(a.size_bytes) filter (where a.state = 'archived'), 0)::text as size_bytes,
             max(a.archived_at) filter (where a.state = 'archived') as last_archived_at,
             count(*) filter (where a.state = 'restored')::int as restored,
             max(a.restored_at) as last_restored_at,
             (select h.held_until from history_holds h where h.day = a.day and h.held_until > now()) as held_until
      from history_archives a
      where a.state <> 'writing'
      group by a.day
      order by a.day desc`.execute(this.#db);
    return rows.map((r) => ({
      day: r.day,
      archives: r.archives,
      runs: r.runs,
      events: r.events,
      rows: r.rows,
      logs: r.logs,
      sizeBytes: Number(r.size_bytes),
      lastArchivedAt: r.last_archived_at,
      restoredArchives: r.restored,
      lastRestoredAt: r.last_restored_at,
      heldUntil: r.held_until,
    }));
  }

  async archivesOf(day: string): Promise<HistoryArchiveObject[]> {
    const rows = await this.#db
      .selectFrom("history_archives")
      .select(["id", "storage_ref"])
      .where(sql<boolean>`day = ${day}::date`)
      .where("state", "=", "archived")
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map((r) => ({ id: r.id, storageRef: r.storage_ref! }));
  }

  async restore(
    day: string,
    load: (
      archives: readonly HistoryArchiveObject[],
    ) => Promise<readonly { readonly rows: Readonly<Record<HistoryTable, readonly string[]>> }[]>,
    hold: { readonly until: Date; readonly by: string | null },
    now: Date,
    audit?: AuditEntry,
  ): Promise<RestoredHistory> {
    return this.#db.transaction().execute(async (trx) =>
      withAudit(
        trx,
        audit,
        now,
        async () => {
          const { rows: locked } = await sql<{ id: string; storage_ref: string }>`
            select id, storage_ref from history_archives where day = ${day}::date and state = 'archived'
            order by created_at, id for update`.execute(trx);
          if (locked.length === 0) {
            throw new StorageError(
              "HISTORY_ARCHIVE_CHANGED",
              `the archives of ${day} changed while the restore began (another restore took them); nothing was restored: ` +
                `look at \`tributary archive list\``,
            );
          }
          const archives = await load(locked.map((a) => ({ id: a.id, storageRef: a.storage_ref })));
          const ids = locked.map((a) => a.id);
          const counts = Object.fromEntries(HISTORY_TABLES.map((t) => [t, 0])) as Record<HistoryTable, number>;
          for (const table of HISTORY_TABLES) {
            const rows = archives.flatMap((a) => a.rows[table]);
            if (rows.length > 0) counts[table] = await insertRows(trx, table, rows);
          }
          await sql`
            with restored as (
              update history_archives set state = 'restored', restored_at = ${now}, restored_by = ${hold.by}
              where id = any(${ids}::uuid[]) returning storage_ref
            )
            insert into output_object_deletions (storage_ref, reason, asset_key, partition_key, requested_at, next_attempt_at)
            select storage_ref, 'archive restored', '', '', ${now}, ${now} from restored where storage_ref is not null
            on conflict (storage_ref) do nothing`.execute(trx);
          await sql`delete from history_archive_log_partitions where archive_id = any(${ids}::uuid[])`.execute(trx);
          await sql`
            insert into history_holds (day, held_until, held_by) values (${day}::date, ${hold.until}, ${hold.by})
            on conflict (day) do update set held_until = greatest(history_holds.held_until, excluded.held_until), held_by = excluded.held_by`.execute(
            trx,
          );
          return { day, archives: ids.length, rows: counts, heldUntil: hold.until };
        },
        (r) => ({ day: r.day, archives: r.archives }),
      ),
    );
  }

  async archivesWithLogs(assetKey: string, partitionKeys: readonly string[]): Promise<(HistoryArchiveObject & { readonly day: string })[]> {
    const { rows } = await sql<{ id: string; storage_ref: string; day: string }>`
      select distinct a.id, a.storage_ref, a.day::text as day, a.created_at
      from history_archive_log_partitions lp join history_archives a on a.id = lp.archive_id
      where lp.asset_key = ${assetKey} and lp.partition_key = any(${[...partitionKeys]}::text[]) and a.state = 'archived'
      order by a.created_at, a.id`.execute(this.#db);
    return rows.map((r) => ({ id: r.id, storageRef: r.storage_ref, day: r.day }));
  }

  async scrubLogs(
    archiveId: string,
    target: { readonly requestId: string; readonly assetKey: string; readonly partitionKeys: readonly string[] },
    rewrite: (storageRef: string) => Promise<{ readonly removed: readonly ScrubbedLog[]; readonly sizeBytes: number }>,
    now: Date,
  ): Promise<readonly ScrubbedLog[] | null> {
    return this.#db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ storage_ref: string }>`
        select storage_ref from history_archives where id = ${archiveId} and state = 'archived' for update`.execute(trx);
      if (rows.length === 0) return null;
      const { removed, sizeBytes } = await rewrite(rows[0]!.storage_ref);
      if (removed.length > 0) {
        await sql`
          insert into erasure_deletions (request_id, kind, asset_key, partition_key, run_id, step_id, try_number, ref, size_bytes, deleted_at)
          select ${target.requestId}, 'log', a, p, r, s, t, r::text || '/' || s::text || '-' || t::text, sz, ${now}
          from unnest(${removed.map((l) => l.assetKey)}::text[], ${removed.map((l) => l.partitionKey)}::text[],
                      ${removed.map((l) => l.runId)}::uuid[], ${removed.map((l) => l.stepId)}::bigint[],
                      ${removed.map((l) => l.tryNumber)}::int[], ${removed.map((l) => l.sizeBytes)}::bigint[]) as x(a, p, r, s, t, sz)
          on conflict do nothing`.execute(trx);
        await sql`update history_archives set size_bytes = ${sizeBytes}, log_count = greatest(log_count - ${removed.length}, 0)
                  where id = ${archiveId}`.execute(trx);
      }
      await sql`delete from history_archive_log_partitions
                where archive_id = ${archiveId} and asset_key = ${target.assetKey}
                  and partition_key = any(${[...target.partitionKeys]}::text[])`.execute(trx);
      return removed;
    });
  }
}

/** Thrown inside a completing transaction to roll it back: the batch changed since it was claimed. */
class BatchChanged extends Error {
  constructor() {
    super("the batch changed since it was claimed");
  }
}

/** Candidates are read this many at a time, oldest first. */
const PAGE = 1_000;

interface Candidate {
  readonly id: string;
  readonly day: string;
  /** created_at as text: the page's position. */
  readonly at: string;
}

/**
 * The candidates of the oldest day that pass `keep`, at most `limit`: pages oldest first until enough are found or
 * the day is over. `keep` answers which of a page's ids pass (it may lock them).
 */
async function oldestDay<T extends Candidate>(
  page: (after: Candidate | null) => Promise<T[]>,
  keep: (ids: string[]) => Promise<string[]>,
  limit: number,
): Promise<T[]> {
  const out: T[] = [];
  let day: string | undefined;
  for (let after: Candidate | null = null; ;) {
    const rows = await page(after);
    if (rows.length === 0) return out;
    const kept = new Set(await keep(rows.filter((r) => day === undefined || r.day === day).map((r) => r.id)));
    for (const r of rows) {
      if (day !== undefined && r.day !== day) return out;
      if (!kept.has(r.id)) continue;
      day = r.day;
      out.push(r);
      if (out.length >= limit) return out;
    }
    if (rows.length < PAGE) return out;
    after = rows.at(-1)!;
  }
}

/** The page of an ordered list after a candidate. */
function pageAfter<T extends Candidate>(all: readonly T[], after: Candidate | null): T[] {
  const from = after === null ? 0 : all.findIndex((c) => c.id === after.id) + 1;
  return all.slice(from, from + PAGE);
}

/**
 * A newer event of the same kind exists for the event's partition. A scalar subquery with a limit: an index probe
 * per event, never a join the planner might hash over the whole table.
 */
function superseded(e: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`coalesce((select true from events n where n.asset_key = ${e}.asset_key and n.partition_key = ${e}.partition_key
                                                     and n.kind = ${e}.kind and n.id > ${e}.id limit 1), false)`;
}

/**
 * What of the claimed runs and events goes: every claimed event of no run; of the runs' events, those superseded by
 * a newer event of their kind, not behind a partition's status and read by no event that stays — followed through
 * the runs' own events until nothing changes; of their check results, all but a check's latest.
 */
async function archivable(
  trx: Kysely<Database>,
  runIds: readonly string[],
  looseIds: readonly string[],
): Promise<{ eventIds: string[]; checkIds: string[] }> {
  if (runIds.length === 0) return { eventIds: [...looseIds], checkIds: [] };
  const runs = sql`${[...runIds]}::uuid[]`;
  const { rows: events } = await sql<{ id: string; superseded: boolean }>`
    select e.id::text, ${superseded(sql`e`)} as superseded from events e where e.run_id = any(${runs})`.execute(trx);
  const ids = events.map((e) => e.id);
  const { rows: behindStatus } = await sql<{ id: string }>`
    select last_materialization_event_id::text as id from partition_status
    where last_materialization_event_id = any(${ids}::bigint[])`.execute(trx);
  const { rows: reads } = await sql<{ reader: string; read: string; run_id: string | null }>`
    select ei.event_id::text as reader, ei.upstream_event_id::text as read, d.run_id::text
    from event_inputs ei join events d on d.id = ei.event_id
    where ei.upstream_event_id = any(${ids}::bigint[])`.execute(trx);
  const inBatch = new Set(runIds);
  const loose = new Set(looseIds);
  const kept = new Set([...events.filter((e) => !e.superseded).map((e) => e.id), ...behindStatus.map((r) => r.id)]);
  // Read by an event that stays here: one outside the batch.
  for (const r of reads) if (!(r.run_id !== null && inBatch.has(r.run_id)) && !loose.has(r.reader)) kept.add(r.read);
  // ... or by one of the batch's own that stays.
  for (let grew = true; grew;) {
    grew = false;
    for (const r of reads) {
      if (kept.has(r.reader) && !kept.has(r.read)) {
        kept.add(r.read);
        grew = true;
      }
    }
  }
  const { rows: checks } = await sql<{ id: string }>`
    select c.id::text from check_results c
    where c.run_id = any(${runs})
      and coalesce((select true from check_results n where n.asset_key = c.asset_key and n.partition_key = c.partition_key
                                                     and n.check_name = c.check_name and n.id > c.id limit 1), false)`.execute(trx);
  return { eventIds: [...events.filter((e) => !kept.has(e.id)).map((e) => e.id), ...looseIds], checkIds: checks.map((c) => c.id) };
}

async function claimAll(
  trx: Kysely<Database>,
  archiveId: string,
  column: "run_id" | "event_id",
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const type = column === "run_id" ? sql`uuid` : sql`bigint`;
  const { rows } = await sql<{ id: string }>`
    insert into history_archive_claims (archive_id, ${sql.ref(column)})
    select ${archiveId}::uuid, x from unnest(${[...ids]}::${type}[]) as x
    on conflict do nothing
    returning ${sql.ref(column)}::text as id`.execute(trx);
  const claimed = new Set(rows.map((r) => r.id));
  return ids.filter((id) => claimed.has(id));
}

/** Drops writing archives (their claims go with them) and queues their objects, if written, for deletion. */
async function dropArchives(db: Kysely<Database>, where: RawBuilder<unknown>, now: Date): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with dropped as (delete from history_archives where ${where} returning storage_ref),
         queued as (
           insert into output_object_deletions (storage_ref, reason, asset_key, partition_key, requested_at, next_attempt_at)
           select storage_ref, 'archive abandoned', '', '', ${now}, ${now} from dropped where storage_ref is not null
           on conflict (storage_ref) do nothing
         )
    select count(*)::int as n from dropped`.execute(db);
  return rows[0]?.n ?? 0;
}

/** Inserts archived rows of a table, the columns it has now (a column added since takes its default). */
async function insertRows(trx: Kysely<Database>, table: HistoryTable, rows: readonly string[]): Promise<number> {
  const { rows: columns } = await sql<{ name: string }>`
    select column_name as name from information_schema.columns
    where table_schema = current_schema() and table_name = ${table}`.execute(trx);
  const present = new Set(Object.keys(JSON.parse(rows[0]!) as Record<string, unknown>));
  const names = columns.map((c) => c.name).filter((n) => present.has(n));
  const t = sql.table(table);
  const batchRunIds = table === "runs" ? idsOf(rows) : [];
  // A run's parent, backfill or idempotency key may have gone, or been taken, since it was archived.
  const value = (n: string): RawBuilder<unknown> =>
    table !== "runs"
      ? sql.ref(`x.${n}`)
      : n === "parent_run_id"
        ? sql`case when exists (select 1 from runs r where r.id = x.parent_run_id) or x.parent_run_id = any(${batchRunIds}::uuid[]) then x.parent_run_id end`
        : n === "backfill_id"
          ? sql`case when exists (select 1 from backfills b where b.id = x.backfill_id) then x.backfill_id end`
          : n === "idempotency_key"
            ? sql`case when not exists (select 1 from runs r where r.idempotency_key = x.idempotency_key) then x.idempotency_key end`
            : sql.ref(`x.${n}`);
  const result = await sql`
    insert into ${t} (${sql.join(names.map((n) => sql.ref(n)))})
    select ${sql.join(names.map(value))} from jsonb_populate_recordset(null::${t}, ${batchJson(rows)}::jsonb) as x
    on conflict do nothing`.execute(trx);
  return Number(result.numAffectedRows ?? 0);
}

const batchJson = (rows: readonly string[]): string => `[${rows.join(",")}]`;

/** The ids of rows given as JSON text. */
function idsOf(rows: readonly string[]): string[] {
  return rows.map((r) => String((JSON.parse(r) as { id: number | string }).id));
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((id) => set.has(id));
}

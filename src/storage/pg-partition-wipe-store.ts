import { sql, type Kysely } from "kysely";
import { InputError } from "../errors/index.js";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import type { Database } from "./database.js";
import { toJson } from "./json.js";
import { UNFINISHED_STEP_STATES } from "./partition-status-store.js";
import type { PartitionWipe, PartitionWipeRequest, PartitionWipeStore, QueuedObjectDeletion } from "./partition-wipe-store.js";

/** Steps named in a refusal; the rest are counted. */
const MAX_NAMED_STEPS = 5;

/** Event kinds that made a partition's data: a removed one counts as a materialisation. */
const DATA_KINDS = ["materialization", "external", "observation"] as const;

/** Thrown inside a dry run's transaction to roll it back once its counts are known. */
class DryRunRollback extends Error {
  constructor(readonly result: PartitionWipe) {
    super("dry run");
  }
}

/** PartitionWipeStore in Postgres SQL (server Postgres and PGlite). */
export class PgPartitionWipeStore implements PartitionWipeStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async wipe(request: PartitionWipeRequest, now: Date, audit?: AuditEntry): Promise<PartitionWipe> {
    const keys = [...new Set(request.partitionKeys)];
    const dryRun = request.dryRun === true;
    try {
      return await this.#db.transaction().execute(async (trx) => {
        const result = await withAudit(
          trx,
          dryRun ? undefined : audit,
          now,
          () => wipeIn(trx, { ...request, partitionKeys: keys, dryRun }, now),
          (r) => ({ statusesRemoved: r.statusesRemoved, outputsRemoved: r.outputsRemoved, objectCount: r.objectCount }),
        );
        if (dryRun) throw new DryRunRollback(result);
        return result;
      });
    } catch (error) {
      if (error instanceof DryRunRollback) return error.result;
      throw error;
    }
  }
}

async function wipeIn(trx: Kysely<Database>, request: PartitionWipeRequest & { dryRun: boolean }, now: Date): Promise<PartitionWipe> {
  const { assetKey, partitionKeys: keys } = request;
  // The statuses first, locked: a step that ends meanwhile writes its partition's status after this commits, and
  // until it has committed its step still reads as unfinished below, so the wipe is refused rather than raced.
  await sql`select 1 from partition_status where asset_key = ${assetKey} and partition_key = any(${keys}::text[])
            order by partition_key for update`.execute(trx);
  const busy = await sql<{ run_id: string; partition_key: string; state: string; n: number }>`
    select run_id, partition_key, state, count(*) over ()::int as n from steps
    where asset_key = ${assetKey} and partition_key = any(${keys}::text[]) and state = any(${[...UNFINISHED_STEP_STATES]}::text[])
    order by id limit ${MAX_NAMED_STEPS}`.execute(trx);
  if (busy.rows.length > 0) {
    const total = busy.rows[0]!.n;
    const named = busy.rows
      .map((r) => `run ${r.run_id} (${r.partition_key === "" ? "" : `partition "${r.partition_key}", `}step ${r.state})`)
      .join(", ");
    throw new InputError(
      `cannot wipe partitions of "${assetKey}" while runs write them: ${named}` +
        `${total > busy.rows.length ? ` and ${total - busy.rows.length} more step(s)` : ""}; ` +
        `wait for those runs to end or cancel them (tributary runs cancel <run-id>), then wipe again. Nothing was wiped`,
      { code: "WIPE_PARTITIONS_IN_USE", location: { assetKey } },
    );
  }

  const outputs = await sql<{ storage_ref: string | null; partition_key: string }>`
    delete from outputs where asset_key = ${assetKey} and partition_key = any(${keys}::text[])
    returning storage_ref, partition_key`.execute(trx);
  const objects = outputs.rows.filter((r): r is { storage_ref: string; partition_key: string } => r.storage_ref !== null);
  let objectDeletions: QueuedObjectDeletion[] = [];
  if (objects.length > 0 && !request.dryRun) {
    const queued = await sql<{ id: string | number; storage_ref: string }>`
      insert into output_object_deletions (storage_ref, reason, asset_key, partition_key, requested_at, next_attempt_at)
      select ref, 'wipe', ${assetKey}, pk, ${now}, ${now}
      from unnest(${objects.map((o) => o.storage_ref)}::text[], ${objects.map((o) => o.partition_key)}::text[]) as t(ref, pk)
      on conflict (storage_ref) do nothing
      returning id, storage_ref`.execute(trx);
    objectDeletions = queued.rows.map((r) => ({ id: Number(r.id), storageRef: r.storage_ref }));
  }

  // Event inputs (the removed materialisations' lineage) go with their events (ON DELETE CASCADE).
  const events = await sql<{ data: number; other: number }>`
    with removed as (
      delete from events where asset_key = ${assetKey} and partition_key = any(${keys}::text[]) and kind <> 'wipe'
      returning kind
    )
    select count(*) filter (where kind = any(${[...DATA_KINDS]}::text[]))::int as data,
           count(*) filter (where kind <> all(${[...DATA_KINDS]}::text[]))::int as other
    from removed`.execute(trx);
  const removed = await sql<{ checks: number; statuses: number }>`
    with checks as (
      delete from check_results where asset_key = ${assetKey} and partition_key = any(${keys}::text[]) returning 1
    ), statuses as (
      delete from partition_status where asset_key = ${assetKey} and partition_key = any(${keys}::text[]) returning 1
    )
    select (select count(*) from checks)::int as checks, (select count(*) from statuses)::int as statuses`.execute(trx);
  // A wipe event per partition: the event stream tells automation that they are missing again.
  await sql`insert into events (kind, asset_key, partition_key, metadata, created_at)
            select 'wipe', ${assetKey}, k, ${toJson({ reason: request.reason })}::jsonb, ${now} from unnest(${keys}::text[]) as k`.execute(
    trx,
  );

  return {
    assetKey,
    partitionKeys: keys,
    partitionCount: keys.length,
    statusesRemoved: removed.rows[0]?.statuses ?? 0,
    materializationsRemoved: events.rows[0]?.data ?? 0,
    otherEventsRemoved: events.rows[0]?.other ?? 0,
    checkResultsRemoved: removed.rows[0]?.checks ?? 0,
    outputsRemoved: outputs.rows.length,
    objectDeletions,
    objectCount: objects.length,
    dryRun: request.dryRun,
  };
}

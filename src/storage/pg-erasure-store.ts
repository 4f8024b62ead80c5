import { sql, type Kysely } from "kysely";
import { InputError } from "../errors/index.js";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import type { Database } from "./database.js";
import type {
  ErasureBatch,
  ErasureDeletionRecord,
  ErasureHookCallRecord,
  ErasureItemInput,
  ErasureItemRecord,
  ErasureRelease,
  ErasureReport,
  ErasureRequestRecord,
  ErasureState,
  ErasureStore,
  ErasureTryLog,
  NewErasureRequest,
} from "./erasure-store.js";
import { toJson } from "./json.js";
import { UNFINISHED_STEP_STATES } from "./partition-status-store.js";

/** Steps named when a run writes erased partitions; the rest are counted. */
const MAX_NAMED_STEPS = 5;
/** The most lines of one hook call's log, and characters of one line. */
const MAX_HOOK_LOG_LINES = 200;
const MAX_HOOK_LOG_LINE = 2_000;

interface RequestRow {
  id: string;
  state: ErasureState;
  asset_key: string;
  partition_keys: string[];
  reason: string | null;
  requested_by: string | null;
  backfill_id: string | null;
  message: string | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  item_count: number;
  erased_count: number;
}

const REQUEST_COLUMNS = sql`r.id, r.state, r.asset_key, r.partition_keys, r.reason, r.requested_by, r.backfill_id, r.message,
  r.attempts, r.created_at, r.updated_at, r.finished_at,
  (select count(*) from erasure_items i where i.request_id = r.id)::int as item_count,
  (select count(*) from erasure_items i where i.request_id = r.id and i.erased_at is not null)::int as erased_count`;

function toRequest(r: RequestRow): ErasureRequestRecord {
  return {
    id: r.id,
    state: r.state,
    assetKey: r.asset_key,
    partitionKeys: r.partition_keys,
    reason: r.reason,
    requestedBy: r.requested_by,
    backfillId: r.backfill_id,
    message: r.message,
    attempts: r.attempts,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    itemCount: r.item_count,
    erasedCount: r.erased_count,
  };
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

/** The unfinished steps of the given assets, as a refusal's or a wait's words; null when there are none. */
async function busySteps(trx: Kysely<Database>, assets: readonly string[]): Promise<string | null> {
  const busy = await sql<{ run_id: string; asset_key: string; partition_key: string; state: string; n: number }>`
    select s.run_id, s.asset_key, s.partition_key, s.state, count(*) over ()::int as n
    from steps s
    where s.asset_key = any(${assets}::text[]) and s.state = any(${[...UNFINISHED_STEP_STATES]}::text[])
    order by s.id limit ${MAX_NAMED_STEPS}`.execute(trx);
  if (busy.rows.length === 0) return null;
  const total = busy.rows[0]!.n;
  const named = busy.rows
    .map((r) => `run ${r.run_id} (${r.asset_key}${r.partition_key === "" ? "" : ` partition "${r.partition_key}"`}, step ${r.state})`)
    .join(", ");
  return `${named}${total > busy.rows.length ? ` and ${total - busy.rows.length} more step(s)` : ""}`;
}

/** ErasureStore in Postgres SQL (server Postgres and PGlite). */
export class PgErasureStore implements ErasureStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async create(request: NewErasureRequest, now: Date, audit?: AuditEntry): Promise<ErasureRequestRecord> {
    const assets = request.items.map((i) => i.assetKey);
    const partitions = request.items.map((i) => i.partitionKey);
    return this.#db.transaction().execute(async (trx) => {
      // The statuses first, locked (as a wipe does): a step that ends meanwhile commits its status after this.
      await sql`select 1 from partition_status ps
                join unnest(${assets}::text[], ${partitions}::text[]) as t(asset_key, partition_key)
                  on ps.asset_key = t.asset_key and ps.partition_key = t.partition_key
                order by ps.asset_key, ps.partition_key for update of ps`.execute(trx);
      const busy = await busySteps(trx, request.guardedAssets);
      if (busy !== null) {
        throw new InputError(
          `cannot erase while runs write assets derived from "${request.assetKey}": ${busy}; they may be writing data ` +
            `read from the old source. Wait for those runs to end or cancel them ` +
            `(tributary runs cancel <run-id>), then ask again. Nothing was recorded`,
          { code: "ERASURE_PARTITIONS_IN_USE", location: { assetKey: request.assetKey } },
        );
      }
      return withAudit(trx, audit, now, async () => {
        const created = await sql<{ id: string }>`
          insert into erasure_requests (asset_key, partition_keys, reason, requested_by, created_at, updated_at, next_attempt_at)
          values (${request.assetKey}, ${toJson([...request.partitionKeys])}::jsonb, ${request.reason}, ${request.requestedBy},
                  ${now}, ${now}, ${now})
          returning id`.execute(trx);
        const id = created.rows[0]!.id;
        await insertItems(trx, id, request.items);
        return (await requestById(trx, id))!;
      });
    });
  }

  async get(id: string): Promise<ErasureRequestRecord | undefined> {
    return requestById(this.#db, id);
  }

  async report(id: string): Promise<ErasureReport | undefined> {
    const request = await requestById(this.#db, id);
    if (!request) return undefined;
    const items = await itemsOf(this.#db, id, null);
    const deletions = await sql<{
      kind: ErasureDeletionRecord["kind"];
      asset_key: string;
      partition_key: string;
      run_id: string | null;
      step_id: string | null;
      try_number: number | null;
      ref: string | null;
      size_bytes: string | null;
      deleted_at: Date;
    }>`select kind, asset_key, partition_key, run_id, step_id, try_number, ref, size_bytes, deleted_at
       from erasure_deletions where request_id = ${id} order by id`.execute(this.#db);
    const calls = await sql<{
      id: string;
      asset_key: string;
      partition_keys: string[];
      attempt: number;
      state: ErasureHookCallRecord["state"];
      started_at: Date;
      ended_at: Date | null;
      error: string | null;
      log: string[];
    }>`select id, asset_key, partition_keys, attempt, state, started_at, ended_at, error, log
       from erasure_hook_calls where request_id = ${id} order by id`.execute(this.#db);
    return {
      request,
      items,
      deletions: deletions.rows.map((d) => ({
        kind: d.kind,
        assetKey: d.asset_key,
        partitionKey: d.partition_key,
        runId: d.run_id,
        stepId: num(d.step_id),
        tryNumber: d.try_number,
        ref: d.ref,
        sizeBytes: num(d.size_bytes),
        deletedAt: d.deleted_at,
      })),
      hookCalls: calls.rows.map((c) => ({
        id: Number(c.id),
        assetKey: c.asset_key,
        partitionKeys: c.partition_keys,
        attempt: c.attempt,
        state: c.state,
        startedAt: c.started_at,
        endedAt: c.ended_at,
        error: c.error,
        log: c.log,
      })),
    };
  }

  async list(options: { readonly limit: number; readonly state?: ErasureState }): Promise<ErasureRequestRecord[]> {
    const { rows } = await sql<RequestRow>`
      select ${REQUEST_COLUMNS} from erasure_requests r
      where ${options.state === undefined ? sql`true` : sql`r.state = ${options.state}`}
      order by r.created_at desc, r.id limit ${options.limit}`.execute(this.#db);
    return rows.map(toRequest);
  }

  async claim(owner: string, leaseMs: number, now: Date): Promise<ErasureRequestRecord | undefined> {
    const until = new Date(now.getTime() + leaseMs);
    const claimed = await sql<{ id: string }>`
      update erasure_requests set lease_owner = ${owner}, lease_until = ${until},
        state = case when state = 'planned' then 'erasing' else state end
      where id = (
        select id from erasure_requests
        where state in ('planned', 'erasing', 'rematerialising') and next_attempt_at <= ${now}
          and (lease_until is null or lease_until < ${now})
        order by next_attempt_at, created_at limit 1 for update skip locked
      )
      returning id`.execute(this.#db);
    const id = claimed.rows[0]?.id;
    return id === undefined ? undefined : requestById(this.#db, id);
  }

  async renew(id: string, owner: string, leaseMs: number, now: Date): Promise<boolean> {
    const result = await sql`update erasure_requests set lease_until = ${new Date(now.getTime() + leaseMs)}
                             where id = ${id} and lease_owner = ${owner}`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0) > 0;
  }

  async release(id: string, owner: string, change: ErasureRelease, now: Date): Promise<void> {
    const finished = change.state === "done" || change.state === "failed";
    await sql`
      update erasure_requests set
        lease_owner = null, lease_until = null, updated_at = ${now},
        state = coalesce(${change.state ?? null}, state),
        message = ${change.message === undefined ? sql`message` : sql`${change.message}`},
        backfill_id = ${change.backfillId === undefined ? sql`backfill_id` : sql`${change.backfillId}::uuid`},
        next_attempt_at = ${change.nextAttemptAt ?? now},
        finished_at = ${finished ? sql`${now}` : sql`finished_at`},
        attempts = attempts + ${change.state === "failed" ? 1 : 0}
      where id = ${id} and lease_owner = ${owner}`.execute(this.#db);
  }

  async addItems(id: string, items: readonly ErasureItemInput[]): Promise<number> {
    return insertItems(this.#db, id, items);
  }

  async pendingItems(id: string, limit: number): Promise<ErasureItemRecord[]> {
    return itemsOf(this.#db, id, limit);
  }

  async eraseBatch(
    id: string,
    batch: { readonly assetKey: string; readonly partitionKeys: readonly string[]; readonly guardedAssets: readonly string[] },
    now: Date,
  ): Promise<ErasureBatch> {
    const { assetKey } = batch;
    const keys = [...new Set(batch.partitionKeys)];
    return this.#db.transaction().execute(async (trx): Promise<ErasureBatch> => {
      await sql`select 1 from partition_status where asset_key = ${assetKey} and partition_key = any(${keys}::text[])
                order by partition_key for update`.execute(trx);
      const busy = await busySteps(trx, batch.guardedAssets);
      if (busy !== null) return { kind: "busy", message: `waiting for runs that write assets derived from the source: ${busy}` };

      // Every stored output of the partitions, of any run: an older materialisation holds the same data.
      const outputs = await sql<{
        id: string;
        storage_ref: string | null;
        partition_key: string;
        run_id: string;
        step_id: string;
        try_number: number;
        size_bytes: string;
      }>`
        delete from outputs where asset_key = ${assetKey} and partition_key = any(${keys}::text[])
        returning id, storage_ref, partition_key, run_id, step_id, try_number, size_bytes`.execute(trx);
      if (outputs.rows.length > 0) {
        const rows = outputs.rows;
        await sql`insert into erasure_deletions (request_id, kind, asset_key, partition_key, run_id, step_id, try_number, ref, size_bytes, deleted_at)
                  select ${id}, 'output', ${assetKey}, p, r, s, t, ref, sz, ${now}
                  from unnest(${rows.map((o) => o.partition_key)}::text[], ${rows.map((o) => o.run_id)}::uuid[],
                              ${rows.map((o) => o.step_id)}::bigint[], ${rows.map((o) => o.try_number)}::int[],
                              ${rows.map((o) => o.storage_ref ?? `inline:${o.id}`)}::text[], ${rows.map((o) => o.size_bytes)}::bigint[])
                    as x(p, r, s, t, ref, sz)
                  on conflict do nothing`.execute(trx);
      }
      const objects = outputs.rows.filter((o) => o.storage_ref !== null);
      const queued =
        objects.length === 0
          ? { rows: [] as { id: string; storage_ref: string }[] }
          : await sql<{ id: string; storage_ref: string }>`
              insert into output_object_deletions (storage_ref, reason, asset_key, partition_key, requested_at, next_attempt_at)
              select ref, 'erasure', ${assetKey}, pk, ${now}, ${now}
              from unnest(${objects.map((o) => o.storage_ref)}::text[], ${objects.map((o) => o.partition_key)}::text[]) as t(ref, pk)
              on conflict (storage_ref) do nothing
              returning id, storage_ref`.execute(trx);

      await sql`update partition_status set status = 'erased', updated_at = ${now}
                where asset_key = ${assetKey} and partition_key = any(${keys}::text[])`.execute(trx);
      await sql`update erasure_items set erased_at = ${now}
                where request_id = ${id} and asset_key = ${assetKey} and partition_key = any(${keys}::text[]) and erased_at is null`.execute(
        trx,
      );
      const logs = await logsToDelete(trx, id, assetKey, keys);
      return {
        kind: "erased",
        outputs: outputs.rows.length,
        objectDeletions: queued.rows.map((r) => ({ id: Number(r.id), storageRef: r.storage_ref })),
        logs,
      };
    });
  }

  async recordLogs(id: string, logs: readonly (ErasureTryLog & { readonly sizeBytes: number | null })[], now: Date): Promise<void> {
    if (logs.length === 0) return;
    await sql`insert into erasure_deletions (request_id, kind, asset_key, partition_key, run_id, step_id, try_number, ref, size_bytes, deleted_at)
              select ${id}, 'log', a, p, r, s, t, r::text || '/' || s::text || '-' || t::text, sz, ${now}
              from unnest(${logs.map((l) => l.assetKey)}::text[], ${logs.map((l) => l.partitionKey)}::text[],
                          ${logs.map((l) => l.runId)}::uuid[], ${logs.map((l) => l.stepId)}::bigint[],
                          ${logs.map((l) => l.tryNumber)}::int[], ${logs.map((l) => l.sizeBytes)}::bigint[]) as x(a, p, r, s, t, sz)
              on conflict do nothing`.execute(this.#db);
  }

  async settleObjects(id: string, now: Date): Promise<{ readonly pending: number; readonly lastError: string | null }> {
    // An object is gone once its row left the deletion queue; recorded once (the unique key), at the first look after.
    await sql`insert into erasure_deletions (request_id, kind, asset_key, partition_key, run_id, step_id, try_number, ref, size_bytes, deleted_at)
              select d.request_id, 'object', d.asset_key, d.partition_key, d.run_id, d.step_id, d.try_number, d.ref, d.size_bytes, ${now}
              from erasure_deletions d
              where d.request_id = ${id} and d.kind = 'output' and d.ref not like 'inline:%'
                and not exists (select 1 from output_object_deletions q where q.storage_ref = d.ref)
              on conflict do nothing`.execute(this.#db);
    const { rows } = await sql<{ pending: number; last_error: string | null }>`
      select count(*)::int as pending, max(q.last_error) as last_error
      from erasure_deletions d join output_object_deletions q on q.storage_ref = d.ref
      where d.request_id = ${id} and d.kind = 'output'`.execute(this.#db);
    return { pending: rows[0]?.pending ?? 0, lastError: rows[0]?.last_error ?? null };
  }

  async hooksDone(id: string): Promise<Set<string>> {
    const { rows } = await sql<{ asset_key: string }>`
      select distinct asset_key from erasure_hook_calls where request_id = ${id} and state = 'success'`.execute(this.#db);
    return new Set(rows.map((r) => r.asset_key));
  }

  async hookStarted(id: string, assetKey: string, partitionKeys: readonly string[], now: Date): Promise<number> {
    const { rows } = await sql<{ id: string }>`
      insert into erasure_hook_calls (request_id, asset_key, partition_keys, attempt, started_at, state)
      select ${id}, ${assetKey}, ${toJson([...partitionKeys])}::jsonb,
             coalesce((select max(attempt) from erasure_hook_calls where request_id = ${id} and asset_key = ${assetKey}), 0) + 1,
             ${now}, 'running'
      returning id`.execute(this.#db);
    return Number(rows[0]!.id);
  }

  async hookEnded(callId: number, outcome: { readonly error: string | null; readonly log: readonly string[] }, now: Date): Promise<void> {
    const log = outcome.log
      .slice(0, MAX_HOOK_LOG_LINES)
      .map((l) => (l.length > MAX_HOOK_LOG_LINE ? `${l.slice(0, MAX_HOOK_LOG_LINE)}…` : l));
    await sql`update erasure_hook_calls set ended_at = ${now}, state = ${outcome.error === null ? "success" : "failed"},
                error = ${outcome.error}, log = ${toJson(log)}::jsonb
              where id = ${callId}`.execute(this.#db);
  }

  async skipItems(
    id: string,
    items: readonly { readonly assetKey: string; readonly partitionKey: string; readonly reason: string }[],
  ): Promise<void> {
    if (items.length === 0) return;
    await sql`update erasure_items i set skipped_reason = t.reason
              from unnest(${items.map((i) => i.assetKey)}::text[], ${items.map((i) => i.partitionKey)}::text[],
                          ${items.map((i) => i.reason)}::text[]) as t(a, p, reason)
              where i.request_id = ${id} and i.asset_key = t.a and i.partition_key = t.p`.execute(this.#db);
  }

  async recordReplacements(id: string, now: Date): Promise<void> {
    await sql`update erasure_items i set replaced_by_event_id = ps.last_materialization_event_id,
                replaced_by_run_id = ps.last_run_id, replaced_at = coalesce(ps.materialized_at, ${now})
              from partition_status ps
              where i.request_id = ${id} and i.replaced_by_event_id is null and i.erased_at is not null
                and ps.asset_key = i.asset_key and ps.partition_key = i.partition_key and ps.status <> 'erased'
                and ps.last_materialization_event_id is not null
                and ps.last_materialization_event_id is distinct from i.event_id`.execute(this.#db);
  }

  async retry(id: string, now: Date, audit?: AuditEntry): Promise<ErasureRequestRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const current = await sql<{ state: ErasureState; backfill_id: string | null }>`
        select state, backfill_id from erasure_requests where id = ${id} for update`.execute(trx);
      const row = current.rows[0];
      if (!row) throw new InputError(`no erasure request ${id}`, { code: "ERASURE_NOT_FOUND", location: { field: "id" } });
      if (row.state !== "failed") {
        throw new InputError(`erasure request ${id} is ${row.state}: only a failed request is retried`, {
          code: "ERASURE_NOT_FAILED",
          location: { field: "id" },
        });
      }
      return withAudit(trx, audit, now, async () => {
        // Re-materialisation failed: a new backfill; otherwise the erasure goes on where it stopped.
        await sql`update erasure_requests set
                    state = ${row.backfill_id === null ? "erasing" : "rematerialising"}, backfill_id = null,
                    message = null, finished_at = null, next_attempt_at = ${now}, updated_at = ${now},
                    lease_owner = null, lease_until = null
                  where id = ${id}`.execute(trx);
        return (await requestById(trx, id))!;
      });
    });
  }
}

/** Inserts the items a request does not have yet; answers how many were new. */
async function insertItems(db: Kysely<Database>, id: string, items: readonly ErasureItemInput[]): Promise<number> {
  if (items.length === 0) return 0;
  const result = await sql`
    insert into erasure_items (request_id, asset_key, partition_key, event_id, run_id, step_id)
    select ${id}, a, p, e, r, s
    from unnest(${items.map((i) => i.assetKey)}::text[], ${items.map((i) => i.partitionKey)}::text[],
                ${items.map((i) => i.eventId)}::bigint[], ${items.map((i) => i.runId)}::uuid[],
                ${items.map((i) => i.stepId)}::bigint[]) as t(a, p, e, r, s)
    on conflict do nothing`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

async function requestById(db: Kysely<Database>, id: string): Promise<ErasureRequestRecord | undefined> {
  const { rows } = await sql<RequestRow>`select ${REQUEST_COLUMNS} from erasure_requests r where r.id = ${id}`.execute(db);
  return rows[0] ? toRequest(rows[0]) : undefined;
}

/** Items of a request by asset and partition: all of them, or the first `limit` not erased yet. */
async function itemsOf(db: Kysely<Database>, id: string, pendingLimit: number | null): Promise<ErasureItemRecord[]> {
  const { rows } = await sql<{
    asset_key: string;
    partition_key: string;
    event_id: string | null;
    run_id: string | null;
    step_id: string | null;
    erased_at: Date | null;
    replaced_by_event_id: string | null;
    replaced_by_run_id: string | null;
    replaced_at: Date | null;
    skipped_reason: string | null;
  }>`select asset_key, partition_key, event_id, run_id, step_id, erased_at, replaced_by_event_id, replaced_by_run_id,
            replaced_at, skipped_reason
     from erasure_items where request_id = ${id} ${pendingLimit === null ? sql`` : sql`and erased_at is null`}
     order by asset_key, partition_key ${pendingLimit === null ? sql`` : sql`limit ${pendingLimit}`}`.execute(db);
  return rows.map((r) => ({
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    eventId: num(r.event_id),
    runId: r.run_id,
    stepId: num(r.step_id),
    erasedAt: r.erased_at,
    replacedByEventId: num(r.replaced_by_event_id),
    replacedByRunId: r.replaced_by_run_id,
    replacedAt: r.replaced_at,
    skippedReason: r.skipped_reason,
  }));
}

/** Tries of the partitions' steps, of any run, whose logs this request has not deleted yet. */
async function logsToDelete(trx: Kysely<Database>, id: string, assetKey: string, keys: readonly string[]): Promise<ErasureTryLog[]> {
  const { rows } = await sql<{ partition_key: string; run_id: string; step_id: string; try_number: number; log_ref: string | null }>`
    select s.partition_key, t.run_id, t.step_id, t.try_number, t.log_ref
    from steps s join step_tries t on t.step_id = s.id
    where s.asset_key = ${assetKey} and s.partition_key = any(${keys}::text[])
      and not exists (select 1 from erasure_deletions d where d.request_id = ${id} and d.kind = 'log'
                      and d.ref = t.run_id::text || '/' || t.step_id::text || '-' || t.try_number::text)
    order by t.id`.execute(trx);
  return rows.map((r) => ({
    assetKey,
    partitionKey: r.partition_key,
    runId: r.run_id,
    stepId: Number(r.step_id),
    tryNumber: r.try_number,
    logRef: r.log_ref,
  }));
}

import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import { InputError, type SerializedError } from "../errors/index.js";
import type {
  BackfillCursor,
  BackfillRecord,
  BackfillSelection,
  BackfillStore,
  BackfillTransaction,
  BackfillUpdate,
  NewBackfill,
  AssetPartitionRef,
  RunProgress,
  UnsuccessfulStep,
} from "./backfill-store.js";
import type { BackfillsTable, BackfillStatus, Database, RunStatus } from "./database.js";
import { notifyIn } from "./database-handle.js";
import { toJson } from "./json.js";
import { WAKE_CHANNEL } from "./runs/channels.js";
import { insertRun } from "./runs/create-run.js";

const ACTIVE: readonly BackfillStatus[] = ["requested", "running", "canceling"];
/** Step states that will still change: the partition is being (or about to be) materialised. */
const UNFINISHED_STEP_STATES = ["pending", "scheduled", "queued", "running", "up_for_retry", "up_for_reschedule", "deferred"];

type Trx = Transaction<Database>;

/**
 * What every reconciler pass asks. The statuses are literals, not
 * parameters, so the planner can match them to the partial index
 * backfills_active_idx: with no backfill active this reads an empty index.
 */
export const ACTIVE_IDS_QUERY = sql`
  select id from backfills where status in ('requested', 'running', 'canceling') order by priority desc, created_at`;

export function initialCursor(chunks: number): BackfillCursor {
  return {
    next: 0,
    chunks,
    generation: 0,
    active: [],
    redo: [],
    done: 0,
    failed: 0,
    covered: 0,
    failedPartitions: {},
    runsCreated: 0,
    waiting: null,
    halted: null,
  };
}

/** BackfillStore in Postgres SQL through Kysely (server Postgres and PGlite). */
export class PgBackfillStore implements BackfillStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async create(backfill: NewBackfill, now: Date, audit?: AuditEntry): Promise<BackfillRecord> {
    return this.#db.transaction().execute(async (trx) =>
      withAudit(
        trx,
        audit,
        now,
        async () => {
          const row = await trx
            .insertInto("backfills")
            .values({
              status: "requested",
              selection: toJson(backfill.selection),
              partitions: toJson(backfill.partitions),
              max_concurrent_runs: backfill.maxConcurrentRuns,
              max_partitions_per_run: backfill.maxPartitionsPerRun,
              priority: backfill.priority,
              requested_count: backfill.requested,
              cursor: toJson(initialCursor(backfill.chunks)),
              tags: toJson(backfill.tags ?? {}),
              created_at: now,
              updated_at: now,
            })
            .returningAll()
            .executeTakeFirstOrThrow();
          // The reconcilers advance it at once, not at their next timer.
          await notifyIn(trx, WAKE_CHANNEL, "backfill");
          return toRecord(row);
        },
        (b: BackfillRecord) => ({ backfillId: b.id }),
      ),
    );
  }

  async get(id: string): Promise<BackfillRecord | undefined> {
    if (!isUuid(id)) return undefined;
    const row = await this.#db.selectFrom("backfills").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toRecord(row);
  }

  async list(options: { limit?: number; status?: BackfillStatus } = {}): Promise<BackfillRecord[]> {
    let q = this.#db
      .selectFrom("backfills")
      .selectAll()
      .orderBy("created_at", "desc")
      .orderBy("id")
      .limit(options.limit ?? 50);
    if (options.status) q = q.where("status", "=", options.status);
    return (await q.execute()).map(toRecord);
  }

  async activeIds(limit = 100): Promise<string[]> {
    const { rows } = await sql<{ id: string }>`${ACTIVE_IDS_QUERY} limit ${limit}::int`.execute(this.#db);
    return rows.map((r) => r.id);
  }

  async advance<T>(id: string, step: (tx: BackfillTransaction) => Promise<T>): Promise<T | undefined> {
    if (!isUuid(id)) return undefined;
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom("backfills")
        .selectAll()
        .where("id", "=", id)
        .where("status", "in", ACTIVE)
        .forNoKeyUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (!row) return undefined;
      return step(new PgBackfillTransaction(trx, toRecord(row)));
    });
  }

  async requestCancel(id: string, now: Date, audit?: AuditEntry): Promise<BackfillRecord> {
    return this.#db.transaction().execute(async (trx) =>
      withAudit(trx, audit, now, async () => {
        const record = await lockedOrThrow(trx, id);
        if (record.status === "canceling" || record.status === "canceled") return record;
        if (record.status === "completed" || record.status === "failed") {
          throw new InputError(
            `backfill ${id} has already ${record.status === "completed" ? "completed" : "ended (failed)"}: there is nothing to cancel`,
            {
              code: "BACKFILL_NOT_ACTIVE",
            },
          );
        }
        const active = record.cursor.active.map((a) => a.runId);
        if (active.length > 0) await cancelRunsIn(trx, active, now);
        const status: BackfillStatus = active.length > 0 ? "canceling" : "canceled";
        const row = await trx
          .updateTable("backfills")
          .set({
            status,
            cursor: toJson({ ...record.cursor, waiting: null }),
            in_progress_count: active.length > 0 ? record.inProgress : 0,
            updated_at: now,
            ...(status === "canceled" ? { canceled_at: now } : {}),
          })
          .where("id", "=", id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await notifyIn(trx, WAKE_CHANNEL, "backfill");
        return toRecord(row);
      }),
    );
  }

  async resume(id: string, now: Date, audit?: AuditEntry): Promise<BackfillRecord> {
    return this.#db.transaction().execute(async (trx) =>
      withAudit(trx, audit, now, async () => {
        const record = await lockedOrThrow(trx, id);
        if (record.status !== "canceled") {
          const why =
            record.status === "canceling"
              ? "it is still being canceled (its runs are stopping); resume it once it is canceled"
              : `only a canceled backfill can be resumed, and it is ${record.status}` +
                (record.status === "failed" ? "; re-run its failed partitions instead (`tributary backfill retry-failed`)" : "");
          throw new InputError(`backfill ${id}: ${why}`, { code: "BACKFILL_NOT_CANCELED" });
        }
        const cursor: BackfillCursor = { ...record.cursor, generation: record.cursor.generation + 1, waiting: null };
        const row = await trx
          .updateTable("backfills")
          .set({ status: "requested", cursor: toJson(cursor), canceled_at: null, updated_at: now })
          .where("id", "=", id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await notifyIn(trx, WAKE_CHANNEL, "backfill");
        return toRecord(row);
      }),
    );
  }
}

class PgBackfillTransaction implements BackfillTransaction {
  private serialized = false;

  constructor(
    private readonly trx: Trx,
    readonly backfill: BackfillRecord,
  ) {}

  /**
   * A backfill counts partitions: the steps of its runs that materialise one. A check's step and the mapped steps a
   * partition fans out into (the run's own counters include them) are part of that partition's work, not more of it.
   */
  async runProgress(runIds: readonly string[]): Promise<RunProgress[]> {
    if (runIds.length === 0) return [];
    const { rows } = await sql<{ id: string; status: RunStatus; total: number; done: number; failed: number }>`
      select r.id, r.status,
             count(s.id)::int as total,
             count(s.id) filter (where s.state <> all(${UNFINISHED_STEP_STATES}::text[]))::int as done,
             count(s.id) filter (where s.state in ('failed', 'upstream_failed', 'removed')
                                    or (s.state = 'skipped' and s.skip_reason = 'run canceled'))::int as failed
      from runs r
      left join steps s on s.run_id = r.id and s.check_name is null and s.map_index < 0
      where r.id = any(${[...runIds]}::uuid[])
      group by r.id, r.status`.execute(this.trx);
    return rows.map((r) => ({ runId: r.id, status: r.status, stepsTotal: r.total, stepsDone: r.done, stepsFailed: r.failed }));
  }

  async unsuccessfulSteps(runIds: readonly string[]): Promise<UnsuccessfulStep[]> {
    if (runIds.length === 0) return [];
    const rows = await this.trx
      .selectFrom("steps")
      .select(["run_id", "asset_key", "partition_key", "state", "skip_reason"])
      .where("run_id", "in", [...runIds])
      .where("state", "<>", "success")
      .where("check_name", "is", null)
      .where("map_index", "<", 0)
      .execute();
    return rows.map((r) => ({
      runId: r.run_id,
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      state: r.state,
      skipReason: r.skip_reason,
    }));
  }

  async busyPartitions(partitions: readonly AssetPartitionRef[]): Promise<AssetPartitionRef[]> {
    if (!this.serialized) {
      // Checking and then creating a run must not interleave with another
      // backfill doing the same for the same partitions.
      await sql`select pg_advisory_xact_lock(hashtext('tributary.backfill.runs'))`.execute(this.trx);
      this.serialized = true;
    }
    if (partitions.length === 0) return [];
    const { rows } = await sql<{ asset_key: string; partition_key: string }>`
      select distinct x.asset_key, x.partition_key
      from jsonb_to_recordset(${toJson(pairs(partitions))}::jsonb) as x(asset_key text, partition_key text)
      join steps s on s.asset_key = x.asset_key and s.partition_key = x.partition_key
      join runs r on r.id = s.run_id
      where s.state = any(${UNFINISHED_STEP_STATES}::text[]) and r.status in ('queued', 'running')`.execute(this.trx);
    return rows.map((r) => ({ assetKey: r.asset_key, partitionKey: r.partition_key }));
  }

  async materializations(partitions: readonly AssetPartitionRef[]): Promise<(AssetPartitionRef & { materializedAt: Date | null })[]> {
    if (partitions.length === 0) return [];
    const { rows } = await sql<{ asset_key: string; partition_key: string; materialized_at: Date | null }>`
      select ps.asset_key, ps.partition_key, ps.materialized_at
      from jsonb_to_recordset(${toJson(pairs(partitions))}::jsonb) as x(asset_key text, partition_key text)
      join partition_status ps on ps.asset_key = x.asset_key and ps.partition_key = x.partition_key
      where ps.last_materialization_event_id is not null`.execute(this.trx);
    return rows.map((r) => ({ assetKey: r.asset_key, partitionKey: r.partition_key, materializedAt: r.materialized_at }));
  }

  createRun(run: Parameters<BackfillTransaction["createRun"]>[0], now: Date): Promise<{ runId: string; created: boolean }> {
    return insertRun(this.trx, run, now);
  }

  async cancelRuns(runIds: readonly string[], now: Date): Promise<void> {
    await cancelRunsIn(this.trx, runIds, now);
  }

  async save(update: BackfillUpdate, now: Date): Promise<void> {
    const ended = update.status === "completed" || update.status === "failed";
    await this.trx
      .updateTable("backfills")
      .set({
        status: update.status,
        cursor: toJson(update.cursor),
        done_count: update.done,
        failed_count: update.failed,
        in_progress_count: update.inProgress,
        updated_at: now,
        ...(update.error !== undefined ? { error: update.error === null ? null : toJson(update.error) } : {}),
        ...(ended ? { completed_at: now } : {}),
        ...(update.status === "canceled" ? { canceled_at: now } : {}),
      })
      .where("id", "=", this.backfill.id)
      .execute();
  }
}

async function lockedOrThrow(trx: Trx, id: string): Promise<BackfillRecord> {
  const row = isUuid(id)
    ? await trx.selectFrom("backfills").selectAll().where("id", "=", id).forNoKeyUpdate().executeTakeFirst()
    : undefined;
  if (!row)
    throw new InputError(`no backfill has the id "${id}"; list backfills with \`tributary backfills\``, { code: "BACKFILL_NOT_FOUND" });
  return toRecord(row);
}

async function cancelRunsIn(trx: Trx, runIds: readonly string[], now: Date): Promise<void> {
  if (runIds.length === 0) return;
  const updated = await trx
    .updateTable("runs")
    .set({ cancel_requested_at: now, updated_at: now })
    .where("id", "in", [...runIds])
    .where("cancel_requested_at", "is", null)
    .where("status", "in", ["queued", "running"] satisfies RunStatus[])
    .returning("id")
    .execute();
  if (updated.length > 0) await notifyIn(trx, WAKE_CHANNEL, "cancel");
}

function pairs(partitions: readonly AssetPartitionRef[]): { asset_key: string; partition_key: string }[] {
  return partitions.map((p) => ({ asset_key: p.assetKey, partition_key: p.partitionKey }));
}

function toRecord(r: Selectable<BackfillsTable>): BackfillRecord {
  return {
    id: r.id,
    status: r.status,
    selection: r.selection as unknown as BackfillSelection,
    partitions: r.partitions,
    maxConcurrentRuns: r.max_concurrent_runs,
    maxPartitionsPerRun: r.max_partitions_per_run,
    priority: r.priority,
    requested: Number(r.requested_count),
    done: Number(r.done_count),
    failed: Number(r.failed_count),
    inProgress: Number(r.in_progress_count),
    cursor: { ...initialCursor(0), ...(r.cursor as unknown as BackfillCursor | null) },
    tags: r.tags,
    error: r.error as unknown as SerializedError | null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    canceledAt: r.canceled_at,
    completedAt: r.completed_at,
  };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

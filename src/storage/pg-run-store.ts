import { sql, type Kysely, type Transaction } from "kysely";
import { InputError, type SerializedError } from "../errors/index.js";
import { evaluateTriggerRule, retryDelayMs, serializePlan, shouldRetry } from "../planner/index.js";
import type { RetryPolicySpec, TriggerRule } from "../sdk/index.js";
import type { Database, PartitionState, RunStatus, StepState } from "./database.js";
import { notifyIn } from "./database-handle.js";
import { toJson } from "./json.js";
import type {
  ClaimedStep,
  ClaimOptions,
  CompletionSummary,
  FiredTrigger,
  FollowUp,
  HousekeepingOptions,
  HousekeepingResult,
  LineageInput,
  ClearedMappedStep,
  MappedStepRef,
  NewRun,
  GatheredItem,
  OutputRecord,
  RunDetail,
  RunStore,
  RunSummary,
  StepCompletion,
  StepRecord,
  StepStart,
  StepTryRecord,
} from "./run-store.js";

/** Channel the reconcilers listen on: a step became runnable, a run or step finished, a run was canceled. */
export const WAKE_CHANNEL = "tributary_wake";

const ACTIVE: readonly StepState[] = ["queued", "running"];
/** Join condition, aliases p and c: c is a mapped step of p (current or, past p.map_count, removed). */
const MAPPED_STEP_OF = sql`c.run_id = p.run_id and c.asset_key = p.asset_key and c.partition_key = p.partition_key
  and c.check_name is null and c.map_index >= 0`;
/** States of a step that has not ended and is not merely waiting for its upstreams. */
const UNFINISHED: readonly StepState[] = ["scheduled", "queued", "running", "up_for_retry", "up_for_reschedule", "deferred"];
/** Everything of a run but its plan, which can be large. */
const SUMMARY_COLUMNS = [
  "id", "status", "origin", "snapshot_version", "job_name", "priority", "tags", "steps_total", "steps_done", "steps_failed",
  "steps_active", "created_at", "started_at", "ended_at", "cancel_requested_at", "backfill_id", "plan_version",
] as const;
const DEFAULT_POOL = "default_pool";
const HOUSEKEEPING_BATCH = 1000;

type Trx = Transaction<Database>;
type Terminal = "success" | "failed" | "skipped" | "upstream_failed";

interface LockedStep {
  id: number;
  run_id: string;
  state: StepState;
  try_number: number;
  tries_before: number;
  retry_policy: RetryPolicySpec | null;
  pool: string;
  pool_slots: number;
  asset_key: string;
  partition_key: string;
  map_index: number;
  check_name: string | null;
  cancel_requested: boolean;
}

interface StepChange {
  id: number;
  run_id: string;
  state: StepState;
  /** Whether the step held an executor, a pool slot and an active-step count until now. */
  wasActive: boolean;
  pool: string;
  pool_slots: number;
}

/**
 * RunStore in Postgres SQL through Kysely (server Postgres and PGlite).
 * Batches travel as one JSON parameter (`jsonb_to_recordset`), so a
 * transaction costs a handful of statements whatever the batch size.
 */
export class PgRunStore implements RunStore {
  readonly #db: Kysely<Database>;
  /** Fractional share of claims owed to the longest-waiting steps (see claimRunnable). */
  #agingCredit = 0;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  // ── runs ────────────────────────────────────────────────────────────────

  async createRun(run: NewRun, now: Date): Promise<{ runId: string; created: boolean }> {
    return this.#db.transaction().execute((trx) => insertRun(trx, run, now));
  }

  async createRuns(runs: readonly NewRun[], now: Date): Promise<{ runId: string; created: boolean }[]> {
    if (runs.length === 0) return [];
    return this.#db.transaction().execute(async (trx) => {
      const created: { runId: string; created: boolean }[] = [];
      for (const run of runs) created.push(await insertRun(trx, run, now));
      return created;
    });
  }

  async requestCancel(runId: string, now: Date): Promise<RunSummary> {
    if (!isUuid(runId)) throw runNotFound(runId);
    const row = await this.#db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable("runs")
        .set({ cancel_requested_at: now, updated_at: now })
        .where("id", "=", runId)
        .where("cancel_requested_at", "is", null)
        .where("status", "in", ["queued", "running"])
        .returning("id")
        .executeTakeFirst();
      if (updated) await notifyIn(trx, WAKE_CHANNEL, "cancel");
      return trx.selectFrom("runs").select(SUMMARY_COLUMNS).where("id", "=", runId).executeTakeFirst();
    });
    if (!row) throw runNotFound(runId);
    return toRunSummary(row);
  }

  async clearMappedStep(target: MappedStepRef, now: Date): Promise<ClearedMappedStep> {
    const { runId, assetKey, partitionKey, mapIndex } = target;
    if (!Number.isSafeInteger(mapIndex) || mapIndex < 0) {
      throw new InputError(`map index must be a whole number from 0, got ${String(mapIndex)}`, { code: "MAP_INDEX_INVALID", location: { field: "mapIndex" } });
    }
    if (!isUuid(runId)) throw runNotFound(runId);
    const where = `asset "${assetKey}"${partitionKey ? ` partition "${partitionKey}"` : ""}`;
    return this.#db.transaction().execute(async (trx) => {
      const run = await trx.selectFrom("runs").select(["id"]).where("id", "=", runId).executeTakeFirst();
      if (!run) throw runNotFound(runId);
      const { rows: found } = await sql<{ id: number; map_index: number; map_count: number | null }>`
        select id, map_index, map_count from steps
        where run_id = ${runId}::uuid and asset_key = ${assetKey} and partition_key = ${partitionKey} and check_name is null
          and map_index in (-1, ${mapIndex}::int)`.execute(trx);
      const parent = found.find((f) => f.map_index === -1);
      const step = found.find((f) => f.map_index === mapIndex);
      if (!step) {
        const why = !parent
          ? `run ${runId} has no step of ${where}`
          : parent.map_count === null
            ? `the step of ${where} in run ${runId} has no mapped steps: it has not fanned out`
            : `the fan-out of ${where} in run ${runId} has ${parent.map_count} item(s): map indices 0 to ${parent.map_count - 1}`;
        throw new InputError(`no mapped step ${mapIndex}: ${why}`, { code: "STEP_NOT_FOUND", location: { assetKey, partitionKey, field: "mapIndex" } });
      }
      // The step and every step after it in the run (its expanded step, then theirs), locked in id order.
      const { rows: reach } = await sql<{
        id: number; state: StepState; asset_key: string; partition_key: string; map_index: number; check_name: string | null; map_count: number | null;
      }>`
        with recursive down(id) as (
          select ${step.id}::bigint
          union
          select d.step_id from step_deps d join down on d.upstream_step_id = down.id
        )
        select s.id, s.state, s.asset_key, s.partition_key, s.map_index, s.check_name, s.map_count
        from steps s where s.id in (select id from down) order by s.id for no key update`.execute(trx);
      const steps = reach.map((r) => ({ ...r, id: Number(r.id) }));
      const describe = (r: (typeof steps)[number]) =>
        `${r.check_name ? `check "${r.check_name}" of ` : ""}asset "${r.asset_key}"${r.partition_key ? ` partition "${r.partition_key}"` : ""}` +
        `${r.map_index >= 0 ? ` mapped step ${r.map_index}` : ""}`;
      const self = steps.find((r) => r.id === Number(step.id))!;
      if (self.state === "removed") {
        throw new InputError(`${describe(self)} was removed from run ${runId}: its fan-out has fewer items now`, { code: "STEP_REMOVED", location: { assetKey, partitionKey } });
      }
      for (const r of steps) {
        if (UNFINISHED.includes(r.state)) {
          throw new InputError(
            `${describe(r)} is ${r.state} in run ${runId}: wait for it to end (or cancel the run) before clearing ${r.id === self.id ? "it" : `${describe(self)}, which it follows`}`,
            { code: "STEP_ACTIVE", location: { assetKey: r.asset_key, partitionKey: r.partition_key } },
          );
        }
      }
      // Other expanded steps after it fan out again: their mapped steps must all have ended.
      const refanned = steps.filter((r) => r.map_count !== null && r.id !== Number(parent!.id)).map((r) => r.id);
      if (refanned.length > 0) {
        const { rows: busy } = await sql<{ asset_key: string; partition_key: string; map_index: number; state: StepState }>`
          select c.asset_key, c.partition_key, c.map_index, c.state from steps p
          join steps c on ${MAPPED_STEP_OF}
          where p.id = any(${refanned}::bigint[]) and c.state = any(${UNFINISHED}::text[]) limit 1`.execute(trx);
        const b = busy[0];
        if (b) {
          throw new InputError(`asset "${b.asset_key}"${b.partition_key ? ` partition "${b.partition_key}"` : ""} mapped step ${b.map_index} is ${b.state} in run ${runId}: wait for it to end before clearing ${describe(self)}`, {
            code: "STEP_ACTIVE",
            location: { assetKey: b.asset_key, partitionKey: b.partition_key },
          });
        }
      }
      // A later run that materialised (or is materialising) one of these partitions superseded this run there.
      const partitions = steps.filter((r) => r.map_index === -1 && r.check_name === null).map((r) => ({ asset_key: r.asset_key, partition_key: r.partition_key, step_id: r.id }));
      const { rows: newer } = await sql<{ run_id: string; asset_key: string; partition_key: string; state: StepState; created_at: Date }>`
        select s2.run_id, s2.asset_key, s2.partition_key, s2.state, r2.created_at
        from jsonb_to_recordset(${toJson(partitions)}::jsonb) as x(asset_key text, partition_key text, step_id bigint)
        join steps s2 on s2.asset_key = x.asset_key and s2.partition_key = x.partition_key and s2.map_index = -1 and s2.check_name is null
                     and s2.id > x.step_id and s2.run_id <> ${runId}::uuid
        join runs r2 on r2.id = s2.run_id
        where s2.state not in ('skipped', 'removed', 'upstream_failed')
        order by s2.id desc limit 1`.execute(trx);
      const n = newer[0];
      if (n) {
        const what = n.state === "success" ? "materialised it" : n.state === "failed" ? "tried to materialise it" : "is materialising it";
        throw new InputError(
          `run ${runId} was superseded for asset "${n.asset_key}"${n.partition_key ? ` partition "${n.partition_key}"` : ""}: ` +
            `run ${n.run_id} (created ${n.created_at.toISOString()}) ${what} since. Clearing ${describe(self)} inside the old run ` +
            `would overwrite newer data; clear the partition instead (\`tributary clear ${n.asset_key}${n.partition_key ? ` --partition ${n.partition_key}` : ""}\`)`,
          { code: "CLEAR_SUPERSEDED", location: { assetKey: n.asset_key, partitionKey: n.partition_key } },
        );
      }
      const done = steps.filter((r) => isTerminalState(r.state)).length;
      const failed = steps.filter((r) => r.state === "failed" || r.state === "upstream_failed").length;
      await sql`
        update steps set state = case when id = ${self.id}::bigint then 'scheduled' else 'pending' end,
                         scheduled_at = case when id = ${self.id}::bigint then ${now}::timestamptz else scheduled_at end,
                         error = null, skip_reason = null, ended_at = null, next_retry_at = null, heartbeat_at = null,
                         updated_at = ${now},
                         -- Its expanded step only gathers again (no try of its own); the others run again, with a
                         -- fresh retry budget, and an expanded step among them fans out again.
                         tries_before = case when id = ${Number(parent!.id)}::bigint then tries_before else try_number end,
                         started_at = case when id = ${Number(parent!.id)}::bigint then started_at end,
                         worker_id = case when id = ${Number(parent!.id)}::bigint then worker_id end,
                         map_count = case when id = ${Number(parent!.id)}::bigint then map_count end,
                         map_open = case when id = ${Number(parent!.id)}::bigint then map_open end
        where id = any(${steps.map((r) => r.id)}::bigint[]) and state <> 'pending'`.execute(trx);
      // The expanded step gathers once its mapped steps that have not ended (the cleared one among them) end. Counted
      // afresh: once the expanded step was judged (a mapped step failed), its siblings ending counted nothing down.
      await sql`
        update steps p set map_open = (select count(*)::int from steps c where ${MAPPED_STEP_OF} and c.map_index < p.map_count
                                                                  and c.state = any(${UNFINISHED}::text[]))
        where p.id = ${Number(parent!.id)}::bigint`.execute(trx);
      await lockRuns(trx, [runId]);
      const updated = await sql<Parameters<typeof toRunSummary>[0]>`
        update runs set steps_done = steps_done - ${done}::int, steps_failed = steps_failed - ${failed}::int, status = 'running',
                        ended_at = null, cancel_requested_at = null, plan_version = plan_version + 1, updated_at = ${now}
        where id = ${runId}::uuid
        returning ${sql.join(SUMMARY_COLUMNS.map((c) => sql.ref(c)))}`.execute(trx);
      await notifyIn(trx, WAKE_CHANNEL, "clear");
      return {
        run: toRunSummary(updated.rows[0]!),
        stepId: self.id,
        cleared: [self, ...steps.filter((r) => r.id !== self.id)].map((r) => ({
          stepId: r.id, assetKey: r.asset_key, partitionKey: r.partition_key, mapIndex: r.map_index, checkName: r.check_name,
        })),
      };
    });
  }

  async getRun(runId: string): Promise<RunDetail | undefined> {
    if (!isUuid(runId)) return undefined;
    const run = await this.#db.selectFrom("runs").selectAll().where("id", "=", runId).executeTakeFirst();
    if (!run) return undefined;
    const [steps, deps, tries] = await Promise.all([
      this.#db.selectFrom("steps").selectAll().where("run_id", "=", runId).orderBy("id").execute(),
      this.#db
        .selectFrom("step_deps")
        .innerJoin("steps", "steps.id", "step_deps.step_id")
        .select(["step_deps.step_id", "step_deps.upstream_step_id"])
        .where("steps.run_id", "=", runId)
        .execute(),
      this.#db.selectFrom("step_tries").selectAll().where("run_id", "=", runId).orderBy("try_number").execute(),
    ]);
    const upstream = new Map<number, number[]>();
    for (const d of deps) upstream.set(d.step_id, [...(upstream.get(d.step_id) ?? []), d.upstream_step_id]);
    const triesByStep = new Map<number, StepTryRecord[]>();
    for (const t of tries) {
      const list = triesByStep.get(t.step_id) ?? [];
      list.push({
        tryNumber: t.try_number,
        state: t.state,
        workerId: t.worker_id,
        hostname: t.hostname,
        pid: t.pid,
        queuedAt: t.queued_at,
        startedAt: t.started_at,
        endedAt: t.ended_at,
        durationMs: t.duration_ms,
        error: t.error,
        logRef: t.log_ref,
      });
      triesByStep.set(t.step_id, list);
    }
    const stepRecords: StepRecord[] = steps.map((s) => ({
      id: s.id,
      runId: s.run_id,
      assetKey: s.asset_key,
      partitionKey: s.partition_key,
      mapIndex: s.map_index,
      checkName: s.check_name,
      mapLabel: s.map_label,
      mapCount: s.map_count,
      state: s.state,
      tryNumber: s.try_number,
      maxTries: s.max_tries + s.tries_before,
      pool: s.pool,
      priority: s.priority,
      scheduledAt: s.scheduled_at,
      queuedAt: s.queued_at,
      startedAt: s.started_at,
      endedAt: s.ended_at,
      nextRetryAt: s.next_retry_at,
      workerId: s.worker_id,
      skipReason: s.skip_reason,
      error: s.error,
      upstream: (upstream.get(s.id) ?? []).sort((a, b) => a - b),
      tries: triesByStep.get(s.id) ?? [],
    }));
    return { ...toRunSummary(run), plan: run.plan, steps: stepRecords };
  }

  async getRunSummary(runId: string): Promise<RunSummary | undefined> {
    if (!isUuid(runId)) return undefined;
    const row = await this.#db.selectFrom("runs").select(SUMMARY_COLUMNS).where("id", "=", runId).executeTakeFirst();
    return row && toRunSummary(row);
  }

  async listRuns(options: { limit?: number; status?: RunStatus; before?: Date; backfillId?: string } = {}): Promise<RunSummary[]> {
    let q = this.#db.selectFrom("runs").select(SUMMARY_COLUMNS).orderBy("created_at", "desc").orderBy("id").limit(options.limit ?? 50);
    if (options.status) q = q.where("status", "=", options.status);
    if (options.backfillId !== undefined) q = isUuid(options.backfillId) ? q.where("backfill_id", "=", options.backfillId) : q.where(sql<boolean>`false`);
    if (options.before) q = q.where("created_at", "<", options.before);
    return (await q.execute()).map(toRunSummary);
  }

  // ── dispatch ────────────────────────────────────────────────────────────

  async claimRunnable(options: ClaimOptions): Promise<ClaimedStep[]> {
    const kinds = Object.entries(options.capacity).filter(([, n]) => n > 0);
    if (kinds.length === 0 || options.limit <= 0) return [];
    const capacity = new Map(kinds);
    const totalCapacity = kinds.reduce((n, [, c]) => n + c, 0);
    const limit = Math.min(options.limit, totalCapacity);
    // The aging share accrues across claims: rounding it up per claim would
    // give a one-slot claim to the oldest step every time, i.e. pure FIFO,
    // and priorities would never apply. Small claims take the oldest step
    // once their share adds up to one.
    const credit = this.#agingCredit + limit * (options.agingShare ?? 0.1) + 1e-9;
    const agingLimit = Math.floor(credit);
    const kindNames = kinds.map(([k]) => k);
    const now = options.now;
    return this.#db.transaction().execute(async (trx) => {
      const claimed = await claimIn(trx, { kindNames, capacity, limit, agingLimit, now, defaultPoolSlots: options.defaultPoolSlots ?? 16 });
      // Only claims that found work earn (or spend) the aging share.
      if (claimed.foundWork) this.#agingCredit = credit - agingLimit;
      return claimed.steps;
    });
  }

  async markStarted(starts: readonly StepStart[], now: Date): Promise<void> {
    if (starts.length === 0) return;
    const input = toJson(
      starts.map((s) => ({
        step_id: s.stepId,
        try_number: s.tryNumber,
        worker_id: s.workerId,
        hostname: s.hostname,
        pid: s.pid,
        started_at: s.startedAt.toISOString(),
      })),
    );
    await sql`
      with x as (
        select * from jsonb_to_recordset(${input}::jsonb)
          as x(step_id bigint, try_number int, worker_id text, hostname text, pid int, started_at timestamptz)
      ), s as (
        update steps set state = 'running', started_at = x.started_at, heartbeat_at = ${now}, worker_id = x.worker_id,
                         updated_at = ${now}
        from x where steps.id = x.step_id and steps.try_number = x.try_number and steps.state = 'queued'
        returning steps.id
      )
      update step_tries t set state = 'running', started_at = x.started_at, heartbeat_at = ${now},
                              worker_id = x.worker_id, hostname = x.hostname, pid = x.pid
      from x where t.step_id = x.step_id and t.try_number = x.try_number and t.state = 'queued'`.execute(this.#db);
  }

  async heartbeat(steps: readonly { stepId: number; tryNumber: number }[], now: Date): Promise<void> {
    if (steps.length === 0) return;
    const input = toJson(steps.map((s) => ({ step_id: s.stepId, try_number: s.tryNumber })));
    await sql`
      update steps set heartbeat_at = ${now}
      from jsonb_to_recordset(${input}::jsonb) as x(step_id bigint, try_number int)
      where steps.id = x.step_id and steps.try_number = x.try_number and steps.state = 'running'`.execute(this.#db);
  }

  // ── completion ──────────────────────────────────────────────────────────

  async completeSteps(
    completions: readonly StepCompletion[],
    now: Date,
    random: () => number = Math.random,
    followUp?: FollowUp,
  ): Promise<CompletionSummary> {
    if (completions.length === 0) return { applied: 0, ignored: [], scheduled: 0, finishedRuns: [], claimed: [] };
    return this.#db.transaction().execute((trx) => completeIn(trx, completions, now, random, followUp));
  }

  /**
   * completeSteps inside the caller's transaction on this database: the transactional executor records a
   * step's completion in the transaction that holds the step's own writes, so both commit or neither does.
   */
  completeStepsWithin(trx: Transaction<Database>, completions: readonly StepCompletion[], now: Date): Promise<CompletionSummary> {
    return completeStepsIn(trx, completions, now);
  }

  // ── housekeeping ────────────────────────────────────────────────────────

  async housekeeping(options: HousekeepingOptions): Promise<HousekeepingResult> {
    const now = options.now;
    const random = options.random ?? Math.random;
    // Each chore commits on its own. One transaction for all of them would
    // hold steps, pools and runs from one chore while waiting for locks in
    // the next, and deadlock with claims and completions that take the same
    // rows in the opposite order.
    const chore = <T>(fn: (trx: Trx) => Promise<T>, changed: (result: T) => boolean): Promise<T> =>
      this.#db.transaction().execute(async (trx) => {
        const result = await fn(trx);
        if (changed(result)) await notifyIn(trx, WAKE_CHANNEL, "housekeeping");
        return result;
      });

    // Retries whose delay has passed become runnable again.
    const retriesDue = await chore(
      async (trx) =>
        (
          await sql<{ id: number }>`
            update steps set state = 'scheduled', scheduled_at = ${now}, next_retry_at = null, updated_at = ${now}
            where id in (select id from steps where state in ('up_for_retry', 'up_for_reschedule') and next_retry_at <= ${now}
                         order by next_retry_at limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked)
            returning id`.execute(trx)
        ).rows.length,
      (n) => n > 0,
    );

    // Zombies: running steps nobody has heard from. Their try fails (retryable).
    const zombies = await chore(
      async (trx) => {
        const zombieBefore = new Date(now.getTime() - options.zombieAfterMs);
        const { rows } = await sql<{ id: number; try_number: number; worker_id: string | null; heartbeat_at: Date | null }>`
          select id, try_number, worker_id, heartbeat_at from steps
          where state = 'running' and coalesce(heartbeat_at, started_at, queued_at) < ${zombieBefore}
          order by id limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked`.execute(trx);
        if (rows.length > 0) {
          await completeIn(
            trx,
            rows.map(
              (z): StepCompletion => ({
                stepId: Number(z.id),
                tryNumber: z.try_number,
                startedAt: null,
                endedAt: now,
                workerId: z.worker_id,
                logRef: null,
                outcome: "failed",
                retryable: true,
                error: {
                  name: "ZombieStep",
                  code: "STEP_ZOMBIE",
                  message:
                    `no heartbeat from worker ${z.worker_id ?? "(unknown)"} for more than ${Math.round(options.zombieAfterMs / 1000)} s ` +
                    `(last at ${z.heartbeat_at?.toISOString() ?? "never"}): the worker process or its host is presumed dead`,
                },
              }),
            ),
            now,
            random,
          );
        }
        return rows.length;
      },
      () => false, // completeIn notifies
    );

    // Handed out but never started (the executor lost it): hand it out again;
    // such a try does not count against the retry policy.
    const requeued = await chore(
      async (trx) => {
        const queuedBefore = new Date(now.getTime() - options.queuedTimeoutMs);
        const stuck = await sql<{ id: number; run_id: string; try_number: number; pool: string; pool_slots: number }>`
          update steps set state = 'scheduled', scheduled_at = ${now}, tries_before = tries_before + 1, updated_at = ${now}
          where id in (select id from steps where state = 'queued' and queued_at < ${queuedBefore}
                       order by id limit ${HOUSEKEEPING_BATCH}::int for no key update skip locked)
          returning id, run_id, try_number, pool, pool_slots`.execute(trx);
        if (stuck.rows.length > 0) {
          const err: SerializedError = {
            name: "QueuedTimeout",
            code: "STEP_QUEUED_TIMEOUT",
            message: `not started within ${Math.round(options.queuedTimeoutMs / 1000)} s of being handed out; handed out again`,
          };
          await sql`
            update step_tries t set state = 'failed', ended_at = ${now}, error = ${toJson(err)}::jsonb
            from jsonb_to_recordset(${toJson(stuck.rows.map((r) => ({ step_id: r.id, try_number: r.try_number })))}::jsonb)
              as x(step_id bigint, try_number int)
            where t.step_id = x.step_id and t.try_number = x.try_number`.execute(trx);
          await adjustPools(trx, stuck.rows.map((r) => ({ pool: r.pool, slots: r.pool_slots })), -1);
          await adjustRunActive(trx, stuck.rows.map((r) => r.run_id), -1, now);
        }
        return stuck.rows.length;
      },
      (n) => n > 0,
    );

    // Runs waiting for their job's maxActiveRuns.
    const runsStarted = await chore(
      async (trx) => {
        const queuedRuns = await sql<{ id: string }>`
          select id from runs where status = 'queued' and cancel_requested_at is null
          order by priority desc, created_at limit 100 for no key update skip locked`.execute(trx);
        let started = 0;
        for (const r of queuedRuns.rows) if (await startRun(trx, r.id, now)) started++;
        return started;
      },
      (n) => n > 0,
    );

    // Cancellation: unstarted steps are skipped, active ones are aborted by
    // their executor. Steps are locked before their runs (in id order), as
    // completions do; doing it twice at once is harmless.
    const { runsCanceled, toAbort } = await chore(
      async (trx) => {
        const canceling = await sql<{ id: string }>`
          select id from runs where cancel_requested_at is not null and status in ('queued', 'running')
          order by id limit 100`.execute(trx);
        const toAbort: { stepId: number; executor: string }[] = [];
        if (canceling.rows.length === 0) return { runsCanceled: 0, toAbort };
        const runIds = canceling.rows.map((r) => r.id);
        const { rows: deferred } = await sql<{ id: string }>`
          select id from steps where run_id = any(${runIds}::uuid[]) and state = 'deferred' order by id for no key update`.execute(trx);
        await releaseDeferredPoolSlotsIn(trx, deferred.map((r) => Number(r.id)));
        const skipped = await sql<{ run_id: string; n: number }>`
          with locked as (
            select id from steps
            where run_id = any(${runIds}::uuid[]) and state in ('pending', 'scheduled', 'up_for_retry', 'up_for_reschedule', 'deferred')
            order by id for no key update
          ), s as (
            update steps set state = 'skipped', skip_reason = 'run canceled', ended_at = ${now}, next_retry_at = null,
                             updated_at = ${now}
            where id in (select id from locked)
              and state in ('pending', 'scheduled', 'up_for_retry', 'up_for_reschedule', 'deferred')
            returning run_id
          ) select run_id, count(*)::int as n from s group by run_id`.execute(trx);
        await lockRuns(trx, runIds);
        for (const s of skipped.rows) {
          await trx
            .updateTable("runs")
            .set((eb) => ({ steps_done: eb("steps_done", "+", s.n), updated_at: now }))
            .where("id", "=", s.run_id)
            .execute();
        }
        const active = await sql<{ id: number; executor: string }>`
          select id, executor from steps where run_id = any(${runIds}::uuid[]) and state in ('queued', 'running')`.execute(trx);
        for (const a of active.rows) toAbort.push({ stepId: Number(a.id), executor: a.executor });
        const done = await sql<{ id: string }>`
          update runs set status = 'canceled', ended_at = ${now}, updated_at = ${now}
          where id = any(${runIds}::uuid[]) and status in ('queued', 'running') and steps_active = 0
            and not exists (select 1 from steps where steps.run_id = runs.id and steps.state in ('queued', 'running'))
          returning id`.execute(trx);
        return { runsCanceled: done.rows.length, toAbort };
      },
      (r) => r.runsCanceled > 0,
    );

    // Waits nobody needs any more (their step was canceled or cleared meanwhile): stop checking them. Triggers are
    // locked before steps are read, as the trigger store does, and steps are only read.
    await chore(
      async (trx) =>
        (
          await sql`
            update triggers set status = 'canceled', ended_at = ${now}, lease_owner = null, lease_expires_at = null,
                                updated_at = ${now}
            where id in (select t.id from triggers t join steps s on s.id = t.step_id
                         where t.status = 'waiting' and s.state <> 'deferred'
                         order by t.id limit ${HOUSEKEEPING_BATCH}::int for no key update of t skip locked)`.execute(trx)
        ).numAffectedRows,
      () => false,
    );

    return { retriesDue, zombies, requeued, runsStarted, toAbort, runsCanceled };
  }

  // ── reads for data passing and planning ─────────────────────────────────

  async latestOutputs(partitions: readonly { assetKey: string; partitionKey: string }[]): Promise<OutputRecord[]> {
    if (partitions.length === 0) return [];
    const input = toJson(partitions.map((p) => ({ asset_key: p.assetKey, partition_key: p.partitionKey })));
    const { rows } = await sql<{
      asset_key: string;
      partition_key: string;
      event_id: number | null;
      data_version: string | null;
      inline_value: unknown;
      storage_ref: string | null;
      has_output: boolean;
      gathered_from: number | null;
    }>`
      select ps.asset_key, ps.partition_key, ps.last_materialization_event_id as event_id, ps.data_version,
             coalesce(o.inline_value, obs.value) as inline_value, o.storage_ref, (o.id is not null or obs.value is not null) as has_output,
             case when o.content_type = ${GATHERED_CONTENT_TYPE} then ps.last_step_id end as gathered_from
      from jsonb_to_recordset(${input}::jsonb) as x(asset_key text, partition_key text)
      join partition_status ps on ps.asset_key = x.asset_key and ps.partition_key = x.partition_key
      left join lateral (
        select id, inline_value, storage_ref, content_type from outputs
        where outputs.step_id = ps.last_step_id order by try_number desc limit 1
      ) o on true
      -- A source partition's value is its latest observation: SourceObservation { observedAt, payload }.
      left join lateral (
        select jsonb_build_object('observedAt', to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                  'payload', coalesce(e.metadata->'payload', 'null'::jsonb)) as value
        from events e where e.id = ps.last_materialization_event_id and e.kind = 'observation'
      ) obs on ps.last_step_id is null
      where ps.last_materialization_event_id is not null`.execute(this.#db);
    const gathered = await this.gatheredOutputs(rows.flatMap((r) => (r.gathered_from === null ? [] : [Number(r.gathered_from)])));
    return rows.map((r) => ({
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      eventId: r.event_id === null ? null : Number(r.event_id),
      dataVersion: r.data_version,
      inline: r.inline_value,
      ref: r.storage_ref,
      hasOutput: r.has_output,
      ...(r.gathered_from === null ? {} : { gathered: gathered.get(Number(r.gathered_from)) ?? [] }),
    }));
  }

  /** Per expanded step: its mapped steps' latest outputs, in item order. */
  private async gatheredOutputs(stepIds: readonly number[]): Promise<Map<number, GatheredItem[]>> {
    const out = new Map<number, GatheredItem[]>();
    if (stepIds.length === 0) return out;
    const { rows } = await sql<{ parent: number; inline_value: unknown; storage_ref: string | null; has_output: boolean }>`
      select p.id as parent, o.inline_value, o.storage_ref, (o.id is not null) as has_output
      from steps p
      join steps c on ${MAPPED_STEP_OF} and c.map_index < p.map_count
      left join lateral (select id, inline_value, storage_ref from outputs where outputs.step_id = c.id order by try_number desc limit 1) o on true
      where p.id = any(${[...stepIds]}::bigint[])
      order by p.id, c.map_index`.execute(this.#db);
    for (const r of rows) {
      const list = out.get(Number(r.parent)) ?? [];
      list.push({ inline: r.inline_value, ref: r.storage_ref, hasOutput: r.has_output });
      out.set(Number(r.parent), list);
    }
    return out;
  }

  async materializedKeys(assetKeys: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(assetKeys.map((k) => [k, []]));
    if (assetKeys.length === 0) return out;
    const rows = await this.#db
      .selectFrom("partition_status")
      .select(["asset_key", "partition_key"])
      .where("asset_key", "in", [...assetKeys])
      .where("last_materialization_event_id", "is not", null)
      .execute();
    for (const r of rows) out.get(r.asset_key)?.push(r.partition_key);
    return out;
  }

  async partitionKeysWithStatus(assetKey: string, status: PartitionState): Promise<string[]> {
    const rows = await this.#db
      .selectFrom("partition_status")
      .select("partition_key")
      .where("asset_key", "=", assetKey)
      .where("status", "=", status)
      .orderBy("partition_key")
      .execute();
    return rows.map((r) => r.partition_key);
  }
}

// ── transaction bodies ─────────────────────────────────────────────────────

/**
 * Creates a run, its steps and their edges, and starts it, inside the
 * caller's transaction (a backfill creates its runs in the transaction that
 * moves its cursor). With an idempotency key that exists already, returns
 * that run (created: false) and writes nothing.
 */
export async function insertRun(trx: Trx, run: NewRun, now: Date): Promise<{ runId: string; created: boolean }> {
  const steps = run.plan.steps;
  const inserted = await trx
    .insertInto("runs")
    .values({
      status: "queued",
      origin: run.origin,
      backfill_id: run.backfillId ?? null,
      idempotency_key: run.idempotencyKey ?? null,
      snapshot_version: run.snapshotVersion,
      plan: toJson(serializePlan(run.plan)),
      job_name: run.jobName ?? null,
      priority: run.priority ?? 0,
      tags: toJson(run.tags ?? {}),
      max_active_steps: run.maxActiveSteps ?? null,
      max_active_runs: run.maxActiveRuns ?? null,
      steps_total: steps.length,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("idempotency_key").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted) {
    const existing = await trx
      .selectFrom("runs")
      .select("id")
      .where("idempotency_key", "=", run.idempotencyKey ?? "")
      .executeTakeFirstOrThrow();
    return { runId: existing.id, created: false };
  }
  const runId = inserted.id;
  if (steps.length > 0) {
    const { rows: idRows } = await sql<{ id: number }>`
      select nextval('steps_id_seq') as id from generate_series(1, ${steps.length}::int)`.execute(trx);
    const ids = idRows.map((r) => Number(r.id)).sort((a, b) => a - b);
    // Plan steps come in topological order: every upstream index is smaller.
    const depth: number[] = [];
    steps.forEach((s, i) => (depth[i] = s.upstream.reduce((d, up) => Math.max(d, (depth[up] ?? 0) + 1), 0)));
    const stepRows = steps.map((s, i) => {
      const cfg = run.settings(s.assetKey);
      // A check's step runs once under all_success (a check that throws is a failed result, not a retry) and
      // otherwise shares its asset's pool, executor, queue, timeout and priority.
      const isCheck = s.check !== undefined;
      return {
        id: ids[i],
        asset_key: s.assetKey,
        partition_key: s.partitionKey,
        check_name: s.check ?? null,
        trigger_rule: isCheck ? "all_success" : cfg.triggerRule,
        max_tries: isCheck ? 1 : cfg.retries.max + 1,
        retry_policy: isCheck ? null : cfg.retries,
        priority: cfg.priority + (run.priority ?? 0),
        pool: cfg.pool ?? DEFAULT_POOL,
        pool_slots: cfg.poolSlots,
        executor: cfg.executor,
        queue: cfg.queue,
        timeout_ms: cfg.timeoutMs,
        max_concurrency: cfg.maxConcurrency,
        upstream_total: s.upstream.length,
        depth: depth[i],
      };
    });
    await sql`
      insert into steps (id, run_id, asset_key, partition_key, check_name, trigger_rule, max_tries, retry_policy, priority, pool,
                         pool_slots, executor, queue, timeout_ms, max_concurrency, upstream_total, depth, created_at, updated_at)
      select x.id, ${runId}::uuid, x.asset_key, x.partition_key, x.check_name, x.trigger_rule, x.max_tries, x.retry_policy, x.priority,
             x.pool, x.pool_slots, x.executor, x.queue, x.timeout_ms, x.max_concurrency, x.upstream_total, x.depth, ${now}, ${now}
      from jsonb_to_recordset(${toJson(stepRows)}::jsonb) as x(
        id bigint, asset_key text, partition_key text, check_name text, trigger_rule text, max_tries int, retry_policy jsonb,
        priority int, pool text, pool_slots int, executor text, queue text, timeout_ms bigint, max_concurrency int,
        upstream_total int, depth int)`.execute(trx);
    const edges: [number, number][] = [];
    steps.forEach((s, i) => {
      for (const up of s.upstream) edges.push([ids[i]!, ids[up]!]);
    });
    if (edges.length > 0) {
      await sql`
        insert into step_deps (step_id, upstream_step_id)
        select (e->>0)::bigint, (e->>1)::bigint from jsonb_array_elements(${toJson(edges)}::jsonb) e`.execute(trx);
    }
  }
  await startRun(trx, runId, now);
  await notifyIn(trx, WAKE_CHANNEL, "run");
  return { runId, created: true };
}

/** Starts a queued run if its job has room: its root steps become scheduled. */
async function startRun(trx: Trx, runId: string, now: Date): Promise<boolean> {
  const run = await trx
    .selectFrom("runs")
    .select(["id", "status", "job_name", "max_active_runs", "steps_total"])
    .where("id", "=", runId)
    .executeTakeFirst();
  if (!run || run.status !== "queued") return false;
  if (run.job_name && run.max_active_runs) {
    // One transaction at a time decides a job's admissions.
    await sql`select pg_advisory_xact_lock(hashtext(${`tributary.job:${run.job_name}`}))`.execute(trx);
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from runs where job_name = ${run.job_name} and status = 'running'`.execute(trx);
    if ((rows[0]?.n ?? 0) >= run.max_active_runs) return false;
  }
  const empty = run.steps_total === 0;
  await trx
    .updateTable("runs")
    .set({ status: empty ? "success" : "running", started_at: now, updated_at: now, ...(empty ? { ended_at: now } : {}) })
    .where("id", "=", runId)
    .execute();
  // Steps without upstreams pass every trigger rule.
  await trx
    .updateTable("steps")
    .set({ state: "scheduled", scheduled_at: now, updated_at: now })
    .where("run_id", "=", runId)
    .where("state", "=", "pending")
    .where("upstream_total", "=", 0)
    .execute();
  return true;
}

/**
 * completeSteps inside the caller's transaction (the trigger store ends timed-out
 * deferred steps in the same transaction that marks their triggers).
 */
export async function completeStepsIn(
  trx: Trx,
  completions: readonly StepCompletion[],
  now: Date,
  random: () => number = Math.random,
): Promise<CompletionSummary> {
  if (completions.length === 0) return { applied: 0, ignored: [], scheduled: 0, finishedRuns: [], claimed: [] };
  return completeIn(trx, completions, now, random);
}

async function completeIn(
  trx: Trx,
  completions: readonly StepCompletion[],
  now: Date,
  random: () => number,
  followUp?: FollowUp,
): Promise<CompletionSummary> {
  const ids = [...new Set(completions.map((c) => c.stepId))].sort((a, b) => a - b);
  const locked = await sql<LockedStep>`
    select s.id, s.run_id, s.state, s.try_number, s.tries_before, s.retry_policy, s.pool, s.pool_slots, s.asset_key,
           s.partition_key, s.map_index, s.check_name, (r.cancel_requested_at is not null) as cancel_requested
    from steps s join runs r on r.id = s.run_id
    where s.id = any(${ids}::bigint[]) order by s.id for no key update of s`.execute(trx);
  const byId = new Map(locked.rows.map((r) => [Number(r.id), { ...r, id: Number(r.id) }]));

  const ignored: { stepId: number; tryNumber: number; reason: string }[] = [];
  const applied: { c: StepCompletion; step: LockedStep; state: StepState; nextRetryAt: Date | null; wasActive: boolean }[] = [];
  const claimedTwice = new Set<number>();
  for (const c of completions) {
    const step = byId.get(c.stepId);
    if (!step) {
      ignored.push({ stepId: c.stepId, tryNumber: c.tryNumber, reason: "no such step" });
      continue;
    }
    // A deferred step ends without a worker only when its trigger store says so (timeout).
    const expected: readonly StepState[] =
      c.deferred === true ? ["deferred"] : c.outcome === "removed" ? [...ACTIVE, "scheduled", "pending"] : ACTIVE;
    if (step.try_number !== c.tryNumber || !expected.includes(step.state) || claimedTwice.has(c.stepId)) {
      ignored.push({
        stepId: c.stepId,
        tryNumber: c.tryNumber,
        reason: `step is at try ${step.try_number} in state ${step.state}: a report for try ${c.tryNumber} is stale`,
      });
      continue;
    }
    claimedTwice.add(c.stepId);
    let state: StepState;
    let nextRetryAt: Date | null = null;
    if (c.outcome === "success") state = "success";
    else if (c.outcome === "deferred") state = "deferred";
    else if (c.outcome === "rescheduled") {
      state = "up_for_reschedule";
      nextRetryAt = c.nextCheckAt;
    } else if (c.outcome === "skipped") state = "skipped";
    else if (c.outcome === "removed") state = "removed";
    else if (c.outcome === "check") state = c.passed || !c.check.blocking ? "success" : "failed";
    // Fanned out: the step waits for its mapped steps (created below), then gathers their outputs.
    else if (c.outcome === "expanded") state = "pending";
    else if (c.outcome === "released" && step.state === "queued") state = "scheduled";
    else {
      const policy = step.retry_policy;
      const retryable = c.outcome === "released" || c.retryable;
      const retry = retryable && !step.cancel_requested && policy !== null && shouldRetry(policy, c.tryNumber, step.tries_before);
      if (retry) {
        state = "up_for_retry";
        nextRetryAt = new Date(now.getTime() + retryDelayMs(policy, c.tryNumber - step.tries_before, random));
      } else state = "failed";
    }
    applied.push({ c, step, state, nextRetryAt, wasActive: ACTIVE.includes(step.state) });
  }
  if (applied.length === 0) return { applied: 0, ignored, scheduled: 0, finishedRuns: [], claimed: [] };

  // Before the steps are updated: a second update of a row this transaction already updated re-checks its
  // foreign key, which would lock the run (KEY SHARE) ahead of the pools and deadlock with claims.
  const triggerOf = await createStepTriggers(trx, applied, now);
  const stepUpdates = applied.map(({ c, step, state, nextRetryAt }) => ({
    id: c.stepId,
    state,
    ended_at: WAITING_AGAIN.includes(state) ? null : c.endedAt.toISOString(),
    next_retry_at: nextRetryAt?.toISOString() ?? null,
    error: errorOf(c, step),
    // Released unstarted, deferred or rescheduled: the try does not count against the retry policy.
    released: state === "scheduled" || state === "deferred" || state === "up_for_reschedule",
    wait_started_at: c.outcome === "rescheduled" ? c.waitStartedAt.toISOString() : null,
    trigger_id: triggerOf.get(c.stepId) ?? null,
    skip_reason: c.outcome === "skipped" || c.outcome === "removed" ? c.reason : null,
    worker_id: c.workerId,
    started_at: c.startedAt?.toISOString() ?? null,
    map_count: c.outcome === "expanded" ? c.count : null,
    map_open: c.outcome === "expanded" ? c.count : null,
    map_inputs: c.outcome === "expanded" ? { codeVersion: c.codeVersion, inputs: uniqueInputs(c.inputs) } : null,
  }));
  await sql`
    update steps set state = x.state, ended_at = x.ended_at, next_retry_at = x.next_retry_at, error = x.error,
                     skip_reason = x.skip_reason, worker_id = coalesce(x.worker_id, steps.worker_id),
                     started_at = coalesce(steps.started_at, x.started_at), heartbeat_at = null, updated_at = ${now},
                     tries_before = steps.tries_before + (case when x.released then 1 else 0 end),
                     scheduled_at = case when x.state = 'scheduled' then ${now}::timestamptz else steps.scheduled_at end,
                     wait_started_at = x.wait_started_at, trigger_id = coalesce(x.trigger_id, steps.trigger_id),
                     map_count = coalesce(x.map_count, steps.map_count), map_open = coalesce(x.map_open, steps.map_open),
                     map_inputs = coalesce(x.map_inputs, steps.map_inputs)
    from jsonb_to_recordset(${toJson(stepUpdates)}::jsonb)
      as x(id bigint, state text, ended_at timestamptz, next_retry_at timestamptz, error jsonb, released boolean,
           skip_reason text, worker_id text, started_at timestamptz, wait_started_at timestamptz, trigger_id bigint,
           map_count int, map_open int, map_inputs jsonb)
    where steps.id = x.id`.execute(trx);

  const tryUpdates = applied.filter((a) => a.wasActive).map(({ c, step, state }) => ({
    step_id: c.stepId,
    try_number: c.tryNumber,
    state:
      c.outcome === "released" ? "failed"
      : c.outcome === "rescheduled" ? "up_for_reschedule"
      : c.outcome === "check" ? state
      : c.outcome === "expanded" ? "success"
      : c.outcome,
    ended_at: c.endedAt.toISOString(),
    started_at: c.startedAt?.toISOString() ?? null,
    error: errorOf(c, step),
    log_ref: c.logRef,
    worker_id: c.workerId,
    hostname: c.hostname ?? null,
    pid: c.pid ?? null,
  }));
  await sql`
    update step_tries t set state = x.state, ended_at = x.ended_at, started_at = coalesce(t.started_at, x.started_at),
           duration_ms = greatest(0, (extract(epoch from (x.ended_at - coalesce(t.started_at, x.started_at, x.ended_at))) * 1000)::bigint),
           error = x.error, log_ref = coalesce(x.log_ref, t.log_ref), worker_id = coalesce(t.worker_id, x.worker_id),
           hostname = coalesce(t.hostname, x.hostname), pid = coalesce(t.pid, x.pid)
    from jsonb_to_recordset(${toJson(tryUpdates)}::jsonb)
      as x(step_id bigint, try_number int, state text, ended_at timestamptz, started_at timestamptz, error jsonb,
           log_ref text, worker_id text, hostname text, pid int)
    where t.step_id = x.step_id and t.try_number = x.try_number`.execute(trx);

  await recordMaterializations(trx, applied, now);
  // A check's step that ended (with a verdict, or failing to reach one) is a check result, never a failed
  // materialisation of its partition.
  await recordCheckResults(trx, applied.filter((a) => a.step.check_name !== null && isTerminalState(a.state)), now);
  await recordFailures(trx, applied.filter((a) => a.state === "failed" && a.step.check_name === null), now);
  const expansion = await expandSteps(trx, applied.filter((a) => a.c.outcome === "expanded"), now);

  const changes: StepChange[] = applied.map((a) => ({
    id: a.step.id,
    run_id: a.step.run_id,
    state: a.state,
    wasActive: a.wasActive,
    pool: a.step.pool,
    pool_slots: a.step.pool_slots,
  }));
  // Mapped steps that ended count down their expanded step (which gathers them) instead of being propagated
  // one edge at a time: it is judged once they all ended, or at once when one did not succeed.
  const ended = applied.filter((a) => isTerminalState(a.state));
  const isMapped = (a: { step: LockedStep }) => a.step.map_index >= 0 && a.step.check_name === null;
  const { scheduled, cascaded } = await propagate(
    trx,
    changes.filter((c, i) => isTerminalState(c.state) && !isMapped(applied[i]!)),
    now,
    await countDownExpanded(trx, ended.filter(isMapped).map((a) => ({ step: a.step, state: a.state })), now),
  );
  // Pool and run rows are shared by every transaction that moves steps: they
  // are touched last, so their locks are held only until the commit.
  // A deferred step keeps its pool slot where the pool counts deferred steps, until the wait ends.
  const holding = await poolsCountingDeferred(trx, applied.map((a) => a.step.pool));
  const released = applied
    .filter((a) => (a.wasActive ? !(a.state === "deferred" && holding.has(a.step.pool)) : a.c.deferred === true && holding.has(a.step.pool)))
    .map((a) => ({ pool: a.step.pool, slots: a.step.pool_slots }));
  const followUpIds = followUp && followUp.limit > 0 ? [...scheduled, ...expansion.scheduled] : [];
  if (followUpIds.length > 0) {
    // Every pool this transaction will touch, locked at once in name order:
    // locking the released pools and then the follow-up's could deadlock
    // with another completion doing the same the other way round.
    const { rows } = await sql<{ pool: string }>`
      select distinct pool from steps where id = any(${followUpIds}::bigint[])`.execute(trx);
    const pools = [...new Set([...released.map((r) => r.pool), ...rows.map((r) => r.pool)])].sort();
    await sql`select name from pools where name = any(${pools}::text[]) order by name for no key update`.execute(trx);
  }
  await adjustPools(trx, released, -1);
  // The mini-scheduler: hand the steps these results made runnable straight
  // back to the executor that reported them, without a reconciler round trip.
  let claimed: ClaimedStep[] = [];
  if (followUp && followUpIds.length > 0) {
    ({ steps: claimed } = await claimIn(trx, {
      kindNames: [followUp.executor],
      capacity: new Map([[followUp.executor, followUp.limit]]),
      limit: followUp.limit,
      agingLimit: 0,
      now,
      defaultPoolSlots: followUp.defaultPoolSlots ?? 16,
      onlyIds: followUpIds,
    }));
  }
  const finishedRuns = await updateRunCounters(trx, [...changes, ...cascaded], now, expansion.adjust);
  // Always: finished steps also free executor and pool slots that scheduled steps wait for.
  await notifyIn(trx, WAKE_CHANNEL, "steps");
  return { applied: applied.length, ignored, scheduled: scheduled.length + expansion.scheduled.length, finishedRuns, claimed };
}

/** States a completion leaves a step in that are not an end: the step runs again (or, expanded, gathers). */
const WAITING_AGAIN: readonly StepState[] = ["up_for_retry", "scheduled", "deferred", "up_for_reschedule", "pending"];

/** Triggerers listen here: a new waiting trigger is checked at once, not at the next poll. */
export const TRIGGERS_CHANNEL = "tributary_triggers";

/**
 * The triggers of deferring tries, in the transaction that moves their steps
 * to `deferred`: a step is never deferred without its trigger. At most one
 * waiting trigger per step (unique index), so a repeated report adds none.
 * Returns the new trigger of each step, for steps.trigger_id.
 */
async function createStepTriggers(
  trx: Trx,
  applied: readonly { c: StepCompletion; step: LockedStep; state: StepState }[],
  now: Date,
): Promise<Map<number, number>> {
  const rows = applied.flatMap(({ c, step }) =>
    c.outcome === "deferred"
      ? [
          {
            kind: c.trigger.kind,
            args: c.trigger.args,
            step_id: step.id,
            asset_key: step.asset_key,
            partition_key: step.partition_key,
            partition_window: c.trigger.partitionWindow,
            poll_interval_ms: Math.max(1, Math.round(c.trigger.pollIntervalMs)),
            soft_fail: c.trigger.softFail,
            timeout_at: c.trigger.timeoutAt.toISOString(),
            try_number: c.tryNumber,
          },
        ]
      : [],
  );
  if (rows.length === 0) return new Map();
  const { rows: created } = await sql<{ id: string; step_id: string }>`
    insert into triggers (kind, args, step_id, asset_key, partition_key, partition_window, poll_interval_ms, soft_fail,
                          timeout_at, try_number, next_check_at, created_at, updated_at)
    select kind, args, step_id, asset_key, partition_key, partition_window, poll_interval_ms, soft_fail,
           timeout_at, try_number, ${now}, ${now}, ${now}
    from jsonb_to_recordset(${toJson(rows)}::jsonb)
      as x(kind text, args jsonb, step_id bigint, asset_key text, partition_key text, partition_window jsonb,
           poll_interval_ms int, soft_fail boolean, timeout_at timestamptz, try_number int)
    order by step_id
    on conflict (step_id) where status = 'waiting' and step_id is not null do nothing
    returning id, step_id`.execute(trx);
  await notifyIn(trx, TRIGGERS_CHANNEL, "deferred");
  return new Map(created.map((r) => [Number(r.step_id), Number(r.id)]));
}

/** Of these pools, the ones whose slots deferred steps keep holding (include_deferred). */
async function poolsCountingDeferred(trx: Trx, pools: readonly string[]): Promise<Set<string>> {
  const names = [...new Set(pools)];
  if (names.length === 0) return new Set();
  const { rows } = await sql<{ name: string }>`
    select name from pools where name = any(${names}::text[]) and include_deferred`.execute(trx);
  return new Set(rows.map((r) => r.name));
}

/**
 * Deferred steps leaving their wait (their trigger fired): gives back the
 * pool slots they held in pools that count deferred steps. Call before the
 * steps leave `deferred`, in the same transaction.
 */
export async function releaseDeferredPoolSlotsIn(trx: Trx, stepIds: readonly number[]): Promise<void> {
  if (stepIds.length === 0) return;
  const { rows } = await sql<{ pool: string; slots: number }>`
    select s.pool, s.pool_slots as slots from steps s join pools p on p.name = s.pool and p.include_deferred
    where s.id = any(${[...stepIds]}::bigint[]) and s.state = 'deferred'`.execute(trx);
  await adjustPools(trx, rows, -1);
}

async function recordMaterializations(
  trx: Trx,
  applied: readonly { c: StepCompletion; step: LockedStep; state: StepState }[],
  now: Date,
): Promise<void> {
  const successes = applied.filter((a) => a.c.outcome === "success");
  if (successes.length === 0) return;
  const rows: MaterializationRow[] = [];
  const lineage: LineageRow[] = [];
  for (const { c, step } of successes) {
    if (c.outcome !== "success") continue;
    rows.push({
      step_id: step.id,
      run_id: step.run_id,
      try_number: c.tryNumber,
      asset_key: step.asset_key,
      partition_key: step.partition_key,
      map_index: step.map_index,
      data_version: c.dataVersion,
      code_version: c.codeVersion,
      size_bytes: c.output.sizeBytes,
      inline_value: "inline" in c.output ? c.output.inline : null,
      storage_ref: "ref" in c.output ? c.output.ref : null,
      content_type: "application/json",
      // A mapped step's output is one item of its partition's: the partition is materialised when they are gathered.
      output_only: step.map_index >= 0,
    });
    if (step.map_index >= 0) continue;
    for (const i of uniqueInputs(c.inputs)) {
      lineage.push({ step_id: step.id, asset_key: i.assetKey, partition_key: i.partitionKey, upstream_event_id: i.eventId });
    }
  }
  await insertMaterializations(trx, rows, lineage, now);
}

/** Two dependencies may read the same upstream partition: it is one input. */
function uniqueInputs(inputs: readonly LineageInput[]): LineageInput[] {
  const seen = new Map<string, LineageInput>();
  for (const i of inputs) {
    const k = `${i.assetKey}\u0000${i.partitionKey}`;
    if (!seen.has(k)) seen.set(k, i);
  }
  return [...seen.values()];
}

interface MaterializationRow {
  step_id: number;
  run_id: string;
  try_number: number;
  asset_key: string;
  partition_key: string;
  map_index: number;
  data_version: string;
  code_version: string | null;
  size_bytes: number;
  /** JSON text. */
  inline_value: string | null;
  storage_ref: string | null;
  content_type: string;
  /** Only the output is stored (a mapped step's): no event, no partition status. */
  output_only: boolean;
}

interface LineageRow {
  step_id: number;
  asset_key: string;
  partition_key: string;
  upstream_event_id: number | null;
}

/** What a gathered materialisation stores as its output: its value is its mapped steps' outputs, in item order. */
export const GATHERED_CONTENT_TYPE = "application/vnd.tributary.gathered+json";

/**
 * Output, materialisation event, lineage and partition status in one statement: one round trip per batch
 * whatever its size. A gathered output is written again when its step gathers again (a mapped step was
 * cleared): its row says only how many items it gathers.
 */
async function insertMaterializations(trx: Trx, rows: readonly MaterializationRow[], lineage: readonly LineageRow[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, partition_key text, run_id uuid, step_id bigint, map_index int, try_number int,
             size_bytes bigint, inline_value text, storage_ref text, data_version text, code_version text,
             content_type text, output_only boolean)
    ), o as (
      insert into outputs (asset_key, partition_key, run_id, step_id, map_index, try_number, size_bytes, inline_value,
                           storage_ref, content_type, data_version, created_at)
      select asset_key, partition_key, run_id, step_id, map_index, try_number, size_bytes, inline_value::jsonb, storage_ref,
             content_type, data_version, ${now}
      from x
      on conflict (step_id, try_number) do update set
        size_bytes = excluded.size_bytes, inline_value = excluded.inline_value, data_version = excluded.data_version,
        created_at = excluded.created_at
    ), ev as (
      insert into events (kind, asset_key, partition_key, run_id, step_id, try_number, data_version, code_version, created_at)
      select 'materialization', asset_key, partition_key, run_id, step_id, try_number, data_version, code_version, ${now}
      from x where not x.output_only
      returning id, step_id
    ), l as (
      insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
      select ev.id, li.asset_key, li.partition_key, li.upstream_event_id
      from jsonb_to_recordset(${toJson(lineage)}::jsonb)
        as li(step_id bigint, asset_key text, partition_key text, upstream_event_id bigint)
      join ev on ev.step_id = li.step_id
    )
    insert into partition_status as ps (asset_key, partition_key, status, last_materialization_event_id, last_run_id,
                                        last_step_id, data_version, code_version, materialized_at, updated_at)
    -- One row per partition (ON CONFLICT cannot touch a row twice): the latest step wins.
    select distinct on (x.asset_key, x.partition_key)
           x.asset_key, x.partition_key, 'materialized', ev.id, x.run_id, x.step_id, x.data_version, x.code_version, ${now}, ${now}
    from x join ev on ev.step_id = x.step_id
    order by x.asset_key, x.partition_key, x.step_id desc
    on conflict (asset_key, partition_key) do update set
      status = excluded.status, last_materialization_event_id = excluded.last_materialization_event_id,
      last_step_id = excluded.last_step_id, last_run_id = excluded.last_run_id,
      data_version = excluded.data_version, code_version = excluded.code_version,
      materialized_at = excluded.materialized_at, updated_at = excluded.updated_at,
      failed_check = null`.execute(trx);
}

/**
 * Expanded steps whose mapped steps all succeeded: the partition's materialisation, whose value is their
 * outputs in item order (read through the gathered output), whose data version digests theirs, and whose
 * lineage is what the expanding try read.
 */
async function recordGathered(trx: Trx, stepIds: readonly number[], now: Date): Promise<void> {
  if (stepIds.length === 0) return;
  const { rows } = await sql<{
    id: number;
    run_id: string;
    try_number: number;
    asset_key: string;
    partition_key: string;
    map_count: number;
    map_inputs: { codeVersion: string | null; inputs: LineageInput[] } | null;
    size_bytes: number;
    digest: string;
  }>`
    select p.id, p.run_id, p.try_number, p.asset_key, p.partition_key, p.map_count, p.map_inputs,
           coalesce(sum(o.size_bytes), 0)::bigint as size_bytes,
           md5(string_agg(coalesce(o.data_version, ''), ',' order by c.map_index)) as digest
    from steps p
    join steps c on ${MAPPED_STEP_OF} and c.map_index < p.map_count
    left join lateral (select size_bytes, data_version from outputs where outputs.step_id = c.id order by try_number desc limit 1) o on true
    where p.id = any(${[...stepIds]}::bigint[])
    group by p.id`.execute(trx);
  const materializations: MaterializationRow[] = [];
  const lineage: LineageRow[] = [];
  for (const r of rows) {
    const id = Number(r.id);
    const codeVersion = r.map_inputs?.codeVersion ?? null;
    materializations.push({
      step_id: id,
      run_id: r.run_id,
      try_number: r.try_number,
      asset_key: r.asset_key,
      partition_key: r.partition_key,
      map_index: -1,
      data_version: `mapped:${r.map_count}:${codeVersion ?? ""}:${r.digest}`,
      code_version: codeVersion,
      size_bytes: Number(r.size_bytes),
      inline_value: JSON.stringify({ gathered: r.map_count }),
      storage_ref: null,
      content_type: GATHERED_CONTENT_TYPE,
      output_only: false,
    });
    for (const i of r.map_inputs?.inputs ?? []) {
      lineage.push({ step_id: id, asset_key: i.assetKey, partition_key: i.partitionKey, upstream_event_id: i.eventId });
    }
  }
  await insertMaterializations(trx, materializations, lineage, now);
}

/**
 * The mapped steps of steps that fanned out, in the transaction that moves them to `pending`: one per item,
 * scheduled at once (they read what their expanded step read, which has all ended), each an upstream of the
 * expanded step, which gathers them. A step expanded before (cleared since, inside its run) reuses its
 * mapped steps by index: those within the new list run again on their new item, those past it are removed.
 */
async function expandSteps(
  trx: Trx,
  expanded: readonly { c: StepCompletion; step: LockedStep }[],
  now: Date,
): Promise<{ scheduled: number[]; adjust: Map<string, RunAdjust> }> {
  const adjust = new Map<string, RunAdjust>();
  if (expanded.length === 0) return { scheduled: [], adjust };
  const lists = expanded.flatMap(({ c, step }) =>
    c.outcome === "expanded" ? [{ parent: step.id, items: JSON.parse(c.itemsJson) as unknown[], labels: c.labels ?? [] }] : [],
  );
  const parentIds = lists.map((l) => l.parent);
  const { rows: earlier } = await sql<{ id: number; parent: number; run_id: string; map_index: number; state: StepState }>`
    select c.id, p.id as parent, c.run_id, c.map_index, c.state
    from steps p join steps c on ${MAPPED_STEP_OF}
    where p.id = any(${parentIds}::bigint[])
    order by c.id for no key update of c`.execute(trx);
  const runOf = new Map(expanded.map(({ step }) => [step.id, step.run_id]));
  const reuse: { id: number; item: unknown; label: string | null }[] = [];
  const removed: number[] = [];
  const existing = new Map<string, number>();
  for (const e of earlier) {
    const parent = Number(e.parent);
    existing.set(`${parent}:${e.map_index}`, Number(e.id));
    const list = lists.find((l) => l.parent === parent)!;
    const wasDone = isTerminalState(e.state);
    const wasFailed = e.state === "failed" || e.state === "upstream_failed";
    if (e.map_index < list.items.length) {
      reuse.push({ id: Number(e.id), item: list.items[e.map_index], label: list.labels[e.map_index] ?? null });
      addAdjust(adjust, e.run_id, { done: wasDone ? -1 : 0, failed: wasFailed ? -1 : 0 });
    } else if (e.state !== "removed") {
      removed.push(Number(e.id));
      addAdjust(adjust, e.run_id, { done: wasDone ? 0 : 1, failed: wasFailed ? -1 : 0 });
    }
  }
  const fresh = lists.flatMap((l) =>
    l.items.flatMap((item, index) =>
      existing.has(`${l.parent}:${index}`) ? [] : [{ parent: l.parent, map_index: index, item, label: l.labels[index] ?? null }],
    ),
  );
  const scheduled: number[] = [];
  if (fresh.length > 0) {
    // Ids first (as insertRun does), so the edges to the expanded steps need no join back to the new rows.
    const { rows: idRows } = await sql<{ id: number }>`
      select nextval('steps_id_seq') as id from generate_series(1, ${fresh.length}::int)`.execute(trx);
    const ids = idRows.map((r) => Number(r.id)).sort((a, b) => a - b);
    const rows = fresh.map((f, i) => ({ ...f, id: ids[i]! }));
    await sql`
      insert into steps (id, run_id, asset_key, partition_key, map_index, state, trigger_rule, max_tries, retry_policy, priority,
                         pool, pool_slots, executor, queue, timeout_ms, max_concurrency, upstream_total, depth, scheduled_at,
                         map_item, map_label, created_at, updated_at)
      select x.id, p.run_id, p.asset_key, p.partition_key, x.map_index, 'scheduled', p.trigger_rule, p.max_tries, p.retry_policy,
             p.priority, p.pool, p.pool_slots, p.executor, p.queue, p.timeout_ms, p.max_concurrency, 0, p.depth, ${now},
             x.item, x.label, ${now}, ${now}
      from jsonb_to_recordset(${toJson(rows)}::jsonb) as x(id bigint, parent bigint, map_index int, item jsonb, label text)
      join steps p on p.id = x.parent
      order by x.id`.execute(trx);
    await sql`
      insert into step_deps (step_id, upstream_step_id)
      select x.parent, x.id from jsonb_to_recordset(${toJson(rows.map((r) => ({ parent: r.parent, id: r.id })))}::jsonb) as x(parent bigint, id bigint)`.execute(trx);
    for (const r of rows) {
      scheduled.push(r.id);
      addAdjust(adjust, runOf.get(r.parent)!, { total: 1 });
    }
  }
  if (reuse.length > 0) {
    await sql`
      update steps set state = 'scheduled', map_item = x.item, map_label = x.label, tries_before = steps.try_number,
                       error = null, skip_reason = null, ended_at = null, next_retry_at = null, started_at = null,
                       worker_id = null, heartbeat_at = null, scheduled_at = ${now}, updated_at = ${now}
      from jsonb_to_recordset(${toJson(reuse)}::jsonb) as x(id bigint, item jsonb, label text)
      where steps.id = x.id`.execute(trx);
    scheduled.push(...reuse.map((r) => r.id));
  }
  if (removed.length > 0) {
    await sql`
      update steps set state = 'removed', skip_reason = 'the fan-out has fewer items now', ended_at = ${now}, updated_at = ${now}
      where id = any(${removed}::bigint[])`.execute(trx);
  }
  for (const l of lists) addAdjust(adjust, runOf.get(l.parent)!, { plan: 1 });
  return { scheduled, adjust };
}

async function recordFailures(trx: Trx, failed: readonly { c: StepCompletion; step: LockedStep }[], now: Date): Promise<void> {
  if (failed.length === 0) return;
  const rows = failed.map(({ c, step }) => ({
    asset_key: step.asset_key,
    partition_key: step.partition_key,
    run_id: step.run_id,
    step_id: step.id,
    try_number: c.tryNumber,
    metadata: { error: c.outcome === "failed" || c.outcome === "released" ? { code: c.error.code, message: c.error.message } : null },
    // A step of a canceled run failing is what the user asked for, not news.
    alert: !step.cancel_requested,
  }));
  // The failure event and the alert (routed by the asset's owner) in one
  // statement; cause_key makes a second report of the same try a no-op.
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, partition_key text, run_id uuid, step_id bigint, try_number int, metadata jsonb, alert boolean)
    ), ev as (
      insert into events (kind, asset_key, partition_key, run_id, step_id, try_number, metadata, created_at)
      select 'failure', x.asset_key, x.partition_key, x.run_id, x.step_id, x.try_number, x.metadata, ${now} from x
    )
    insert into alerts (cause_key, kind, asset_key, partition_key, run_id, owner, payload, next_attempt_at, created_at)
    select 'step_failed:' || x.step_id || ':' || x.try_number, 'step_failed', x.asset_key, nullif(x.partition_key, ''),
           x.run_id, a.owner,
           jsonb_build_object('asset', x.asset_key, 'partition', nullif(x.partition_key, ''), 'run', x.run_id,
                              'step', x.step_id, 'try', x.try_number, 'error', x.metadata->'error'),
           ${now}, ${now}
    from x left join assets a on a.key = x.asset_key
    where x.alert
    on conflict (cause_key) do nothing`.execute(trx);
  await upsertPartitionStatus(
    trx,
    rows.map((r) => ({ asset_key: r.asset_key, partition_key: r.partition_key, run_id: r.run_id, step_id: r.step_id, event_id: null, data_version: null, code_version: null })),
    "failed",
    now,
  );
}

async function upsertPartitionStatus(
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

/**
 * Mapped steps that ended: their expanded steps' counts of open mapped steps go down (the expanded steps are
 * locked in id order first, as propagate locks). Returns the expanded steps to judge now: those with none
 * open, and those with a mapped step that did not succeed (all_success fails fast).
 */
async function countDownExpanded(
  trx: Trx,
  ended: readonly { step: LockedStep; state: StepState }[],
  now: Date,
): Promise<number[]> {
  if (ended.length === 0) return [];
  const groups = new Map<string, { run_id: string; asset_key: string; partition_key: string; n: number; bad: boolean }>();
  for (const { step, state } of ended) {
    const k = `${step.run_id}\u0000${step.asset_key}\u0000${step.partition_key}`;
    const g = groups.get(k) ?? { run_id: step.run_id, asset_key: step.asset_key, partition_key: step.partition_key, n: 0, bad: false };
    g.n++;
    if (state !== "success") g.bad = true;
    groups.set(k, g);
  }
  const { rows } = await sql<{ id: number; open: number; bad: boolean }>`
    with x as (
      select * from jsonb_to_recordset(${toJson([...groups.values()])}::jsonb)
        as x(run_id uuid, asset_key text, partition_key text, n int, bad boolean)
    ), p as (
      select s.id, x.n, x.bad from x
      join steps s on s.run_id = x.run_id and s.asset_key = x.asset_key and s.partition_key = x.partition_key
                  and s.map_index = -1 and s.check_name is null
      where s.state = 'pending' and s.map_count is not null
      order by s.id for no key update of s
    )
    update steps set map_open = steps.map_open - p.n, updated_at = ${now}
    from p where steps.id = p.id
    returning steps.id, steps.map_open as open, p.bad`.execute(trx);
  return rows.filter((r) => r.open <= 0 || r.bad).map((r) => Number(r.id));
}

/**
 * Applies the trigger rule of every pending step downstream of steps that just
 * ended. The pending steps are locked first (in id order: concurrent
 * completions never deadlock), then their upstreams' states are counted: under
 * READ COMMITTED that statement sees every upstream that ended in a
 * transaction that held the lock before, so two upstreams ending at once
 * cannot both leave a step waiting. Steps that become skipped or
 * upstream_failed end too, so this repeats until nothing changes.
 */
async function propagate(
  trx: Trx,
  terminal: readonly StepChange[],
  now: Date,
  /** Pending steps to judge as well (expanded steps whose mapped steps all ended, or one failed). */
  judge: readonly number[] = [],
): Promise<{ scheduled: number[]; cascaded: StepChange[] }> {
  let frontier = terminal.map((t) => t.id);
  let extra = [...judge];
  const scheduled: number[] = [];
  const cascaded: StepChange[] = [];
  while (frontier.length > 0 || extra.length > 0) {
    const locked = await sql<{ id: number }>`
      select s.id from steps s
      where s.state = 'pending' and (s.id in (select d.step_id from step_deps d where d.upstream_step_id = any(${frontier}::bigint[]))
                                     or s.id = any(${extra}::bigint[]))
      order by s.id for no key update of s`.execute(trx);
    extra = [];
    if (locked.rows.length === 0) break;
    const { rows } = await sql<{
      id: number;
      run_id: string;
      trigger_rule: TriggerRule;
      pool: string;
      pool_slots: number;
      total: number;
      success: number;
      failed: number;
      upstream_failed: number;
      skipped: number;
      removed: number;
      cancel_requested: boolean;
      failed_check: string | null;
      map_count: number | null;
      failed_item: number | null;
      skipped_item: number | null;
    }>`
      select s.id, s.run_id, s.pool, s.pool_slots, s.map_count,
             -- An expanded step gathers its mapped steps: all of them must succeed, whatever its own rule.
             case when s.map_count is null then s.trigger_rule else 'all_success' end as trigger_rule,
             coalesce(s.map_count, s.upstream_total) as total,
             -- A blocking check that failed upstream: named in the reason the step does not run.
             min(format('blocking check "%s" of asset "%s" failed on %s', u.check_name, u.asset_key,
                        case when u.partition_key = '' then 'the asset' else format('partition "%s"', u.partition_key) end))
               filter (where u.state = 'failed' and u.check_name is not null) as failed_check,
             min(u.map_index) filter (where u.map_index >= 0 and u.state in ('failed', 'upstream_failed')) as failed_item,
             min(u.map_index) filter (where u.map_index >= 0 and u.state = 'skipped') as skipped_item,
             count(*) filter (where u.state = 'success')::int as success,
             count(*) filter (where u.state = 'failed')::int as failed,
             count(*) filter (where u.state = 'upstream_failed')::int as upstream_failed,
             count(*) filter (where u.state = 'skipped')::int as skipped,
             count(*) filter (where u.state = 'removed')::int as removed,
             (r.cancel_requested_at is not null) as cancel_requested
      from steps s
      join runs r on r.id = s.run_id
      join step_deps d on d.step_id = s.id
      join steps u on u.id = d.upstream_step_id
                  -- Gathering, an expanded step counts its current mapped steps only; otherwise (not expanded yet, or
                  -- to expand again) its planned upstreams only.
                  and (case when s.map_count is null then u.map_index < 0 else u.map_index >= 0 and u.map_index < s.map_count end)
      where s.id = any(${locked.rows.map((r) => Number(r.id))}::bigint[])
      group by s.id, r.cancel_requested_at`.execute(trx);
    const decisions: { id: number; state: StepState; reason: string | null }[] = [];
    for (const r of rows) {
      const decision = evaluateTriggerRule(r.trigger_rule, {
        total: r.total,
        success: r.success,
        failed: r.failed,
        upstreamFailed: r.upstream_failed,
        skipped: r.skipped,
        removed: r.removed,
      });
      if (decision === "wait") continue;
      if (r.cancel_requested) decisions.push({ id: Number(r.id), state: "skipped", reason: "run canceled" });
      // Its mapped steps all succeeded: the expanded step gathers them, here, without running anything.
      else if (decision === "run" && r.map_count !== null) decisions.push({ id: Number(r.id), state: "success", reason: null });
      else if (decision === "run") decisions.push({ id: Number(r.id), state: "scheduled", reason: null });
      else if (r.map_count !== null) {
        decisions.push({
          id: Number(r.id),
          state: decision,
          reason:
            decision === "skipped"
              ? `mapped step ${r.skipped_item ?? "?"} was skipped: the partition's outputs are not all there to gather`
              : `mapped step ${r.failed_item ?? "?"} failed: the partition's outputs are not all there to gather`,
        });
      } else {
        decisions.push({
          id: Number(r.id),
          state: decision,
          reason:
            decision === "skipped"
              ? `trigger rule ${r.trigger_rule}: upstream steps were skipped or did not meet it`
              : r.failed_check
                ? `not run on data that failed its checks: ${r.failed_check}`
                : null,
        });
      }
    }
    if (decisions.length === 0) break;
    await sql`
      update steps set state = x.state, skip_reason = x.reason, updated_at = ${now},
                       scheduled_at = case when x.state = 'scheduled' then ${now}::timestamptz else steps.scheduled_at end,
                       ended_at = case when x.state = 'scheduled' then null else ${now}::timestamptz end
      from jsonb_to_recordset(${toJson(decisions)}::jsonb) as x(id bigint, state text, reason text)
      where steps.id = x.id and steps.state = 'pending'`.execute(trx);
    await recordGathered(trx, decisions.filter((d) => d.state === "success").map((d) => d.id), now);
    const rowById = new Map(rows.map((r) => [Number(r.id), r]));
    frontier = [];
    for (const d of decisions) {
      if (d.state === "scheduled") {
        scheduled.push(d.id);
        continue;
      }
      const r = rowById.get(d.id)!;
      frontier.push(d.id);
      cascaded.push({ id: d.id, run_id: r.run_id, state: d.state, wasActive: false, pool: r.pool, pool_slots: r.pool_slots });
    }
  }
  return { scheduled, cascaded };
}

/** Changes to a run's counters besides its steps' own moves: steps added (an expansion), steps counted done no more. */
interface RunAdjust {
  total: number;
  done: number;
  failed: number;
  /** Plan versions to add (one per expansion or clear). */
  plan: number;
}

function addAdjust(map: Map<string, RunAdjust>, runId: string, a: Partial<RunAdjust>): void {
  const cur = map.get(runId) ?? { total: 0, done: 0, failed: 0, plan: 0 };
  cur.total += a.total ?? 0;
  cur.done += a.done ?? 0;
  cur.failed += a.failed ?? 0;
  cur.plan += a.plan ?? 0;
  map.set(runId, cur);
}

/** Keeps the run counters in step and finishes runs whose steps are all done. */
async function updateRunCounters(
  trx: Trx,
  changes: readonly StepChange[],
  now: Date,
  adjust: ReadonlyMap<string, RunAdjust> = new Map(),
): Promise<{ runId: string; status: RunStatus }[]> {
  const perRun = new Map<string, { done: number; failed: number; active: number; total: number; plan: number }>();
  const agg = (runId: string) => {
    let a = perRun.get(runId);
    if (!a) perRun.set(runId, (a = { done: 0, failed: 0, active: 0, total: 0, plan: 0 }));
    return a;
  };
  for (const c of changes) {
    const a = agg(c.run_id);
    if (isTerminalState(c.state)) a.done++;
    if (c.state === "failed" || c.state === "upstream_failed") a.failed++;
    if (c.wasActive) a.active++;
  }
  for (const [runId, x] of adjust) {
    const a = agg(runId);
    a.total += x.total;
    a.done += x.done;
    a.failed += x.failed;
    a.plan += x.plan;
  }
  await lockRuns(trx, [...perRun.keys()]);
  const input = toJson([...perRun].map(([run_id, a]) => ({ run_id, ...a })));
  const { rows } = await sql<{ id: string; status: RunStatus; finished: boolean }>`
    update runs set
      steps_total = runs.steps_total + x.total,
      steps_done = runs.steps_done + x.done,
      steps_failed = runs.steps_failed + x.failed,
      steps_active = greatest(0, runs.steps_active - x.active),
      plan_version = runs.plan_version + x.plan,
      status = case
        when runs.status not in ('queued', 'running') then runs.status
        when runs.steps_done + x.done < runs.steps_total + x.total then runs.status
        when runs.cancel_requested_at is not null then 'canceled'
        when runs.steps_failed + x.failed > 0 then 'failed'
        else 'success' end,
      ended_at = case when runs.status in ('queued', 'running') and runs.steps_done + x.done >= runs.steps_total + x.total
                      then ${now}::timestamptz else runs.ended_at end,
      updated_at = ${now}
    from jsonb_to_recordset(${input}::jsonb) as x(run_id uuid, done int, failed int, active int, total int, plan int)
    where runs.id = x.run_id
    returning runs.id, runs.status, (runs.ended_at = ${now}::timestamptz) as finished`.execute(trx);
  return rows.filter((r) => r.finished && r.status !== "running" && r.status !== "queued").map((r) => ({ runId: r.id, status: r.status }));
}

/** What one claim may take: executor kinds with their free slots, how many to look at, the aging share. */
interface ClaimScope {
  readonly kindNames: readonly string[];
  readonly capacity: ReadonlyMap<string, number>;
  readonly limit: number;
  readonly agingLimit: number;
  readonly now: Date;
  readonly defaultPoolSlots: number;
  /** Claim only among these steps (the follow-up claim of a completion). */
  readonly onlyIds?: readonly number[];
}

/**
 * Picks runnable steps in preference order, admits those that fit (executor
 * capacity, pool slots, asset and run limits) and hands them out, inside the
 * caller's transaction.
 */
async function claimIn(trx: Trx, o: ClaimScope): Promise<{ foundWork: boolean; steps: ClaimedStep[] }> {
  // Highest priority first, deeper steps first among equals (chains finish
  // instead of queueing behind every root), then FIFO; plus a share of the
  // longest-waiting steps whatever their priority, so low-priority work
  // (backfills) never starves. One statement picks and locks them.
  const { kindNames, limit, agingLimit, now } = o;
  const candidates = o.onlyIds
    ? await sql<Candidate>`
        select s.id, s.run_id, s.asset_key, s.pool, s.pool_slots, s.executor, s.max_concurrency, s.priority, s.depth,
               false as aged, r.status as run_status, r.cancel_requested_at, r.max_active_steps, r.steps_active
        from steps s join runs r on r.id = s.run_id
        where s.state = 'scheduled' and s.id = any(${o.onlyIds}::bigint[]) and s.executor = any(${kindNames}::text[])
        for no key update of s skip locked`.execute(trx)
    : await sql<Candidate>`
        select s.id, s.run_id, s.asset_key, s.pool, s.pool_slots, s.executor, s.max_concurrency, s.priority, s.depth,
               (s.id in (select id from steps where state = 'scheduled' and executor = any(${kindNames}::text[])
                         order by scheduled_at, id limit ${agingLimit}::int)) as aged,
               r.status as run_status, r.cancel_requested_at, r.max_active_steps, r.steps_active
        from steps s join runs r on r.id = s.run_id
        where s.state = 'scheduled' and (
          s.id in (select id from steps where state = 'scheduled' and executor = any(${kindNames}::text[])
                   order by priority desc, depth desc, id limit ${limit}::int)
          or s.id in (select id from steps where state = 'scheduled' and executor = any(${kindNames}::text[])
                      order by scheduled_at, id limit ${agingLimit}::int))
        for no key update of s skip locked`.execute(trx);
  if (candidates.rows.length === 0) return { foundWork: false, steps: [] };
  const order = candidates.rows
    .map((c) => ({ ...c, id: Number(c.id) }))
    .sort((x, y) => Number(y.aged) - Number(x.aged) || y.priority - x.priority || y.depth - x.depth || x.id - y.id);

  const poolFree = await lockPools(trx, [...new Set(order.map((d) => d.pool))], o.defaultPoolSlots);
  const limitedAssets = [...new Set(order.filter((d) => d.max_concurrency !== null).map((d) => d.asset_key))];
  const assetActive = new Map<string, number>();
  if (limitedAssets.length > 0) {
    const counts = await sql<{ asset_key: string; n: number }>`
      select asset_key, count(*)::int as n from steps
      where state in ('queued', 'running') and asset_key = any(${limitedAssets}::text[]) group by asset_key`.execute(trx);
    for (const c of counts.rows) assetActive.set(c.asset_key, c.n);
  }
  const admitted = admit(order, { capacity: new Map(o.capacity), poolFree, assetActive });
  if (admitted.length === 0) return { foundWork: true, steps: [] };
  const admittedSet = new Set(admitted);
  await lockRuns(trx, order.filter((d) => admittedSet.has(d.id)).map((d) => d.run_id));

  // Hand them out: state, try row, pool slots and run counters in one statement.
  const { rows } = await sql<{
    id: number;
    run_id: string;
    try_number: number;
    asset_key: string;
    partition_key: string;
    map_index: number;
    executor: string;
    queue: string | null;
    timeout_ms: number | null;
    last_try: number;
    snapshot_version: number;
    wait_started_at: Date | null;
    resumed: FiredTrigger[] | null;
    check_name: string | null;
    map_item: unknown;
    map_label: string | null;
  }>`
    with upd as (
      update steps set state = 'queued', queued_at = ${now}, try_number = try_number + 1, updated_at = ${now},
                       error = null, worker_id = null, started_at = null, ended_at = null, heartbeat_at = null
      where id = any(${admitted}::bigint[]) and state = 'scheduled'
      returning id, run_id, try_number, asset_key, partition_key, map_index, executor, queue, timeout_ms, pool, pool_slots,
                max_tries + tries_before as last_try, trigger_id, wait_started_at, check_name, map_item, map_label
    ), tries as (
      insert into step_tries (step_id, run_id, try_number, state, executor, queued_at)
      select id, run_id, try_number, 'queued', executor, ${now} from upd
    ), pool_use as (
      update pools set occupied_slots = occupied_slots + u.n, updated_at = ${now}
      from (select pool, sum(pool_slots)::int as n from upd group by pool) u where pools.name = u.pool
    ), run_use as (
      update runs set steps_active = steps_active + u.n, updated_at = ${now}
      from (select run_id, count(*)::int as n from upd group by run_id) u where runs.id = u.run_id
      returning runs.id, runs.snapshot_version
    )
    select upd.id, upd.run_id, upd.try_number, upd.asset_key, upd.partition_key, upd.map_index, upd.executor, upd.queue,
           upd.timeout_ms, upd.last_try, run_use.snapshot_version, upd.wait_started_at, upd.check_name, upd.map_item, upd.map_label,
           -- A step that deferred gets back what its fired triggers found.
           case when upd.trigger_id is null then null else (
             select jsonb_agg(jsonb_build_object('kind', t.kind, 'args', t.args, 'payload', t.payload) order by t.id)
             from triggers t where t.step_id = upd.id and t.status = 'fired') end as resumed
    from upd join run_use on run_use.id = upd.run_id`.execute(trx);
  const steps = rows
    .map(
      (r): ClaimedStep => ({
        stepId: Number(r.id),
        runId: r.run_id,
        tryNumber: r.try_number,
        assetKey: r.asset_key,
        partitionKey: r.partition_key,
        mapIndex: r.map_index,
        executor: r.executor,
        queue: r.queue,
        timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
        lastTry: r.last_try,
        snapshotVersion: r.snapshot_version,
        resumed: r.resumed ?? [],
        waitStartedAt: r.wait_started_at,
        checkName: r.check_name,
        mapItem: r.map_item ?? null,
        mapLabel: r.map_label,
      }),
    )
    .sort((x, y) => admitted.indexOf(x.stepId) - admitted.indexOf(y.stepId));
  return { foundWork: true, steps };
}

interface Candidate {
  id: number;
  run_id: string;
  asset_key: string;
  pool: string;
  pool_slots: number;
  executor: string;
  max_concurrency: number | null;
  priority: number;
  depth: number;
  aged: boolean;
  run_status: RunStatus;
  cancel_requested_at: Date | null;
  max_active_steps: number | null;
  steps_active: number;
}

/**
 * Which candidates (in preference order) fit: executor capacity, pool slots,
 * the asset's maxConcurrency and the run's max active steps. The counters
 * passed in are consumed as steps are admitted.
 */
function admit(
  order: readonly Candidate[],
  state: { capacity: Map<string, number>; poolFree: Map<string, number>; assetActive: Map<string, number> },
): number[] {
  const runActive = new Map<string, number>();
  const admitted: number[] = [];
  for (const d of order) {
    if (d.run_status !== "running" || d.cancel_requested_at) continue;
    const free = state.capacity.get(d.executor) ?? 0;
    if (free <= 0) continue;
    const poolLeft = state.poolFree.get(d.pool) ?? 0;
    if (poolLeft < d.pool_slots) continue;
    if (d.max_concurrency !== null && (state.assetActive.get(d.asset_key) ?? 0) >= d.max_concurrency) continue;
    const active = runActive.get(d.run_id) ?? d.steps_active;
    if (d.max_active_steps !== null && active >= d.max_active_steps) continue;
    admitted.push(d.id);
    state.capacity.set(d.executor, free - 1);
    state.poolFree.set(d.pool, poolLeft - d.pool_slots);
    state.assetActive.set(d.asset_key, (state.assetActive.get(d.asset_key) ?? 0) + 1);
    runActive.set(d.run_id, active + 1);
  }
  return admitted;
}

/**
 * Locks the pools' rows (creating missing ones) and returns their free slots.
 * The lock serialises concurrent dispatchers per pool, so a pool's slots are
 * never exceeded however many reconcilers run.
 */
async function lockPools(trx: Trx, names: readonly string[], defaultSlots: number): Promise<Map<string, number>> {
  const sorted = [...names].sort();
  const select = () => sql<{ name: string; slots: number; occupied_slots: number }>`
    select name, slots, occupied_slots from pools where name = any(${sorted}::text[]) order by name for no key update`.execute(trx);
  let { rows } = await select();
  if (rows.length < sorted.length) {
    await sql`
      insert into pools (name, slots, description)
      select n, ${defaultSlots}::int, 'created on first use by a step'
      from unnest(${sorted}::text[]) n on conflict (name) do nothing`.execute(trx);
    ({ rows } = await select());
  }
  return new Map(rows.map((p) => [p.name, p.slots - p.occupied_slots]));
}

/**
 * Locks runs rows in id order. Transactions that update several runs (claims,
 * completions, housekeeping) lock them this way first, after their steps and
 * pools: taken in the order an UPDATE … FROM happens to visit them, two
 * transactions touching the same runs deadlock (as pools, locked by name).
 * Row locks throughout are FOR NO KEY UPDATE, never FOR UPDATE: updating a step
 * a second time in one transaction (propagated, then claimed) re-checks its
 * foreign key and takes KEY SHARE on the run, which FOR UPDATE waits for; two
 * completions in one run would each hold that and wait for the other.
 */
async function lockRuns(trx: Trx, runIds: readonly string[]): Promise<void> {
  if (runIds.length === 0) return;
  await sql`select id from runs where id = any(${[...new Set(runIds)]}::uuid[]) order by id for no key update`.execute(trx);
}

async function adjustPools(trx: Trx, taken: readonly { pool: string; slots: number }[], sign: 1 | -1): Promise<void> {
  if (taken.length === 0) return;
  const perPool = new Map<string, number>();
  for (const t of taken) perPool.set(t.pool, (perPool.get(t.pool) ?? 0) + t.slots);
  await sql`select name from pools where name = any(${[...perPool.keys()]}::text[]) order by name for no key update`.execute(trx);
  const input = toJson([...perPool].map(([name, n]) => ({ name, n: n * sign })));
  await sql`
    update pools set occupied_slots = greatest(0, occupied_slots + x.n), updated_at = now()
    from jsonb_to_recordset(${input}::jsonb) as x(name text, n int)
    where pools.name = x.name`.execute(trx);
}

async function adjustRunActive(trx: Trx, runIds: readonly string[], sign: 1 | -1, now: Date): Promise<void> {
  if (runIds.length === 0) return;
  const perRun = new Map<string, number>();
  for (const r of runIds) perRun.set(r, (perRun.get(r) ?? 0) + 1);
  await lockRuns(trx, [...perRun.keys()]);
  const input = toJson([...perRun].map(([run_id, n]) => ({ run_id, n: n * sign })));
  await sql`
    update runs set steps_active = greatest(0, steps_active + x.n), updated_at = ${now}
    from jsonb_to_recordset(${input}::jsonb) as x(run_id uuid, n int)
    where runs.id = x.run_id`.execute(trx);
}

function errorOf(c: StepCompletion, step: LockedStep): SerializedError | null {
  if (c.outcome === "check") {
    if (c.passed || !c.check.blocking) return null;
    const why = c.error ? `: it threw ${c.error.message}` : "";
    return {
      name: "CheckFailed",
      code: "CHECK_FAILED",
      message: `blocking check "${c.check.name}" of asset "${step.asset_key}" failed on ${step.partition_key ? `partition "${step.partition_key}"` : "the asset"}${why}`,
      ...(c.error ? { cause: c.error } : {}),
    };
  }
  return c.outcome === "failed" || c.outcome === "released" ? c.error : null;
}

/**
 * Results of the check steps that ended: one row per try (a verdict, or a failed result carrying the error of
 * a step that never reached one: a timeout, a check gone from its file). A failed blocking check marks the
 * partition's latest materialisation — when it is the one judged — as failing its checks; a pass of the same
 * check on it clears the mark. Every failure is alerted to the asset's owner (blocking or not).
 */
async function recordCheckResults(
  trx: Trx,
  ended: readonly { c: StepCompletion; step: LockedStep; state: StepState }[],
  now: Date,
): Promise<void> {
  if (ended.length === 0) return;
  const rows = ended.map(({ c, step, state }) => {
    const verdict = c.outcome === "check" ? c : undefined;
    const error = verdict ? verdict.error : c.outcome === "failed" || c.outcome === "released" ? c.error : null;
    return {
      asset_key: step.asset_key,
      partition_key: step.partition_key,
      check_name: step.check_name!,
      run_id: step.run_id,
      step_id: step.id,
      try_number: c.tryNumber,
      passed: verdict?.passed === true,
      severity: verdict?.check.severity ?? "error",
      // Without a verdict the step's own state says whether it blocked its readers.
      blocking: verdict ? verdict.check.blocking : state === "failed",
      metadata: verdict?.metadata ?? {},
      error: error ? { code: error.code, message: error.message } : null,
      event_id: verdict?.eventId ?? null,
      alert: !(verdict?.passed === true) && !step.cancel_requested && state !== "skipped" && state !== "removed",
    };
  });
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, partition_key text, check_name text, run_id uuid, step_id bigint, try_number int, passed boolean,
             severity text, blocking boolean, metadata jsonb, error jsonb, event_id bigint, alert boolean)
    ), ins as (
      insert into check_results (asset_key, check_name, partition_key, run_id, step_id, event_id, passed, severity, blocking,
                                 metadata, try_number, error, created_at)
      select asset_key, check_name, partition_key, run_id, step_id, event_id, passed, severity, blocking, metadata, try_number,
             error, ${now}
      from x
      on conflict (step_id, try_number) where step_id is not null do nothing
    )
    insert into alerts (cause_key, kind, asset_key, partition_key, run_id, owner, payload, next_attempt_at, created_at)
    select 'check_failed:' || x.step_id || ':' || x.try_number, 'check_failed', x.asset_key, nullif(x.partition_key, ''),
           x.run_id, a.owner,
           jsonb_build_object('asset', x.asset_key, 'partition', nullif(x.partition_key, ''), 'run', x.run_id, 'step', x.step_id,
                              'check', x.check_name, 'blocking', x.blocking, 'severity', x.severity, 'metadata', x.metadata,
                              'error', x.error),
           ${now}, ${now}
    from x left join assets a on a.key = x.asset_key
    where x.alert
    on conflict (cause_key) do nothing`.execute(trx);
  // The mark follows the latest verdict of a blocking check on the materialisation it judged.
  const marks = rows.filter((r) => r.blocking && r.event_id !== null);
  if (marks.length > 0) {
    // Per partition at once (two checks of one partition may end in one batch): a failure wins over a pass.
    await sql`
      update partition_status ps
      set failed_check = coalesce(g.failing, case when ps.failed_check = any(g.passing) then null else ps.failed_check end),
          updated_at = ${now}
      from (
        select asset_key, partition_key, event_id,
               min(check_name) filter (where not passed) as failing,
               coalesce(array_agg(check_name) filter (where passed), '{}') as passing
        from jsonb_to_recordset(${toJson(marks)}::jsonb) as x(asset_key text, partition_key text, check_name text, passed boolean, event_id bigint)
        group by asset_key, partition_key, event_id
      ) g
      where ps.asset_key = g.asset_key and ps.partition_key = g.partition_key and ps.last_materialization_event_id = g.event_id`.execute(trx);
    // In the event stream too, so automation's cached view of what is materialised follows the verdicts.
    await sql`
      insert into events (kind, asset_key, partition_key, run_id, step_id, try_number, metadata, created_at)
      select 'check_result', x.asset_key, x.partition_key, x.run_id, x.step_id, x.try_number,
             jsonb_build_object('check', x.check_name, 'passed', x.passed, 'blocking', true, 'judgedEventId', x.event_id), ${now}
      from jsonb_to_recordset(${toJson(marks)}::jsonb)
        as x(asset_key text, partition_key text, check_name text, passed boolean, event_id bigint, run_id uuid, step_id bigint, try_number int)`.execute(trx);
  }
}

function isTerminalState(state: StepState): state is Terminal | "removed" {
  return state === "success" || state === "failed" || state === "skipped" || state === "upstream_failed" || state === "removed";
}

function toRunSummary(r: {
  id: string;
  status: RunStatus;
  origin: RunSummary["origin"];
  snapshot_version: number;
  job_name: string | null;
  priority: number;
  tags: Record<string, unknown>;
  steps_total: number;
  steps_done: number;
  steps_failed: number;
  steps_active: number;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  cancel_requested_at: Date | null;
  backfill_id: string | null;
  plan_version: number;
}): RunSummary {
  return {
    id: r.id,
    status: r.status,
    origin: r.origin,
    snapshotVersion: r.snapshot_version,
    jobName: r.job_name,
    priority: r.priority,
    tags: r.tags,
    stepsTotal: r.steps_total,
    stepsDone: r.steps_done,
    stepsFailed: r.steps_failed,
    stepsActive: r.steps_active,
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    cancelRequestedAt: r.cancel_requested_at,
    backfillId: r.backfill_id,
    planVersion: r.plan_version,
  };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

function runNotFound(runId: string): InputError {
  return new InputError(`no run has the id "${runId}"; list runs with \`tributary runs\``, { code: "RUN_NOT_FOUND" });
}

import { sql, type Kysely, type Transaction } from "kysely";
import type { RunDecisions } from "./run-decisions.js";
import { InputError, type SerializedError } from "../errors/index.js";
import type { Database, TriggerStatus } from "./database.js";
import { notifyIn } from "./database-handle.js";
import { toJson, type JsonValue } from "./json.js";
import { recordObservationsIn, recordObservationTimeoutsIn } from "./pg-observation-store.js";
import { TRIGGERS_CHANNEL, WAKE_CHANNEL } from "./runs/channels.js";
import { completeStepsIn } from "./runs/complete.js";
import { releaseDeferredPoolSlotsIn } from "./runs/pools.js";
import type { StepCompletion } from "./run-store.js";
import type {
  ClaimedTrigger,
  CreatedTrigger,
  ExpireResult,
  NewTrigger,
  RecordChecksResult,
  TriggerCheckResult,
  TriggerRecord,
  TriggerStore,
  TriggerWindow,
} from "./trigger-store.js";

/** Backoff after failed checks never waits longer than this (or the poll interval, if longer). */
export const TRIGGER_MAX_BACKOFF_MS = 15 * 60_000;
export { TRIGGERS_CHANNEL };
const EXPIRE_BATCH = 1000;
/** The column default (migration 0007). */
const DEFAULT_POLL_INTERVAL_MS = 5000;

type Trx = Transaction<Database>;

interface TriggerRow {
  id: string | number;
  kind: string;
  args: Record<string, unknown>;
  step_id: string | number | null;
  asset_key: string | null;
  partition_key: string | null;
  status: TriggerStatus;
  attempts: number;
  next_check_at: Date;
  timeout_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  last_checked_at: Date | null;
  last_result: JsonValue | null;
  payload: JsonValue | null;
  error: JsonValue | null;
  ended_at: Date | null;
  partition_window: TriggerWindow | null;
  poll_interval_ms: number;
  soft_fail: boolean;
  try_number: number | null;
}

/** Delay before the next check after `failures` consecutive failed checks (1 → one poll interval, then doubling). */
export function triggerBackoffMs(pollIntervalMs: number, failures: number): number {
  const cap = Math.max(pollIntervalMs, TRIGGER_MAX_BACKOFF_MS);
  return Math.min(cap, pollIntervalMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

/**
 * TriggerStore in Postgres SQL (server Postgres and PGlite). Batches travel
 * as one JSON parameter, so a call costs a few statements whatever its size.
 * Lock order: triggers, then steps (then, inside the step completion path,
 * pools and runs), the same in every transaction here.
 */
export class PgTriggerStore implements TriggerStore {
  readonly #db: Kysely<Database>;
  readonly #decisions: RunDecisions;

  /** `decisions`: what ending a deferred step applies downstream (trigger rules) and to its retries. */
  constructor(db: Kysely<Database>, decisions: RunDecisions) {
    this.#db = db;
    this.#decisions = decisions;
  }

  async createTriggers(rows: readonly NewTrigger[], now: Date): Promise<CreatedTrigger[]> {
    if (rows.length === 0) return [];
    rows.forEach(validate);
    const input = rows.map((r, i) => ({
      i,
      kind: r.kind,
      args: r.args ?? {},
      step_id: r.stepId ?? null,
      asset_key: r.stepId === undefined ? r.assetKey : null,
      partition_key: r.stepId === undefined ? (r.partitionKey ?? null) : null,
      next_check_at: (r.nextCheckAt ?? now).toISOString(),
      timeout_at: r.timeoutAt?.toISOString() ?? null,
      partition_window: r.partitionWindow ?? null,
      poll_interval_ms: r.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
      soft_fail: r.softFail ?? false,
    }));
    const steps = input.filter((r) => r.step_id !== null);
    const observations = input.filter((r) => r.step_id === null);
    return this.#db.transaction().execute(async (trx) => {
      const created = new Set<number>();
      const cols = sql`x(i int, kind text, args jsonb, step_id bigint, asset_key text, partition_key text,
                         next_check_at timestamptz, timeout_at timestamptz, partition_window jsonb,
                         poll_interval_ms int, soft_fail boolean)`;
      if (steps.length > 0) {
        const { rows: ins } = await sql<{ id: string }>`
          insert into triggers (kind, args, step_id, asset_key, partition_key, next_check_at, timeout_at, partition_window,
                                poll_interval_ms, soft_fail, try_number, created_at, updated_at)
          select x.kind, x.args, x.step_id, s.asset_key, s.partition_key, x.next_check_at, x.timeout_at, x.partition_window,
                 x.poll_interval_ms, x.soft_fail, nullif(s.try_number, 0), ${now}, ${now}
          from jsonb_to_recordset(${toJson(steps)}::jsonb) as ${cols}
          join steps s on s.id = x.step_id
          order by x.step_id
          on conflict (step_id) where status = 'waiting' and step_id is not null do nothing
          returning id`.execute(trx);
        ins.forEach((r) => created.add(Number(r.id)));
      }
      if (observations.length > 0) {
        const { rows: ins } = await sql<{ id: string }>`
          insert into triggers (kind, args, asset_key, partition_key, next_check_at, timeout_at, partition_window,
                                poll_interval_ms, soft_fail, created_at, updated_at)
          select x.kind, x.args, x.asset_key, x.partition_key, x.next_check_at, x.timeout_at, x.partition_window,
                 x.poll_interval_ms, x.soft_fail, ${now}, ${now}
          from jsonb_to_recordset(${toJson(observations)}::jsonb) as ${cols}
          order by x.asset_key, x.partition_key, x.kind
          on conflict (asset_key, (coalesce(partition_key, '')), kind)
            where status = 'waiting' and step_id is null and asset_key is not null do nothing
          returning id`.execute(trx);
        ins.forEach((r) => created.add(Number(r.id)));
      }
      // The waiting trigger of every input row, new or already there.
      const { rows: found } = await sql<{ i: number; id: string }>`
        select x.i, t.id
        from jsonb_to_recordset(${toJson(input)}::jsonb) as ${cols}
        join triggers t on t.status = 'waiting' and (
          (x.step_id is not null and t.step_id = x.step_id)
          or (x.step_id is null and t.step_id is null and t.asset_key = x.asset_key
              and coalesce(t.partition_key, '') = coalesce(x.partition_key, '') and t.kind = x.kind))`.execute(trx);
      const idOf = new Map(found.map((r) => [r.i, Number(r.id)]));
      // A deferred step shows what it waits for.
      const stepLinks = steps.map((s) => ({ step_id: s.step_id, trigger_id: idOf.get(s.i) ?? null }));
      if (stepLinks.length > 0) {
        await sql`
          update steps set trigger_id = x.trigger_id, updated_at = ${now}
          from jsonb_to_recordset(${toJson(stepLinks)}::jsonb) as x(step_id bigint, trigger_id bigint)
          where steps.id = x.step_id and steps.trigger_id is distinct from x.trigger_id`.execute(trx);
      }
      if (created.size > 0) await notifyIn(trx, TRIGGERS_CHANNEL, "");
      return input.map((r) => {
        const id = idOf.get(r.i);
        if (id === undefined) throw new Error(`trigger for input row ${r.i} vanished while it was created`);
        return { id, created: created.has(id) };
      });
    });
  }

  async claimDue(owner: string, now: Date, options: { limit: number; leaseMs: number }): Promise<ClaimedTrigger[]> {
    if (options.limit <= 0) return [];
    const expires = new Date(now.getTime() + options.leaseMs);
    // One statement: the lock (SKIP LOCKED, so concurrent triggerers take
    // disjoint rows) and the lease are taken together.
    const { rows } = await sql<TriggerRow>`
      with due as (
        select id from triggers
        where status = 'waiting' and next_check_at <= ${now}
          and (lease_expires_at is null or lease_expires_at <= ${now})
        order by next_check_at, id
        limit ${options.limit}
        for no key update skip locked
      )
      update triggers t set lease_owner = ${owner}, lease_expires_at = ${expires}, updated_at = ${now}
      from due where t.id = due.id
      returning t.*`.execute(this.#db);
    return rows
      .map((r): ClaimedTrigger => ({ ...baseOf(r), leaseExpiresAt: r.lease_expires_at ?? expires }))
      .sort((a, b) => a.nextCheckAt.getTime() - b.nextCheckAt.getTime() || a.id - b.id);
  }

  async renewLeases(owner: string, now: Date, leaseMs: number): Promise<number> {
    const expires = new Date(now.getTime() + leaseMs);
    // Only leases still held: one that lapsed may have been taken over, and
    // one that lapsed but was not taken is still this owner's to keep.
    const result = await sql`
      update triggers set lease_expires_at = ${expires}, updated_at = ${now}
      where status = 'waiting' and lease_owner = ${owner}`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0);
  }

  async releaseLeases(owner: string): Promise<number> {
    const result = await sql`
      update triggers set lease_owner = null, lease_expires_at = null, updated_at = now()
      where status = 'waiting' and lease_owner = ${owner}`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0);
  }

  async recordChecks(owner: string, results: readonly TriggerCheckResult[], now: Date): Promise<RecordChecksResult> {
    const empty = { applied: 0, ignored: [], fired: [], canceled: [], scheduledSteps: [], failed: [], failedSteps: [] };
    if (results.length === 0) return empty;
    return this.#db.transaction().execute(async (trx) => {
      const ids = [...new Set(results.map((r) => r.triggerId))].sort((a, b) => a - b);
      const { rows: held } = await sql<HeldTrigger & { error: { consecutiveFailures?: number } | null }>`
        select id, kind, step_id, asset_key, partition_key, error from triggers
        where id = any(${ids}::bigint[]) and status = 'waiting' and lease_owner = ${owner}
        order by id for no key update`.execute(trx);
      const heldById = new Map(held.map((r) => [Number(r.id), r]));
      const ignored: number[] = [];
      const seen = new Set<number>();
      const waits: { id: number; checks: number; last_result: JsonValue | null; next_check_at: string; error: JsonValue | null }[] = [];
      const fires: Ending<{ checks: number; payload: JsonValue }>[] = [];
      const failures: Ending<{ checks: number; error: SerializedError }>[] = [];
      for (const r of results) {
        const row = heldById.get(r.triggerId);
        // A takeover wins; a second result for one trigger in a batch is dropped.
        if (!row || seen.has(r.triggerId)) {
          ignored.push(r.triggerId);
          continue;
        }
        seen.add(r.triggerId);
        if (r.outcome === "fired") {
          fires.push({ ...ending(row), checks: r.checks ?? 1, payload: r.payload });
        } else if (r.outcome === "failed") {
          failures.push({ ...ending(row), checks: r.checks ?? 1, error: r.error });
        } else if (r.outcome === "waiting") {
          waits.push({
            id: r.triggerId,
            checks: r.checks ?? 1,
            last_result: r.result ?? null,
            next_check_at: new Date(now.getTime() + r.pollIntervalMs).toISOString(),
            error: null,
          });
        } else {
          const consecutive = (row.error?.consecutiveFailures ?? 0) + 1;
          waits.push({
            id: r.triggerId,
            checks: r.checks ?? 1,
            last_result: { error: r.error.message },
            next_check_at: new Date(now.getTime() + triggerBackoffMs(r.pollIntervalMs, consecutive)).toISOString(),
            error: { ...r.error, consecutiveFailures: consecutive } as unknown as JsonValue,
          });
        }
      }
      if (waits.length > 0) {
        await sql`
          update triggers t set attempts = t.attempts + x.checks, last_checked_at = ${now}, last_result = x.last_result,
                 next_check_at = x.next_check_at, error = x.error, updated_at = ${now}
          from jsonb_to_recordset(${toJson(waits)}::jsonb)
            as x(id bigint, checks int, last_result jsonb, next_check_at timestamptz, error jsonb)
          where t.id = x.id`.execute(trx);
      }
      const { canceled, scheduledSteps } = await fire(trx, fires, now);
      const failedSteps = await fail(trx, this.#decisions, failures, now);
      return {
        applied: waits.length + fires.length + failures.length,
        ignored,
        fired: fires.map((f) => f.id).filter((id) => !canceled.includes(id)),
        canceled,
        scheduledSteps,
        failed: failures.map((f) => f.id),
        failedSteps,
      };
    });
  }

  async expire(now: Date, options: { limit?: number } = {}): Promise<ExpireResult> {
    const limit = options.limit ?? EXPIRE_BATCH;
    return this.#db.transaction().execute(async (trx) => {
      // Whoever holds the lease: a timeout ends the wait; the holder's later
      // result is ignored because the trigger is no longer waiting.
      const { rows } = await sql<HeldTrigger & { soft_fail: boolean }>`
        with due as (
          select id from triggers
          where status = 'waiting' and timeout_at is not null and timeout_at <= ${now}
          order by timeout_at, id limit ${limit}
          for no key update skip locked
        )
        update triggers t set status = 'timed_out', ended_at = ${now}, updated_at = ${now},
               lease_owner = null, lease_expires_at = null
        from due where t.id = due.id
        returning t.id, t.kind, t.step_id, t.asset_key, t.partition_key, t.soft_fail`.execute(trx);
      if (rows.length === 0) return { timedOut: [], failedSteps: [], skippedSteps: [] };
      const ended = rows.map((r) => ({ ...ending(r), softFail: r.soft_fail }));
      const observations = ended.filter((t) => t.stepId === null).map(observationOf);
      if (observations.length > 0) await recordObservationTimeoutsIn(trx, observations, now);
      const failedSteps: number[] = [];
      const skippedSteps: number[] = [];
      await endDeferredSteps(trx, this.#decisions, ended, now, (step, trigger) => {
        const message =
          `${describeStep(step)} waited on a "${trigger.kind}" trigger (id ${trigger.id}) past its timeout; ` +
          `check that the awaited data arrives, or raise the wait's timeout`;
        if (trigger.softFail) {
          skippedSteps.push(step.id);
          return { outcome: "skipped", reason: `trigger timed out (softFail): ${message}` };
        }
        failedSteps.push(step.id);
        const error: SerializedError = { name: "TriggerTimeoutError", code: "TRIGGER_TIMED_OUT", message, location: stepLocation(step) };
        return { outcome: "failed", error, retryable: false };
      });
      return { timedOut: rows.map((r) => Number(r.id)), failedSteps, skippedSteps };
    });
  }

  async getTriggers(ids: readonly number[]): Promise<TriggerRecord[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<TriggerRow>`select * from triggers where id = any(${[...ids]}::bigint[]) order by id`.execute(this.#db);
    return rows.map((r) => ({
      ...baseOf(r),
      status: r.status,
      leaseOwner: r.lease_owner,
      leaseExpiresAt: r.lease_expires_at,
      lastCheckedAt: r.last_checked_at,
      payload: r.payload,
      error: r.error,
      endedAt: r.ended_at,
    }));
  }
}

function baseOf(r: TriggerRow): Omit<ClaimedTrigger, "leaseExpiresAt"> {
  return {
    id: Number(r.id),
    kind: r.kind,
    args: r.args,
    stepId: r.step_id === null ? null : Number(r.step_id),
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    partitionWindow: r.partition_window,
    pollIntervalMs: r.poll_interval_ms,
    softFail: r.soft_fail,
    tryNumber: r.try_number,
    attempts: r.attempts,
    nextCheckAt: r.next_check_at,
    timeoutAt: r.timeout_at,
    lastResult: r.last_result,
  };
}

/** The columns that say what an ending trigger was for. */
interface HeldTrigger {
  id: string;
  kind: string;
  step_id: string | null;
  asset_key: string | null;
  partition_key: string | null;
}

/** A trigger that ends in this transaction (fired, failed, timed out), with what the ending carries. */
type Ending<T = object> = { id: number; kind: string; stepId: number | null; assetKey: string | null; partitionKey: string | null } & T;

function ending(row: HeldTrigger): Ending {
  return {
    id: Number(row.id),
    kind: row.kind,
    stepId: row.step_id === null ? null : Number(row.step_id),
    assetKey: row.asset_key,
    partitionKey: row.partition_key,
  };
}

/** An observation trigger's source partition ("" for an unpartitioned source). */
function observationOf(t: Ending): { triggerId: number; assetKey: string; partitionKey: string } {
  return { triggerId: t.id, assetKey: t.assetKey ?? "", partitionKey: t.partitionKey ?? "" };
}

/**
 * Fired triggers: each deferred step goes back to `scheduled` (its trigger_id
 * points at the trigger holding the payload), gives back a pool slot it held
 * while deferred, and the reconcilers are woken; an observation trigger
 * records its source partition's observation. A step that is no longer
 * deferred (its run was canceled meanwhile) leaves its trigger `canceled` and
 * nothing else changes.
 */
async function fire(
  trx: Trx,
  fires: readonly Ending<{ checks: number; payload: JsonValue }>[],
  now: Date,
): Promise<{ canceled: number[]; scheduledSteps: number[] }> {
  if (fires.length === 0) return { canceled: [], scheduledSteps: [] };
  const stillDeferred = new Set((await lockDeferredSteps(trx, fires)).map((s) => s.id));
  const canceled = fires.filter((f) => f.stepId !== null && !stillDeferred.has(f.stepId)).map((f) => f.id);
  const canceledSet = new Set(canceled);
  const updates = fires.map((f) => ({
    id: f.id,
    checks: f.checks,
    status: canceledSet.has(f.id) ? "canceled" : "fired",
    payload: canceledSet.has(f.id) ? null : f.payload,
  }));
  await sql`
    update triggers t set status = x.status, payload = x.payload, ended_at = ${now}, last_checked_at = ${now},
           attempts = t.attempts + x.checks, lease_owner = null, lease_expires_at = null, updated_at = ${now}
    from jsonb_to_recordset(${toJson(updates)}::jsonb) as x(id bigint, checks int, status text, payload jsonb)
    where t.id = x.id`.execute(trx);
  const observations = fires.filter((f) => f.stepId === null).map((f) => ({ ...observationOf(f), payload: f.payload }));
  if (observations.length > 0) await recordObservationsIn(trx, observations, now);
  const links = fires
    .filter((f) => f.stepId !== null && stillDeferred.has(f.stepId))
    .map((f) => ({ step_id: f.stepId!, trigger_id: f.id }));
  if (links.length > 0) {
    await releaseDeferredPoolSlotsIn(
      trx,
      links.map((l) => l.step_id),
    );
    await sql`
      update steps set state = 'scheduled', scheduled_at = ${now}, trigger_id = x.trigger_id, next_retry_at = null,
             updated_at = ${now}
      from jsonb_to_recordset(${toJson(links)}::jsonb) as x(step_id bigint, trigger_id bigint)
      where steps.id = x.step_id and steps.state = 'deferred'`.execute(trx);
    await notifyIn(trx, WAKE_CHANNEL, "trigger");
  }
  return { canceled, scheduledSteps: links.map((l) => l.step_id) };
}

/**
 * Triggers that can never be checked (unknown kind, invalid args or
 * template) end `failed`, and their deferred steps fail for good with the
 * error, which then names the step's asset and partition. Returns the failed steps.
 */
async function fail(
  trx: Trx,
  decisions: RunDecisions,
  failures: readonly Ending<{ checks: number; error: SerializedError }>[],
  now: Date,
): Promise<number[]> {
  if (failures.length === 0) return [];
  const updates = failures.map((f) => ({ id: f.id, checks: f.checks, error: f.error, last_result: { error: f.error.message } }));
  await sql`
    update triggers t set status = 'failed', error = x.error, last_result = x.last_result, ended_at = ${now},
           last_checked_at = ${now}, attempts = t.attempts + x.checks, lease_owner = null, lease_expires_at = null, updated_at = ${now}
    from jsonb_to_recordset(${toJson(updates)}::jsonb) as x(id bigint, checks int, error jsonb, last_result jsonb)
    where t.id = x.id`.execute(trx);
  const failedSteps: number[] = [];
  await endDeferredSteps(trx, decisions, failures, now, (step, trigger) => {
    failedSteps.push(step.id);
    const error: SerializedError = {
      ...trigger.error,
      message: `${describeStep(step)} cannot wait on its "${trigger.kind}" trigger (id ${trigger.id}): ${trigger.error.message}`,
      location: { ...trigger.error.location, ...stepLocation(step) },
    };
    return { outcome: "failed", error, retryable: false };
  });
  return failedSteps;
}

interface DeferredStep {
  id: number;
  tryNumber: number;
  assetKey: string;
  partitionKey: string;
}

/** Locks the steps of these triggers that are still deferred (steps after triggers: the lock order). */
async function lockDeferredSteps(trx: Trx, triggers: readonly Ending[]): Promise<DeferredStep[]> {
  const stepIds = triggers.flatMap((t) => (t.stepId === null ? [] : [t.stepId])).sort((a, b) => a - b);
  if (stepIds.length === 0) return [];
  const { rows } = await sql<{ id: string; try_number: number; asset_key: string; partition_key: string }>`
    select id, try_number, asset_key, partition_key from steps
    where id = any(${stepIds}::bigint[]) and state = 'deferred' order by id for no key update`.execute(trx);
  return rows.map((r) => ({ id: Number(r.id), tryNumber: r.try_number, assetKey: r.asset_key, partitionKey: r.partition_key }));
}

type DeferredEnd = { outcome: "failed"; error: SerializedError; retryable: false } | { outcome: "skipped"; reason: string };

/**
 * Ends the still-deferred steps of these triggers through the same completion
 * path as a worker's report: run counters, downstream propagation
 * (upstream_failed / skipped), failure alerts.
 */
async function endDeferredSteps<T extends Ending>(
  trx: Trx,
  decisions: RunDecisions,
  triggers: readonly T[],
  now: Date,
  end: (step: DeferredStep, trigger: T) => DeferredEnd,
): Promise<void> {
  const byStep = new Map(triggers.flatMap((t) => (t.stepId === null ? [] : [[t.stepId, t] as const])));
  const completions: StepCompletion[] = (await lockDeferredSteps(trx, triggers)).map((step) => ({
    stepId: step.id,
    tryNumber: step.tryNumber,
    startedAt: null,
    endedAt: now,
    workerId: null,
    logRef: null,
    deferred: true,
    ...end(step, byStep.get(step.id)!),
  }));
  if (completions.length > 0) await completeStepsIn(trx, completions, now, decisions, Math.random);
}

function describeStep(step: DeferredStep): string {
  return step.partitionKey ? `asset "${step.assetKey}" partition "${step.partitionKey}"` : `asset "${step.assetKey}"`;
}

function stepLocation(step: DeferredStep): { assetKey: string; partitionKey?: string } {
  return { assetKey: step.assetKey, ...(step.partitionKey ? { partitionKey: step.partitionKey } : {}) };
}

function validate(row: NewTrigger, index: number): void {
  const where = `trigger #${index + 1} (kind "${row.kind}")`;
  if (typeof row.kind !== "string" || row.kind.length === 0) {
    throw new InputError(`${where}: kind must be a non-empty string naming a registered trigger kind`, { code: "TRIGGER_INVALID" });
  }
  const hasStep = row.stepId !== undefined;
  const hasAsset = row.assetKey !== undefined;
  if (hasStep === hasAsset) {
    throw new InputError(
      `${where}: give either stepId (a deferred step's wait) or assetKey (a source observation), not ${hasStep ? "both" : "neither"}`,
      { code: "TRIGGER_INVALID", location: hasAsset ? { assetKey: row.assetKey! } : {} },
    );
  }
  if (row.pollIntervalMs !== undefined && !(Number.isInteger(row.pollIntervalMs) && row.pollIntervalMs > 0)) {
    throw new InputError(`${where}: pollIntervalMs must be a whole number of milliseconds above 0, not ${row.pollIntervalMs}`, {
      code: "TRIGGER_INVALID",
      ...(hasAsset ? { location: { assetKey: row.assetKey!, field: "pollIntervalMs" } } : { location: { field: "pollIntervalMs" } }),
    });
  }
  if (row.timeoutAt && row.nextCheckAt && row.timeoutAt < row.nextCheckAt) {
    throw new InputError(`${where}: timeoutAt is before the first check (nextCheckAt); give a later timeout`, {
      code: "TRIGGER_INVALID",
      ...(hasAsset ? { location: { assetKey: row.assetKey! } } : {}),
    });
  }
}

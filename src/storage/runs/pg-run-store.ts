import type { Kysely, Transaction } from "kysely";
import { withAudit, type AuditEntry } from "../audit-trail.js";
import type { Database, PartitionState, RunStatus } from "../database.js";
import type { RunDecisions } from "../run-decisions.js";
import type {
  ClaimedStep,
  ClaimOptions,
  ClearedMappedStep,
  CompletionSummary,
  FollowUp,
  HousekeepingOptions,
  HousekeepingResult,
  MappedStepRef,
  NewRun,
  OutputRecord,
  RunDetail,
  RunStore,
  RunSummary,
  StepCompletion,
  StepRecord,
  StepStart,
} from "../run-store.js";
import { requestCancel } from "./cancel-run.js";
import { claimIn } from "./claim.js";
import { clearMappedStep } from "./clear-mapped-step.js";
import { completeIn, completeStepsIn } from "./complete.js";
import { insertRun } from "./create-run.js";
import { housekeeping } from "./housekeeping.js";
import { handedOutBefore, holderAlive, holderStopped, requeueLost, type HandedOutTry } from "./requeue.js";
import { materializedKeys, partitionKeysWithStatus, prunePartitionStatusChanges } from "./partition-status.js";
import { latestOutputs } from "./read-outputs.js";
import { getRun, getRunSummary, listRuns, stepsOfRuns } from "./read-runs.js";
import { heartbeat, markStarted } from "./step-liveness.js";

/** How often housekeeping prunes the change rows that version partition statuses. */
const CHANGES_PRUNE_INTERVAL_MS = 60_000;

/**
 * RunStore in Postgres SQL through Kysely (server Postgres and PGlite).
 * Batches travel as one JSON parameter (`jsonb_to_recordset`), so a
 * transaction costs a handful of statements whatever the batch size.
 * Each method opens its transaction here and hands it to the module that
 * holds that transaction's body.
 */
export class PgRunStore implements RunStore {
  readonly #db: Kysely<Database>;
  readonly #decisions: RunDecisions;
  /** When housekeeping last pruned partition_status_changes (its clock). */
  #changesPrunedAt: number | undefined;
  /** Fractional share of claims owed to the longest-waiting steps (see claimRunnable). */
  #agingCredit = 0;

  /** `decisions`: the trigger-rule and retry decisions the completion path applies (the planner's). */
  constructor(db: Kysely<Database>, decisions: RunDecisions) {
    this.#db = db;
    this.#decisions = decisions;
  }

  // ── runs ────────────────────────────────────────────────────────────────

  async createRun(run: NewRun, now: Date, audit?: AuditEntry): Promise<{ runId: string; created: boolean }> {
    return this.#db.transaction().execute((trx) =>
      withAudit(
        trx,
        audit,
        now,
        () => insertRun(trx, run, now),
        (r) => ({ runId: r.runId }),
      ),
    );
  }

  async createRuns(runs: readonly NewRun[], now: Date, audit?: AuditEntry): Promise<{ runId: string; created: boolean }[]> {
    if (runs.length === 0) return [];
    return this.#db.transaction().execute((trx) =>
      withAudit(
        trx,
        audit,
        now,
        async () => {
          const created: { runId: string; created: boolean }[] = [];
          for (const run of runs) created.push(await insertRun(trx, run, now));
          return created;
        },
        (created) => ({ runIds: created.map((c) => c.runId) }),
      ),
    );
  }

  requestCancel(runId: string, now: Date, audit?: AuditEntry): Promise<RunSummary> {
    return requestCancel(this.#db, runId, now, audit);
  }

  clearMappedStep(target: MappedStepRef, now: Date, audit?: AuditEntry): Promise<ClearedMappedStep> {
    return clearMappedStep(this.#db, target, now, audit);
  }

  getRun(runId: string): Promise<RunDetail | undefined> {
    return getRun(this.#db, runId);
  }

  stepsOfRuns(runIds: readonly string[]): Promise<ReadonlyMap<string, readonly StepRecord[]>> {
    return stepsOfRuns(this.#db, runIds);
  }

  getRunSummary(runId: string): Promise<RunSummary | undefined> {
    return getRunSummary(this.#db, runId);
  }

  listRuns(options: { limit?: number; status?: RunStatus; before?: Date; backfillId?: string } = {}): Promise<RunSummary[]> {
    return listRuns(this.#db, options);
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
      const claimed = await claimIn(trx, {
        kindNames,
        capacity,
        limit,
        agingLimit,
        now,
        defaultPoolSlots: options.defaultPoolSlots ?? 16,
        ...(options.holder ? { holder: options.holder } : {}),
      });
      // Only claims that found work earn (or spend) the aging share.
      if (claimed.foundWork) this.#agingCredit = credit - agingLimit;
      return claimed.steps;
    });
  }

  markStarted(starts: readonly StepStart[], now: Date): Promise<void> {
    return markStarted(this.#db, starts, now);
  }

  heartbeat(steps: readonly { stepId: number; tryNumber: number }[], now: Date): Promise<void> {
    return heartbeat(this.#db, steps, now);
  }

  // ── completion ──────────────────────────────────────────────────────────

  async completeSteps(
    completions: readonly StepCompletion[],
    now: Date,
    random: () => number = Math.random,
    followUp?: FollowUp,
  ): Promise<CompletionSummary> {
    if (completions.length === 0) return { applied: 0, ignored: [], scheduled: 0, finishedRuns: [], claimed: [] };
    return this.#db.transaction().execute((trx) => completeIn(trx, completions, now, this.#decisions, random, followUp));
  }

  /**
   * completeSteps inside the caller's transaction on this database: the transactional executor records a
   * step's completion in the transaction that holds the step's own writes, so both commit or neither does.
   */
  completeStepsWithin(trx: Transaction<Database>, completions: readonly StepCompletion[], now: Date): Promise<CompletionSummary> {
    return completeStepsIn(trx, completions, now, this.#decisions);
  }

  // ── housekeeping ────────────────────────────────────────────────────────

  async housekeeping(options: HousekeepingOptions): Promise<HousekeepingResult> {
    const result = await housekeeping(this.#db, options, this.#decisions);
    const now = options.now.getTime();
    if (this.#changesPrunedAt === undefined || Math.abs(now - this.#changesPrunedAt) >= CHANGES_PRUNE_INTERVAL_MS) {
      this.#changesPrunedAt = now;
      await prunePartitionStatusChanges(this.#db);
    }
    return result;
  }

  handedOut(executors: readonly string[], before: Date, limit: number): Promise<HandedOutTry[]> {
    return handedOutBefore(this.#db, executors, before, limit);
  }

  requeueLost(tries: readonly { readonly stepId: number; readonly tryNumber: number }[], now: Date, reason: string): Promise<number> {
    return requeueLost(this.#db, tries, now, reason);
  }

  holderAlive(holder: { readonly id: string; readonly hostname: string; readonly pid: number }): Promise<void> {
    return holderAlive(this.#db, holder);
  }

  holderStopped(id: string): Promise<void> {
    return holderStopped(this.#db, id);
  }

  // ── reads for data passing and planning ─────────────────────────────────

  latestOutputs(partitions: readonly { assetKey: string; partitionKey: string }[]): Promise<OutputRecord[]> {
    return latestOutputs(this.#db, partitions);
  }

  materializedKeys(assetKeys: readonly string[]): Promise<Map<string, string[]>> {
    return materializedKeys(this.#db, assetKeys);
  }

  partitionKeysWithStatus(assetKey: string, status: PartitionState): Promise<string[]> {
    return partitionKeysWithStatus(this.#db, assetKey, status);
  }
}

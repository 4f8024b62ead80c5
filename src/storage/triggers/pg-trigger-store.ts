import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import type { RunDecisions } from "../run-decisions.js";
import type {
  ClaimedTrigger,
  CreatedTrigger,
  ExpireResult,
  NewTrigger,
  RecordChecksResult,
  TriggerCheckResult,
  TriggerRecord,
  TriggerStore,
} from "../trigger-store.js";
import { createTriggersIn, triggerInputs } from "./create-triggers.js";
import { EXPIRE_BATCH, expireIn } from "./expire-triggers.js";
import { getTriggers } from "./read-triggers.js";
import { recordChecksIn } from "./record-checks.js";
import { claimDue, releaseLeases, renewLeases } from "./trigger-leases.js";

/**
 * TriggerStore in Postgres SQL (server Postgres and PGlite). Batches travel
 * as one JSON parameter, so a call costs a few statements whatever its size.
 * Lock order: triggers, then steps (then, inside the step completion path,
 * pools and runs), the same in every transaction here. Each method opens its
 * transaction here and hands it to the module that holds its body.
 */
export class PgTriggerStore implements TriggerStore {
  readonly #db: Kysely<Database>;
  readonly #decisions: RunDecisions;

  /** `decisions`: what ending a deferred step applies downstream (trigger rules) and to its retries. */
  constructor(db: Kysely<Database>, decisions: RunDecisions) {
    this.#db = db;
    this.#decisions = decisions;
  }

  // ── creating ────────────────────────────────────────────────────────────

  async createTriggers(rows: readonly NewTrigger[], now: Date): Promise<CreatedTrigger[]> {
    if (rows.length === 0) return [];
    const input = triggerInputs(rows, now);
    return this.#db.transaction().execute((trx) => createTriggersIn(trx, input, now));
  }

  // ── leases ──────────────────────────────────────────────────────────────

  async claimDue(owner: string, now: Date, options: { limit: number; leaseMs: number }): Promise<ClaimedTrigger[]> {
    return claimDue(this.#db, owner, now, options);
  }

  async renewLeases(owner: string, now: Date, leaseMs: number): Promise<number> {
    return renewLeases(this.#db, owner, now, leaseMs);
  }

  async releaseLeases(owner: string): Promise<number> {
    return releaseLeases(this.#db, owner);
  }

  // ── outcomes ────────────────────────────────────────────────────────────

  async recordChecks(owner: string, results: readonly TriggerCheckResult[], now: Date): Promise<RecordChecksResult> {
    const empty = { applied: 0, ignored: [], fired: [], canceled: [], scheduledSteps: [], failed: [], failedSteps: [] };
    if (results.length === 0) return empty;
    return this.#db.transaction().execute((trx) => recordChecksIn(trx, this.#decisions, owner, results, now));
  }

  async expire(now: Date, options: { limit?: number } = {}): Promise<ExpireResult> {
    const limit = options.limit ?? EXPIRE_BATCH;
    return this.#db.transaction().execute((trx) => expireIn(trx, this.#decisions, now, limit));
  }

  // ── reads ───────────────────────────────────────────────────────────────

  async getTriggers(ids: readonly number[]): Promise<TriggerRecord[]> {
    return getTriggers(this.#db, ids);
  }
}

import { createHash, randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Database } from "./database.js";
import { toJson } from "./json.js";

/** How long a try token is accepted after it was issued or last extended, unless the caller says otherwise. */
export const DEFAULT_TRY_TOKEN_TTL_MS = 10 * 60_000;

/** `tt_` and 32 random bytes in base64url: what a well-formed token looks like (anything else is rejected unread). */
const TOKEN_PATTERN = /^tt_[A-Za-z0-9_-]{43}$/;

/** One step try a token is scoped to, with what the execution API needs to serve it without trusting the worker. */
export interface TokenTry {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly runId: string;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly mapIndex: number;
  readonly checkName: string | null;
  readonly timeoutMs: number | null;
}

/**
 * What a presented token is worth: the try it is scoped to, or why not.
 * `stale`: the token was valid but its try is no longer the step's active
 * try (it ended, or the step moved on to try `stepTryNumber`).
 */
export type TokenCheck =
  | { readonly ok: true; readonly try: TokenTry; readonly expiresAt: Date }
  | { readonly ok: false; readonly reason: "unknown" }
  | { readonly ok: false; readonly reason: "expired"; readonly try: TokenTry; readonly expiredAt: Date }
  | { readonly ok: false; readonly reason: "stale"; readonly try: TokenTry; readonly stepState: string; readonly stepTryNumber: number };

/**
 * Short-lived bearer tokens scoped to one step try, for workers that report
 * through the execution API instead of the database. Only a token's sha256
 * is stored; a try is active while its step is queued or running at that try.
 */
export interface TryTokenStore {
  /**
   * Issues a token for each try that is queued (others get none and are left
   * out of the answer); a second issue for a try replaces its token.
   */
  issue(tries: readonly { readonly stepId: number; readonly tryNumber: number }[], now: Date, ttlMs?: number): Promise<IssuedTryToken[]>;
  authenticate(token: string, now: Date): Promise<TokenCheck>;
  /** authenticate for a batch, in one query: a check per token, in the order given. */
  authenticateMany(tokens: readonly string[], now: Date): Promise<TokenCheck[]>;
  /** Moves the expiry of an active try's token to `now + ttlMs` (sliding expiry on heartbeats); returns it, or undefined. */
  extend(stepId: number, tryNumber: number, now: Date, ttlMs?: number): Promise<Date | undefined>;
  /** extend for a batch, in one statement: the new expiry of each try extended, by `${stepId}:${tryNumber}` (others are left out). */
  extendMany(
    tries: readonly { readonly stepId: number; readonly tryNumber: number }[],
    now: Date,
    ttlMs?: number,
  ): Promise<Map<string, Date>>;
}

export interface IssuedTryToken {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly token: string;
  readonly expiresAt: Date;
}

/** The stored form of a token: its sha256, hex. */
export function hashTryToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/**
 * TryTokenStore on step_tries.token_hash / token_expires_at (migration 0010).
 *
 * @example
 * import type { Kysely } from "kysely";
 * // given db: Kysely<Database>, claim: ClaimedStep
 * const tokens = new PgTryTokenStore(db);
 * const [issued] = await tokens.issue([{ stepId: claim.stepId, tryNumber: claim.tryNumber }], new Date());
 * const token = issued?.token; // goes to the worker with the step's dispatch
 */
export class PgTryTokenStore implements TryTokenStore {
  readonly #db: Kysely<Database>;
  readonly #ttlMs: number;

  constructor(db: Kysely<Database>, options: { readonly ttlMs?: number } = {}) {
    this.#db = db;
    this.#ttlMs = options.ttlMs ?? DEFAULT_TRY_TOKEN_TTL_MS;
  }

  async issue(
    tries: readonly { readonly stepId: number; readonly tryNumber: number }[],
    now: Date,
    ttlMs = this.#ttlMs,
  ): Promise<IssuedTryToken[]> {
    if (tries.length === 0) return [];
    const expiresAt = new Date(now.getTime() + ttlMs);
    const minted = tries.map((t) => ({ ...t, token: `tt_${randomBytes(32).toString("base64url")}` }));
    const input = toJson(minted.map((m) => ({ step_id: m.stepId, try_number: m.tryNumber, token_hash: hashTryToken(m.token) })));
    // Only the step's current try, while it waits for a worker: a token never revives an ended try.
    const { rows } = await sql<{ step_id: string; try_number: number }>`
      update step_tries t set token_hash = x.token_hash, token_expires_at = ${expiresAt}
      from jsonb_to_recordset(${input}::jsonb) as x(step_id bigint, try_number int, token_hash text), steps s
      where t.step_id = x.step_id and t.try_number = x.try_number and t.state = 'queued'
        and s.id = t.step_id and s.try_number = t.try_number and s.state = 'queued'
      returning t.step_id, t.try_number`.execute(this.#db);
    const issued = new Set(rows.map((r) => `${r.step_id}:${r.try_number}`));
    return minted
      .filter((m) => issued.has(`${m.stepId}:${m.tryNumber}`))
      .map((m) => ({ stepId: m.stepId, tryNumber: m.tryNumber, token: m.token, expiresAt }));
  }

  async authenticate(token: string, now: Date): Promise<TokenCheck> {
    return (await this.authenticateMany([token], now))[0]!;
  }

  async authenticateMany(tokens: readonly string[], now: Date): Promise<TokenCheck[]> {
    // Malformed tokens are rejected unread; the rest are looked up by their hash (an index probe each), so a
    // token itself is never compared or stored.
    const hashes = [...new Set(tokens.filter((t) => TOKEN_PATTERN.test(t)).map(hashTryToken))];
    const byHash = new Map<string, TokenRow>();
    if (hashes.length > 0) {
      const { rows } = await sql<TokenRow>`
        select t.token_hash, t.step_id, t.try_number, t.run_id, t.token_expires_at, s.state as step_state, s.try_number as step_try,
               s.asset_key, s.partition_key, s.map_index, s.check_name, s.timeout_ms
        from step_tries t join steps s on s.id = t.step_id
        where t.token_hash = any(${hashes}::text[])`.execute(this.#db);
      for (const row of rows) byHash.set(row.token_hash, row);
    }
    return tokens.map((token) => {
      const row = TOKEN_PATTERN.test(token) ? byHash.get(hashTryToken(token)) : undefined;
      return row ? checkOf(row, now) : { ok: false, reason: "unknown" };
    });
  }

  async extend(stepId: number, tryNumber: number, now: Date, ttlMs = this.#ttlMs): Promise<Date | undefined> {
    return (await this.extendMany([{ stepId, tryNumber }], now, ttlMs)).get(`${stepId}:${tryNumber}`);
  }

  async extendMany(
    tries: readonly { readonly stepId: number; readonly tryNumber: number }[],
    now: Date,
    ttlMs = this.#ttlMs,
  ): Promise<Map<string, Date>> {
    const out = new Map<string, Date>();
    if (tries.length === 0) return out;
    const expiresAt = new Date(now.getTime() + ttlMs);
    const input = toJson(tries.map((t) => ({ step_id: t.stepId, try_number: t.tryNumber })));
    // As extend: never shortens a token, never revives an expired one.
    const { rows } = await sql<{ step_id: string; try_number: number; token_expires_at: Date }>`
      update step_tries t set token_expires_at = greatest(t.token_expires_at, ${expiresAt}::timestamptz)
      from (select distinct * from jsonb_to_recordset(${input}::jsonb) as x(step_id bigint, try_number int)) x
      where t.step_id = x.step_id and t.try_number = x.try_number and t.token_hash is not null
        and t.token_expires_at > ${now}::timestamptz and t.state in ('queued', 'running')
      returning t.step_id, t.try_number, t.token_expires_at`.execute(this.#db);
    for (const r of rows) out.set(`${Number(r.step_id)}:${r.try_number}`, new Date(r.token_expires_at));
    return out;
  }
}

interface TokenRow {
  token_hash: string;
  step_id: string;
  try_number: number;
  run_id: string;
  token_expires_at: Date | null;
  step_state: string;
  step_try: number;
  asset_key: string;
  partition_key: string;
  map_index: number;
  check_name: string | null;
  timeout_ms: string | null;
}

/** What a stored token is worth at `now`: the try is active (the step is queued or running at it) and the token unexpired. */
function checkOf(row: TokenRow, now: Date): TokenCheck {
  const scoped: TokenTry = {
    stepId: Number(row.step_id),
    tryNumber: row.try_number,
    runId: row.run_id,
    assetKey: row.asset_key,
    partitionKey: row.partition_key,
    mapIndex: row.map_index,
    checkName: row.check_name,
    timeoutMs: row.timeout_ms === null ? null : Number(row.timeout_ms),
  };
  if (row.step_try !== row.try_number || (row.step_state !== "queued" && row.step_state !== "running")) {
    return { ok: false, reason: "stale", try: scoped, stepState: row.step_state, stepTryNumber: row.step_try };
  }
  const expiresAt = row.token_expires_at === null ? null : new Date(row.token_expires_at);
  if (expiresAt === null || expiresAt.getTime() <= now.getTime()) {
    return { ok: false, reason: "expired", try: scoped, expiredAt: expiresAt ?? now };
  }
  return { ok: true, try: scoped, expiresAt };
}

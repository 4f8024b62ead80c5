import { AccessDeniedError, TributaryError } from "../errors/index.js";
import type { AuditEntry, TeamRecord } from "../storage/index.js";
import { localCaller, type Caller } from "./caller.js";
import { decide, type AssetOwnership, type Decision } from "./decide.js";
import { ROLE_MEANING, type Role } from "./roles.js";

/** What a request acts on: asset keys (null: the instance itself) and, for the audit trail, partition keys. */
export interface AccessScope {
  readonly assets: readonly string[] | null;
  readonly partitions?: readonly string[] | undefined;
  readonly detail?: AuditEntry["detail"];
}

/** What every command asks before it writes, whatever transport the request came through. */
export interface Guard {
  readonly caller: Caller;
  /**
   * Refuses with AccessDeniedError (recording the refusal) unless the caller holds `role` on the whole scope;
   * otherwise returns the audit record the command writes in the transaction of its effect.
   */
  authorize(action: string, role: Role, scope: AccessScope): Promise<AuditEntry>;
  /** Whether the caller may read the asset's logs and outputs (viewer of a team owning it). */
  canView(assetKey: string): Promise<boolean>;
  /** Whether the caller holds `role` on these assets (null: the instance), without recording anything: what the UI offers. */
  can(role: Role, assetKeys: readonly string[] | null): Promise<boolean>;
  /**
   * Records, as failed, what was authorised but then failed before its effect committed (so its own record was
   * rolled back with it); nothing when nothing was authorised or the failure was the refusal itself.
   */
  failed(error: unknown): Promise<void>;
  /** Runs a command; what it had authorised when it throws is recorded as failed (see failed). */
  audited<T>(work: () => Promise<T>): Promise<T>;
}

export interface RequestAccessDeps {
  readonly teams: () => Promise<readonly TeamRecord[]>;
  /** Group and owner of each asset, from the current definitions (an unknown key: no group, no owner). */
  readonly ownership: (assetKeys: readonly string[]) => Promise<readonly AssetOwnership[]>;
  /** Writes an audit record on its own: a refusal, or a change that failed (nothing else is written). */
  readonly record: (entry: AuditEntry) => Promise<void>;
}

/** One request's Guard: the caller, and the one decision function applied to the assets it names. */
export class RequestAccess implements Guard {
  readonly caller: Caller;
  readonly #deps: RequestAccessDeps;
  /** Authorised and not yet known to have failed. */
  #issued: AuditEntry[] = [];

  constructor(caller: Caller, deps: RequestAccessDeps) {
    this.caller = caller;
    this.#deps = deps;
  }

  async authorize(action: string, role: Role, scope: AccessScope): Promise<AuditEntry> {
    const decision = await this.#decide(role, scope.assets);
    const entry = auditEntry(this.caller, action, scope);
    if (!decision.allowed) {
      await this.#deps.record({
        ...entry,
        outcome: "denied",
        detail: { ...entry.detail, missingRole: decision.role, ...(decision.assetKey ? { asset: decision.assetKey } : {}) },
      });
      throw refusal(this.caller, action, decision);
    }
    this.#issued.push(entry);
    return entry;
  }

  async audited<T>(work: () => Promise<T>): Promise<T> {
    const before = this.#issued.length;
    try {
      return await work();
    } catch (err) {
      const issued = this.#issued.splice(before);
      if (!(err instanceof AccessDeniedError)) await this.#recordFailed(issued, err).catch(() => undefined);
      throw err;
    }
  }

  async failed(error: unknown): Promise<void> {
    const issued = this.#issued;
    this.#issued = [];
    if (error instanceof AccessDeniedError) return;
    await this.#recordFailed(issued, error);
  }

  async #recordFailed(issued: readonly AuditEntry[], error: unknown): Promise<void> {
    const code = error instanceof TributaryError ? error.code : "INTERNAL";
    for (const entry of issued) await this.#deps.record({ ...entry, outcome: "failed", detail: { ...entry.detail, error: code } });
  }

  async canView(assetKey: string): Promise<boolean> {
    return (await this.#decide("viewer", [assetKey])).allowed;
  }

  async can(role: Role, assetKeys: readonly string[] | null): Promise<boolean> {
    return (await this.#decide(role, assetKeys)).allowed;
  }

  async #decide(role: Role, assetKeys: readonly string[] | null): Promise<Decision> {
    // The local caller holds admin without a team: nothing to look up.
    if (this.caller.kind === "local") return { allowed: true };
    const [teams, assets] = await Promise.all([this.#deps.teams(), assetKeys === null ? null : this.#deps.ownership(assetKeys)]);
    return decide(this.caller, teams, role, assets);
  }
}

/** The audit record of a request by `caller` (outcome success; a refusal overrides it). */
export function auditEntry(
  caller: Caller,
  action: string,
  scope: Omit<AccessScope, "assets"> & { assets?: readonly string[] | null },
): AuditEntry {
  return {
    principalId: caller.principalId,
    principalName: caller.name,
    principalKind: caller.kind,
    tokenId: caller.tokenId,
    action,
    outcome: "success",
    assets: scope.assets ?? [],
    partitions: scope.partitions ?? [],
    address: caller.address,
    detail: scope.detail ?? {},
  };
}

function refusal(caller: Caller, action: string, decision: Extract<Decision, { allowed: false }>): AccessDeniedError {
  const who = `${caller.kind === "service" ? "service account" : "user"} "${caller.name}"`;
  if (decision.assetKey === null) {
    return new AccessDeniedError(
      `${action}: ${who} needs the ${decision.role} role without a team (${ROLE_MEANING.admin.split("; ")[1]}); nothing was changed`,
      { role: decision.role, assetKey: null },
    );
  }
  const owners =
    decision.teams.length > 0
      ? `owned by team ${decision.teams.map((t) => `"${t}"`).join(", ")}`
      : "which no team owns (only a grant without a team covers it)";
  return new AccessDeniedError(
    `${action}: ${who} needs the ${decision.role} role on asset "${decision.assetKey}", ${owners}; nothing was changed`,
    { role: decision.role, assetKey: decision.assetKey },
  );
}

/**
 * The Guard of work that runs with the database's own credentials (a command in its own process, an instance without
 * access control): allows everything, and still writes the audit record of each change (as "local").
 */
export function localGuard(address: string | null = null): Guard {
  return new RequestAccess(localCaller(address), {
    teams: () => Promise.resolve([]),
    ownership: () => Promise.resolve([]),
    record: () => Promise.resolve(),
  });
}

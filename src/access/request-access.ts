import { AccessDeniedError } from "../errors/index.js";
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
}

export interface RequestAccessDeps {
  readonly teams: () => Promise<readonly TeamRecord[]>;
  /** Group and owner of each asset, from the current definitions (an unknown key: no group, no owner). */
  readonly ownership: (assetKeys: readonly string[]) => Promise<readonly AssetOwnership[]>;
  /** Writes a refusal's audit record (nothing else is written). */
  readonly recordRefusal: (entry: AuditEntry) => Promise<void>;
}

/** One request's Guard: the caller, and the one decision function applied to the assets it names. */
export class RequestAccess implements Guard {
  readonly caller: Caller;
  readonly #deps: RequestAccessDeps;

  constructor(caller: Caller, deps: RequestAccessDeps) {
    this.caller = caller;
    this.#deps = deps;
  }

  async authorize(action: string, role: Role, scope: AccessScope): Promise<AuditEntry> {
    const decision = await this.#decide(role, scope.assets);
    const entry = auditEntry(this.caller, action, scope);
    if (!decision.allowed) {
      await this.#deps.recordRefusal({
        ...entry,
        outcome: "denied",
        detail: { ...entry.detail, missingRole: decision.role, ...(decision.assetKey ? { asset: decision.assetKey } : {}) },
      });
      throw refusal(this.caller, action, decision);
    }
    return entry;
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
    recordRefusal: () => Promise.resolve(),
  });
}

import { userInfo } from "node:os";
import { auditEntry, localCaller } from "../access/index.js";
import {
  PgAccessStore,
  type AccessStore,
  type AuditEntry,
  type Grant,
  type GraphCache,
  type JsonValue,
  type PrincipalRecord,
} from "../storage/index.js";
import { openRuntime } from "./runtime.js";
import type { Settings } from "./settings.js";

// The access commands work on the configured database in their own process, with the database's credentials: whoever
// may run them may already change every table. What they change is audited as the local caller.

/** What an access command works with: the access store, and the current definitions (for what a team owns). */
export interface AccessAdmin {
  readonly store: AccessStore;
  readonly graphs: GraphCache;
  /** The audit record of a change made by this command: the local caller, `via: "cli"`, the system user running it. */
  audit(action: string, detail?: { readonly [key: string]: JsonValue }): AuditEntry;
}

/** Opens (and migrates) the configured database, runs `fn`, and closes it. */
export async function withAccessAdmin<T>(settings: Settings, fn: (admin: AccessAdmin) => Promise<T>): Promise<T> {
  const runtime = await openRuntime(settings);
  try {
    const osUser = systemUser();
    return await fn({
      store: new PgAccessStore(runtime.database.db),
      graphs: runtime.graphs,
      audit: (action, detail = {}) =>
        auditEntry(localCaller(), action, { detail: { via: "cli", ...(osUser ? { osUser } : {}), ...detail } }),
    });
  } finally {
    await runtime.close();
  }
}

function systemUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    // A container user without a passwd entry.
    return undefined;
  }
}

/** "operator on team-a", "viewer of every asset", "admin of every asset and the instance": a grant as listings show it. */
export function grantLabel(grant: Grant): string {
  if (grant.team !== null) return `${grant.role} on ${grant.team}`;
  return grant.role === "admin" ? "admin of every asset and the instance" : `${grant.role} of every asset`;
}

/** "user", "service account". */
export function kindLabel(kind: PrincipalRecord["kind"]): string {
  return kind === "service" ? "service account" : "user";
}

/** Whether an enabled principal holds admin without a team: without one, `tributary api` refuses to start. */
export function hasEnabledAdmin(principals: readonly PrincipalRecord[]): boolean {
  return principals.some((p) => !p.disabled && p.grants.some((g) => g.role === "admin" && g.team === null));
}

/** Says on stderr when a change left no enabled admin. */
export async function warnWithoutAdmin(store: AccessStore): Promise<void> {
  if (hasEnabledAdmin(await store.listPrincipals())) return;
  process.stderr.write(
    "warning: no enabled admin is left: `tributary api` refuses to start (ACCESS_NOT_CONFIGURED) and nobody can manage access " +
      "through the API until one exists (`tributary grant admin --to <user>`)\n",
  );
}

/** A principal as the --json output of the access commands shows it. */
export function principalJson(p: PrincipalRecord): Record<string, unknown> {
  return {
    name: p.name,
    kind: p.kind,
    hasPassword: p.hasPassword,
    disabled: p.disabled,
    grants: p.grants.map((g) => ({ role: g.role, team: g.team })),
    createdAt: p.createdAt.toISOString(),
  };
}

/** An instant in listings: UTC, to the second. */
export function shortTime(at: Date | null): string {
  return at ? at.toISOString().replace(/\.\d{3}Z$/, "Z") : "";
}

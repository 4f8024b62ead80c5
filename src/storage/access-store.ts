import type { PrincipalKind, Role } from "./access-tables.js";
import type { AuditEntry, AuditEvent, AuditQuery } from "./audit-trail.js";

/** A role on one team's assets, or (team null) on every asset and on the instance itself. */
export interface Grant {
  readonly role: Role;
  readonly team: string | null;
}

/** A user or service account, with what it has been granted. */
export interface PrincipalRecord {
  readonly id: string;
  readonly name: string;
  readonly kind: PrincipalKind;
  readonly hasPassword: boolean;
  readonly disabled: boolean;
  readonly grants: readonly Grant[];
  readonly createdAt: Date;
}

export interface TokenRecord {
  readonly id: string;
  readonly principalName: string;
  readonly principalKind: PrincipalKind;
  /** The token's first characters, to tell tokens apart. */
  readonly prefix: string;
  readonly description: string;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
  readonly lastUsedAt: Date | null;
  readonly createdAt: Date;
}

/** What a team owns: the assets of these groups, and the assets whose `owner` is one of these. */
export interface TeamRecord {
  readonly name: string;
  readonly groups: readonly string[];
  readonly owners: readonly string[];
  readonly members: readonly { readonly principal: string; readonly role: Role }[];
}

/** Who a credential belongs to, found by its hash. */
export interface CredentialOwner {
  readonly principal: PrincipalRecord;
  /** The API token's id, when the credential is one. */
  readonly tokenId: string | null;
}

/** Identities, credentials, teams, grants and the audit trail, in the metadata database. */
export interface AccessStore {
  createPrincipal(
    input: { name: string; kind: PrincipalKind; passwordHash?: string },
    audit: AuditEntry,
    now: Date,
  ): Promise<PrincipalRecord>;
  principal(name: string): Promise<PrincipalRecord | undefined>;
  principalById(id: string): Promise<PrincipalRecord | undefined>;
  /** The stored password hash of an enabled user, for sign-in. */
  passwordHash(name: string): Promise<{ principal: PrincipalRecord; hash: string } | undefined>;
  setPassword(name: string, passwordHash: string, audit: AuditEntry, now: Date): Promise<void>;
  setDisabled(name: string, disabled: boolean, audit: AuditEntry, now: Date): Promise<PrincipalRecord>;
  listPrincipals(): Promise<PrincipalRecord[]>;
  /**
   * The user signing in with this OIDC identity: the one it signed in as before, else a user of `preferredName` without
   * a password nor an identity yet (an admin made it for this), else a new user without grants (named `preferredName`,
   * or with a suffix when that name is taken).
   */
  oidcPrincipal(issuer: string, subject: string, preferredName: string, audit: AuditEntry, now: Date): Promise<PrincipalRecord>;

  createToken(
    input: { principalName: string; tokenHash: string; prefix: string; description: string; expiresAt: Date | null },
    audit: AuditEntry,
    now: Date,
  ): Promise<TokenRecord>;
  listTokens(principalName?: string): Promise<TokenRecord[]>;
  /** Revokes a token by id or prefix. */
  revokeToken(idOrPrefix: string, audit: AuditEntry, now: Date): Promise<TokenRecord>;
  /** The live (unexpired, unrevoked) token with this hash and its enabled owner; marks it used. */
  tokenOwner(tokenHash: string, now: Date): Promise<CredentialOwner | undefined>;

  createSession(
    input: { idHash: string; principalId: string; method: "password" | "oidc"; expiresAt: Date },
    audit: AuditEntry,
    now: Date,
  ): Promise<void>;
  /** The live session with this hash and its enabled owner. */
  sessionOwner(idHash: string, now: Date): Promise<CredentialOwner | undefined>;
  endSession(idHash: string, audit: AuditEntry, now: Date): Promise<void>;

  createTeam(name: string, audit: AuditEntry, now: Date): Promise<TeamRecord>;
  /** Adds (or with `remove`, removes) what a team owns. */
  setOwnership(
    team: string,
    own: { kind: "group" | "owner"; value: string; remove?: boolean },
    audit: AuditEntry,
    now: Date,
  ): Promise<TeamRecord>;
  listTeams(): Promise<TeamRecord[]>;
  grant(input: { principalName: string; role: Role; team: string | null }, audit: AuditEntry, now: Date): Promise<PrincipalRecord>;
  revokeGrant(input: { principalName: string; role: Role; team: string | null }, audit: AuditEntry, now: Date): Promise<PrincipalRecord>;

  /** The secret signing access tokens, made on first use and shared by every server of the deployment. */
  signingSecret(): Promise<{ id: string; secret: string }>;

  /** Writes an audit record on its own (a refusal, a failed sign-in). */
  audit(entry: AuditEntry, now: Date): Promise<void>;
  auditEvents(query: AuditQuery): Promise<AuditEvent[]>;
}

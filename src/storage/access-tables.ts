import type { Generated } from "kysely";
import type { GeneratedInt8, GeneratedJson, GeneratedTimestamp, NullableTimestamp, Timestamp } from "./database.js";
import type { JsonValue } from "./json.js";

// The Kysely view of the access-control tables (migration 0011; audit_events.principal_kind from 0012).

export type PrincipalKind = "user" | "service";
export type Role = "viewer" | "operator" | "admin";
export type AuditOutcome = "success" | "denied" | "failed";

/** Who acted: a principal of either kind, or the local caller of an instance without access control. */
export type AuditPrincipalKind = PrincipalKind | "local";

export interface PrincipalsTable {
  id: Generated<string>;
  name: string;
  kind: PrincipalKind;
  password_hash: string | null;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  disabled_at: NullableTimestamp;
  created_at: GeneratedTimestamp;
}

export interface ApiTokensTable {
  id: Generated<string>;
  principal_id: string;
  token_hash: string;
  prefix: string;
  description: Generated<string>;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  created_at: GeneratedTimestamp;
}

export interface TeamsTable {
  name: string;
  created_at: GeneratedTimestamp;
}

export interface TeamOwnershipTable {
  team: string;
  kind: "group" | "owner";
  value: string;
}

export interface GrantsTable {
  id: Generated<string>;
  principal_id: string;
  role: Role;
  team: string | null;
  created_at: GeneratedTimestamp;
}

export interface SessionsTable {
  id_hash: string;
  principal_id: string;
  method: "password" | "oidc";
  expires_at: Timestamp;
  created_at: GeneratedTimestamp;
  last_seen_at: GeneratedTimestamp;
}

export interface SigningKeysTable {
  id: string;
  secret: string;
  created_at: GeneratedTimestamp;
}

export interface AuditEventsTable {
  id: GeneratedInt8;
  at: GeneratedTimestamp;
  principal_id: string | null;
  principal_name: string | null;
  token_id: string | null;
  action: string;
  outcome: AuditOutcome;
  assets: GeneratedJson<string[]>;
  partitions: GeneratedJson<string[]>;
  address: string | null;
  detail: GeneratedJson<{ [key: string]: JsonValue }>;
  principal_kind: AuditPrincipalKind | null;
}

export interface AccessTables {
  principals: PrincipalsTable;
  api_tokens: ApiTokensTable;
  teams: TeamsTable;
  team_ownership: TeamOwnershipTable;
  grants: GrantsTable;
  sessions: SessionsTable;
  signing_keys: SigningKeysTable;
  audit_events: AuditEventsTable;
}

import type { Kysely } from "kysely";
import type { AuditOutcome, AuditPrincipalKind } from "./access-tables.js";
import type { Database } from "./database.js";
import { toJson, type JsonValue } from "./json.js";

/** One audit record: who asked, through which token, for what, on which assets and partitions, from where, and how it ended. */
export interface AuditEntry {
  readonly principalId: string | null;
  readonly principalName: string | null;
  /** Absent or null when nobody proven acted (a failed sign-in names only what was typed). */
  readonly principalKind?: AuditPrincipalKind | null | undefined;
  readonly tokenId?: string | null | undefined;
  /** A mutation's name (`launchRun`), or an access action (`signIn`, `createToken`…). */
  readonly action: string;
  readonly outcome: AuditOutcome;
  readonly assets?: readonly string[] | undefined;
  readonly partitions?: readonly string[] | undefined;
  readonly address?: string | null | undefined;
  readonly detail?: { readonly [key: string]: JsonValue } | undefined;
}

/** The API token a record was made with, as it is listed (its first characters and description). */
export interface AuditToken {
  readonly id: string;
  readonly prefix: string;
  readonly description: string;
}

/** A stored audit record. */
export interface AuditEvent {
  readonly id: number;
  readonly at: Date;
  readonly principalId: string | null;
  readonly principalName: string | null;
  /** As recorded; for records older than the column, the principal's kind if it still exists. */
  readonly principalKind: AuditPrincipalKind | null;
  readonly tokenId: string | null;
  /** Null without a token, or when the token no longer exists (its principal was deleted). */
  readonly token: AuditToken | null;
  readonly action: string;
  readonly outcome: AuditOutcome;
  readonly assets: string[];
  readonly partitions: string[];
  readonly address: string | null;
  readonly detail: { [key: string]: JsonValue };
}

/** The most partition keys one record lists; a larger selection is summarised in `detail.partitionCount`. */
const MAX_LISTED_PARTITIONS = 1000;

/**
 * Writes an audit record with the database (or transaction) given: a command passes the transaction that writes its
 * effect, so the record and the effect commit together or not at all.
 */
export async function recordAudit(db: Kysely<Database>, entry: AuditEntry, at: Date): Promise<void> {
  const partitions = entry.partitions ?? [];
  const detail = partitions.length > MAX_LISTED_PARTITIONS ? { ...entry.detail, partitionCount: partitions.length } : (entry.detail ?? {});
  await db
    .insertInto("audit_events")
    .values({
      at,
      principal_id: entry.principalId,
      principal_name: entry.principalName,
      principal_kind: entry.principalKind ?? null,
      token_id: entry.tokenId ?? null,
      action: entry.action,
      outcome: entry.outcome,
      assets: toJson([...new Set(entry.assets ?? [])]),
      partitions: toJson(partitions.slice(0, MAX_LISTED_PARTITIONS)),
      address: entry.address ?? null,
      detail: toJson(detail),
    })
    .execute();
}

export interface AuditQuery {
  readonly since?: Date | undefined;
  readonly principalName?: string | undefined;
  readonly action?: string | undefined;
  readonly outcome?: AuditOutcome | undefined;
  /** Records older than this id (for paging backwards). */
  readonly beforeId?: number | undefined;
  readonly limit: number;
}

/** Audit records, newest first, with the kind of principal and the token used (one query for the page). */
export async function listAuditEvents(db: Kysely<Database>, query: AuditQuery): Promise<AuditEvent[]> {
  let q = db
    .selectFrom("audit_events as e")
    .leftJoin("principals as p", "p.id", "e.principal_id")
    .leftJoin("api_tokens as t", "t.id", "e.token_id")
    .selectAll("e")
    .select(["p.kind as current_kind", "t.prefix as token_prefix", "t.description as token_description"]);
  if (query.since) q = q.where("e.at", ">=", query.since);
  if (query.principalName !== undefined) q = q.where("e.principal_name", "=", query.principalName);
  if (query.action !== undefined) q = q.where("e.action", "=", query.action);
  if (query.outcome !== undefined) q = q.where("e.outcome", "=", query.outcome);
  if (query.beforeId !== undefined) q = q.where("e.id", "<", query.beforeId);
  const rows = await q.orderBy("e.id", "desc").limit(query.limit).execute();
  return rows.map((r) => ({
    id: Number(r.id),
    at: r.at,
    principalId: r.principal_id,
    principalName: r.principal_name,
    principalKind: r.principal_kind ?? r.current_kind,
    tokenId: r.token_id,
    token:
      r.token_id !== null && r.token_prefix !== null
        ? { id: r.token_id, prefix: r.token_prefix, description: r.token_description ?? "" }
        : null,
    action: r.action,
    outcome: r.outcome,
    assets: r.assets,
    partitions: r.partitions,
    address: r.address,
    detail: r.detail,
  }));
}

/**
 * Runs a transaction's work, then writes its audit record (when there is one) in the same transaction, with what
 * `detail` adds from the result (the id of what was created).
 */
export async function withAudit<T>(
  trx: Kysely<Database>,
  audit: AuditEntry | undefined,
  now: Date,
  work: () => Promise<T>,
  detail?: (result: T) => { [key: string]: JsonValue },
): Promise<T> {
  const result = await work();
  if (audit) await recordAudit(trx, detail ? { ...audit, detail: { ...audit.detail, ...detail(result) } } : audit, now);
  return result;
}

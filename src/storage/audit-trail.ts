import type { Kysely } from "kysely";
import type { AuditOutcome } from "./access-tables.js";
import type { Database } from "./database.js";
import { toJson, type JsonValue } from "./json.js";

/** One audit record: who asked, through which token, for what, on which assets and partitions, from where, and how it ended. */
export interface AuditEntry {
  readonly principalId: string | null;
  readonly principalName: string | null;
  readonly tokenId?: string | null | undefined;
  /** A mutation's name (`launchRun`), or an access action (`signIn`, `createToken`…). */
  readonly action: string;
  readonly outcome: AuditOutcome;
  readonly assets?: readonly string[] | undefined;
  readonly partitions?: readonly string[] | undefined;
  readonly address?: string | null | undefined;
  readonly detail?: { readonly [key: string]: JsonValue } | undefined;
}

/** A stored audit record. */
export interface AuditEvent {
  readonly id: number;
  readonly at: Date;
  readonly principalId: string | null;
  readonly principalName: string | null;
  readonly tokenId: string | null;
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
  /** Records older than this id (for paging backwards). */
  readonly beforeId?: number | undefined;
  readonly limit: number;
}

/** Audit records, newest first. */
export async function listAuditEvents(db: Kysely<Database>, query: AuditQuery): Promise<AuditEvent[]> {
  let q = db.selectFrom("audit_events").selectAll();
  if (query.since) q = q.where("at", ">=", query.since);
  if (query.principalName !== undefined) q = q.where("principal_name", "=", query.principalName);
  if (query.action !== undefined) q = q.where("action", "=", query.action);
  if (query.beforeId !== undefined) q = q.where("id", "<", query.beforeId);
  const rows = await q.orderBy("id", "desc").limit(query.limit).execute();
  return rows.map((r) => ({
    id: Number(r.id),
    at: r.at,
    principalId: r.principal_id,
    principalName: r.principal_name,
    tokenId: r.token_id,
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

import { randomBytes, randomUUID } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { InputError } from "../errors/index.js";
import type { AccessStore, CredentialOwner, Grant, PrincipalRecord, TeamRecord, TokenRecord } from "./access-store.js";
import type { PrincipalKind, Role } from "./access-tables.js";
import { listAuditEvents, recordAudit, type AuditEntry, type AuditEvent, type AuditQuery } from "./audit-trail.js";
import type { Database } from "./database.js";

/** How often a token's last-used time is written at most: a busy script would otherwise write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

type PrincipalRow = {
  id: string;
  name: string;
  kind: PrincipalKind;
  password_hash: string | null;
  disabled_at: Date | null;
  created_at: Date;
};

/** AccessStore on the access tables (server Postgres and PGlite). Every change writes its audit record in its own transaction. */
export class PgAccessStore implements AccessStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async createPrincipal(
    input: { name: string; kind: PrincipalKind; passwordHash?: string },
    audit: AuditEntry,
    now: Date,
  ): Promise<PrincipalRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto("principals")
        .values({ name: input.name, kind: input.kind, password_hash: input.passwordHash ?? null, created_at: now })
        .onConflict((oc) => oc.column("name").doNothing())
        .returning("id")
        .executeTakeFirst();
      if (!inserted) {
        throw new InputError(`a user or service account named "${input.name}" already exists; choose another name`, {
          code: "PRINCIPAL_EXISTS",
          location: { field: "name" },
        });
      }
      await recordAudit(trx, audit, now);
      return (await principalsWhere(trx, "id", inserted.id))[0]!;
    });
  }

  async principal(name: string): Promise<PrincipalRecord | undefined> {
    return (await principalsWhere(this.#db, "name", name))[0];
  }

  async principalById(id: string): Promise<PrincipalRecord | undefined> {
    return (await principalsWhere(this.#db, "id", id))[0];
  }

  async passwordHash(name: string): Promise<{ principal: PrincipalRecord; hash: string } | undefined> {
    const row = await this.#db
      .selectFrom("principals")
      .select(["id", "password_hash"])
      .where("name", "=", name)
      .where("kind", "=", "user")
      .where("disabled_at", "is", null)
      .executeTakeFirst();
    if (!row?.password_hash) return undefined;
    const principal = (await principalsWhere(this.#db, "id", row.id))[0]!;
    return { principal, hash: row.password_hash };
  }

  async setPassword(name: string, passwordHash: string, audit: AuditEntry, now: Date): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable("principals")
        .set({ password_hash: passwordHash })
        .where("name", "=", name)
        .where("kind", "=", "user")
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) throw notFound("user", name);
      // A new password ends the sessions signed in with the old one.
      await trx
        .deleteFrom("sessions")
        .where("principal_id", "in", trx.selectFrom("principals").select("id").where("name", "=", name))
        .execute();
      await recordAudit(trx, audit, now);
    });
  }

  async setDisabled(name: string, disabled: boolean, audit: AuditEntry, now: Date): Promise<PrincipalRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable("principals")
        .set({ disabled_at: disabled ? now : null })
        .where("name", "=", name)
        .returning("id")
        .executeTakeFirst();
      if (!row) throw notFound("user or service account", name);
      if (disabled) await trx.deleteFrom("sessions").where("principal_id", "=", row.id).execute();
      await recordAudit(trx, audit, now);
      return (await principalsWhere(trx, "id", row.id))[0]!;
    });
  }

  listPrincipals(): Promise<PrincipalRecord[]> {
    return principalsWhere(this.#db, undefined, undefined);
  }

  async oidcPrincipal(issuer: string, subject: string, preferredName: string, audit: AuditEntry, now: Date): Promise<PrincipalRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const existing = await trx
        .selectFrom("principals")
        .select("id")
        .where("oidc_issuer", "=", issuer)
        .where("oidc_subject", "=", subject)
        .executeTakeFirst();
      if (existing) return (await principalsWhere(trx, "id", existing.id))[0]!;
      // A user an admin created under this name without a password (for sign-in through the provider) is this
      // identity from now on. A user with a password is never taken over: the provider's name claims are not
      // proof of owning a local account (anyone whose provider lets them pick a name could become "admin").
      const named = await trx
        .selectFrom("principals")
        .select(["id", "oidc_subject", "password_hash"])
        .where("name", "=", preferredName)
        .where("kind", "=", "user")
        .executeTakeFirst();
      let id: string;
      if (named && named.oidc_subject === null && named.password_hash === null) {
        await trx.updateTable("principals").set({ oidc_issuer: issuer, oidc_subject: subject }).where("id", "=", named.id).execute();
        id = named.id;
      } else {
        // Names are at most 100 characters: a taken one keeps room for its suffix.
        const name = named ? `${preferredName.slice(0, 93)}-${randomBytes(3).toString("hex")}` : preferredName;
        id = (
          await trx
            .insertInto("principals")
            .values({ name, kind: "user", oidc_issuer: issuer, oidc_subject: subject, created_at: now })
            .returning("id")
            .executeTakeFirstOrThrow()
        ).id;
      }
      await recordAudit(trx, { ...audit, principalId: id }, now);
      return (await principalsWhere(trx, "id", id))[0]!;
    });
  }

  async createToken(
    input: { principalName: string; tokenHash: string; prefix: string; description: string; expiresAt: Date | null },
    audit: AuditEntry,
    now: Date,
  ): Promise<TokenRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const owner = await trx.selectFrom("principals").select("id").where("name", "=", input.principalName).executeTakeFirst();
      if (!owner) throw notFound("user or service account", input.principalName);
      const id = randomUUID();
      await trx
        .insertInto("api_tokens")
        .values({
          id,
          principal_id: owner.id,
          token_hash: input.tokenHash,
          prefix: input.prefix,
          description: input.description,
          expires_at: input.expiresAt,
          created_at: now,
        })
        .execute();
      await recordAudit(trx, { ...audit, detail: { ...audit.detail, tokenId: id, prefix: input.prefix } }, now);
      return (await tokensWhere(trx, { id }))[0]!;
    });
  }

  listTokens(principalName?: string): Promise<TokenRecord[]> {
    return tokensWhere(this.#db, { principalName });
  }

  async revokeToken(idOrPrefix: string, audit: AuditEntry, now: Date): Promise<TokenRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrPrefix);
      const matches = await trx
        .selectFrom("api_tokens")
        .select("id")
        .where((eb) => (uuid ? eb("id", "=", idOrPrefix) : eb("prefix", "=", idOrPrefix)))
        .forUpdate()
        .execute();
      if (matches.length === 0) {
        throw new InputError(`no token has the id or prefix "${idOrPrefix}"; \`tributary tokens list\` shows them`, {
          code: "TOKEN_NOT_FOUND",
        });
      }
      if (matches.length > 1) {
        throw new InputError(`${matches.length} tokens start with "${idOrPrefix}"; revoke by id (\`tributary tokens list\`)`, {
          code: "TOKEN_AMBIGUOUS",
        });
      }
      const id = matches[0]!.id;
      await trx.updateTable("api_tokens").set({ revoked_at: now }).where("id", "=", id).where("revoked_at", "is", null).execute();
      await recordAudit(trx, { ...audit, detail: { ...audit.detail, tokenId: id } }, now);
      return (await tokensWhere(trx, { id }))[0]!;
    });
  }

  async tokenOwner(tokenHash: string, now: Date): Promise<CredentialOwner | undefined> {
    const row = await this.#db
      .selectFrom("api_tokens as t")
      .innerJoin("principals as p", "p.id", "t.principal_id")
      .select(["t.id", "t.principal_id", "t.last_used_at"])
      .where("t.token_hash", "=", tokenHash)
      .where("t.revoked_at", "is", null)
      .where((eb) => eb.or([eb("t.expires_at", "is", null), eb("t.expires_at", ">", now)]))
      .where("p.disabled_at", "is", null)
      .executeTakeFirst();
    if (!row) return undefined;
    if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS) {
      await this.#db.updateTable("api_tokens").set({ last_used_at: now }).where("id", "=", row.id).execute();
    }
    const principal = (await principalsWhere(this.#db, "id", row.principal_id))[0]!;
    return { principal, tokenId: row.id };
  }

  async createSession(
    input: { idHash: string; principalId: string; method: "password" | "oidc"; expiresAt: Date },
    audit: AuditEntry,
    now: Date,
  ): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .insertInto("sessions")
        .values({
          id_hash: input.idHash,
          principal_id: input.principalId,
          method: input.method,
          expires_at: input.expiresAt,
          created_at: now,
          last_seen_at: now,
        })
        .execute();
      // Expired sessions of anyone are cleared as new ones begin: the table holds live sessions only.
      await trx.deleteFrom("sessions").where("expires_at", "<=", now).execute();
      await recordAudit(trx, audit, now);
    });
  }

  async sessionOwner(idHash: string, now: Date): Promise<CredentialOwner | undefined> {
    const row = await this.#db
      .selectFrom("sessions as s")
      .innerJoin("principals as p", "p.id", "s.principal_id")
      .select(["s.principal_id"])
      .where("s.id_hash", "=", idHash)
      .where("s.expires_at", ">", now)
      .where("p.disabled_at", "is", null)
      .executeTakeFirst();
    if (!row) return undefined;
    const principal = (await principalsWhere(this.#db, "id", row.principal_id))[0]!;
    return { principal, tokenId: null };
  }

  async endSession(idHash: string, audit: AuditEntry, now: Date): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom("sessions").where("id_hash", "=", idHash).execute();
      await recordAudit(trx, audit, now);
    });
  }

  async createTeam(name: string, audit: AuditEntry, now: Date): Promise<TeamRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto("teams")
        .values({ name, created_at: now })
        .onConflict((oc) => oc.column("name").doNothing())
        .returning("name")
        .executeTakeFirst();
      if (!inserted) throw new InputError(`a team named "${name}" already exists`, { code: "TEAM_EXISTS", location: { field: "name" } });
      await recordAudit(trx, audit, now);
      return (await teamsWhere(trx, name))[0]!;
    });
  }

  async setOwnership(
    team: string,
    own: { kind: "group" | "owner"; value: string; remove?: boolean },
    audit: AuditEntry,
    now: Date,
  ): Promise<TeamRecord> {
    return this.#db.transaction().execute(async (trx) => {
      await requireTeam(trx, team);
      if (own.remove) {
        await trx
          .deleteFrom("team_ownership")
          .where("team", "=", team)
          .where("kind", "=", own.kind)
          .where("value", "=", own.value)
          .execute();
      } else {
        await trx
          .insertInto("team_ownership")
          .values({ team, kind: own.kind, value: own.value })
          .onConflict((oc) => oc.doNothing())
          .execute();
      }
      await recordAudit(trx, audit, now);
      return (await teamsWhere(trx, team))[0]!;
    });
  }

  listTeams(): Promise<TeamRecord[]> {
    return teamsWhere(this.#db, undefined);
  }

  async grant(input: { principalName: string; role: Role; team: string | null }, audit: AuditEntry, now: Date): Promise<PrincipalRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const principal = await trx.selectFrom("principals").select("id").where("name", "=", input.principalName).executeTakeFirst();
      if (!principal) throw notFound("user or service account", input.principalName);
      if (input.team !== null) await requireTeam(trx, input.team);
      await sql`
        insert into grants (principal_id, role, team, created_at) values (${principal.id}, ${input.role}, ${input.team}, ${now})
        on conflict (principal_id, role, coalesce(team, '')) do nothing`.execute(trx);
      await recordAudit(trx, audit, now);
      return (await principalsWhere(trx, "id", principal.id))[0]!;
    });
  }

  async revokeGrant(
    input: { principalName: string; role: Role; team: string | null },
    audit: AuditEntry,
    now: Date,
  ): Promise<PrincipalRecord> {
    return this.#db.transaction().execute(async (trx) => {
      const principal = await trx.selectFrom("principals").select("id").where("name", "=", input.principalName).executeTakeFirst();
      if (!principal) throw notFound("user or service account", input.principalName);
      await trx
        .deleteFrom("grants")
        .where("principal_id", "=", principal.id)
        .where("role", "=", input.role)
        .where((eb) => (input.team === null ? eb("team", "is", null) : eb("team", "=", input.team)))
        .execute();
      await recordAudit(trx, audit, now);
      return (await principalsWhere(trx, "id", principal.id))[0]!;
    });
  }

  async signingSecret(): Promise<{ id: string; secret: string }> {
    const existing = await this.#db
      .selectFrom("signing_keys")
      .select(["id", "secret"])
      .orderBy("created_at", "desc")
      .limit(1)
      .executeTakeFirst();
    if (existing) return existing;
    // Two servers starting together: the unique id makes one insert win; both then read the same key.
    await this.#db
      .insertInto("signing_keys")
      .values({ id: "primary", secret: randomBytes(32).toString("base64url") })
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
    return this.#db.selectFrom("signing_keys").select(["id", "secret"]).where("id", "=", "primary").executeTakeFirstOrThrow();
  }

  audit(entry: AuditEntry, now: Date): Promise<void> {
    return recordAudit(this.#db, entry, now);
  }

  auditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    return listAuditEvents(this.#db, query);
  }
}

function notFound(what: string, name: string): InputError {
  return new InputError(`no ${what} is named "${name}"; \`tributary users list\` shows them`, {
    code: "PRINCIPAL_NOT_FOUND",
    location: { field: "name" },
  });
}

async function requireTeam(db: Kysely<Database>, team: string): Promise<void> {
  const row = await db.selectFrom("teams").select("name").where("name", "=", team).executeTakeFirst();
  if (!row) {
    throw new InputError(`no team is named "${team}"; create it with \`tributary teams create ${team}\``, {
      code: "TEAM_NOT_FOUND",
      location: { field: "team" },
    });
  }
}

async function principalsWhere(
  db: Kysely<Database>,
  column: "id" | "name" | undefined,
  value: string | undefined,
): Promise<PrincipalRecord[]> {
  let q = db.selectFrom("principals").select(["id", "name", "kind", "password_hash", "disabled_at", "created_at"]);
  if (column && value !== undefined) q = q.where(column, "=", value);
  const rows: PrincipalRow[] = await q.orderBy("name").execute();
  if (rows.length === 0) return [];
  const grants = await db
    .selectFrom("grants")
    .select(["principal_id", "role", "team"])
    .where(
      "principal_id",
      "in",
      rows.map((r) => r.id),
    )
    .orderBy("team")
    .orderBy("role")
    .execute();
  const byPrincipal = new Map<string, Grant[]>();
  for (const g of grants) {
    const list = byPrincipal.get(g.principal_id) ?? [];
    list.push({ role: g.role, team: g.team });
    byPrincipal.set(g.principal_id, list);
  }
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    kind: r.kind,
    hasPassword: r.password_hash !== null,
    disabled: r.disabled_at !== null,
    grants: byPrincipal.get(r.id) ?? [],
    createdAt: r.created_at,
  }));
}

async function tokensWhere(db: Kysely<Database>, where: { id?: string; principalName?: string | undefined }): Promise<TokenRecord[]> {
  let q = db
    .selectFrom("api_tokens as t")
    .innerJoin("principals as p", "p.id", "t.principal_id")
    .select(["t.id", "p.name", "p.kind", "t.prefix", "t.description", "t.expires_at", "t.revoked_at", "t.last_used_at", "t.created_at"]);
  if (where.id) q = q.where("t.id", "=", where.id);
  if (where.principalName !== undefined) q = q.where("p.name", "=", where.principalName);
  const rows = await q.orderBy("t.created_at").execute();
  return rows.map((r) => ({
    id: r.id,
    principalName: r.name,
    principalKind: r.kind,
    prefix: r.prefix,
    description: r.description,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
    createdAt: r.created_at,
  }));
}

async function teamsWhere(db: Kysely<Database>, name: string | undefined): Promise<TeamRecord[]> {
  let q = db.selectFrom("teams").select("name");
  if (name !== undefined) q = q.where("name", "=", name);
  const teams = await q.orderBy("name").execute();
  if (teams.length === 0) return [];
  const names = teams.map((t) => t.name);
  const [owned, members] = await Promise.all([
    db.selectFrom("team_ownership").select(["team", "kind", "value"]).where("team", "in", names).orderBy("value").execute(),
    db
      .selectFrom("grants as g")
      .innerJoin("principals as p", "p.id", "g.principal_id")
      .select(["g.team", "p.name", "g.role"])
      .where("g.team", "in", names)
      .orderBy("p.name")
      .execute(),
  ]);
  return names.map((team) => ({
    name: team,
    groups: owned.filter((o) => o.team === team && o.kind === "group").map((o) => o.value),
    owners: owned.filter((o) => o.team === team && o.kind === "owner").map((o) => o.value),
    members: members.filter((m) => m.team === team).map((m) => ({ principal: m.name, role: m.role })),
  }));
}

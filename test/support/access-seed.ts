import type { Kysely } from "kysely";
import { hashPassword, type Role } from "../../src/access/index.js";
import { PgAccessStore, type Database } from "../../src/storage/index.js";

export interface SeededUser {
  readonly name: string;
  /** Absent: a user who signs in through an OIDC provider only. */
  readonly password?: string;
  readonly grants?: readonly { readonly role: Role; readonly team: string | null }[];
  /** An API token of theirs (from newApiToken), for requests with `authorization: Bearer`. */
  readonly token?: { readonly prefix: string; readonly hash: string };
}

export interface SeededTeam {
  readonly name: string;
  readonly groups?: readonly string[];
  readonly owners?: readonly string[];
}

const SEEDING = { principalId: null, principalName: "test-seed", action: "seed", outcome: "success" } as const;

/** Teams (with the groups and owners they own) and users (with their grants), as an admin would create them. */
export async function seedAccess(
  db: Kysely<Database>,
  seed: { teams?: readonly SeededTeam[]; users: readonly SeededUser[] },
): Promise<void> {
  const store = new PgAccessStore(db);
  const now = new Date();
  for (const team of seed.teams ?? []) {
    await store.createTeam(team.name, SEEDING, now);
    for (const value of team.groups ?? []) await store.setOwnership(team.name, { kind: "group", value }, SEEDING, now);
    for (const value of team.owners ?? []) await store.setOwnership(team.name, { kind: "owner", value }, SEEDING, now);
  }
  for (const user of seed.users) {
    await store.createPrincipal(
      { name: user.name, kind: "user", ...(user.password ? { passwordHash: await hashPassword(user.password) } : {}) },
      SEEDING,
      now,
    );
    for (const grant of user.grants ?? []) await store.grant({ principalName: user.name, ...grant }, SEEDING, now);
    if (user.token) {
      await store.createToken(
        { principalName: user.name, tokenHash: user.token.hash, prefix: user.token.prefix, description: "test", expiresAt: null },
        SEEDING,
        now,
      );
    }
  }
}

import { createHash } from "node:crypto";
import { sql } from "kysely";
import { expect, it } from "vitest";
import { Authenticator } from "../../src/access/index.js";
import { PgAccessStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { cliBudget, runCli, type CliResult } from "./run-cli.js";

// The access commands (users, tokens, teams, grant, revoke, audit), each a real `tributary` process working on a test
// Postgres database in its own process, as an operator runs them.
describePostgres("tributary users, tokens, teams, grant, revoke and audit", () => {
  const database = useTestDatabase();
  const cli = (args: string[], input?: string) =>
    runCli(args, { env: { DATABASE_URL: database.url }, ...(input === undefined ? {} : { input }) });
  const ok = (r: CliResult) => expect(r.code, r.stdout + r.stderr).toBe(0);

  it(
    "refuses bad names, roles, lifetimes and passwords naming the flag, before the database is opened",
    async () => {
      // Nothing listens on port 9: a command that tried to open the database would fail to connect instead.
      const unreachable = { DATABASE_URL: "postgres://postgres@127.0.0.1:9/none" };
      const cases: { args: string[]; input?: string; error: string }[] = [
        {
          args: ["users", "create", "x'; DROP TABLE principals; --"],
          error: `[INPUT_INVALID] <name>: "x'; DROP TABLE principals; --" is not a valid name: 1 to 100 letters, digits`,
        },
        { args: ["grant", "admin", "--to", "robert');--"], error: `[INPUT_INVALID] --to: "robert');--" is not a valid name` },
        {
          args: ["teams", "own", "sales team", "--group", "g1"],
          error: '[INPUT_INVALID] <team>: "sales team" is not a valid team name',
        },
        { args: ["grant", "root", "--to", "ann"], error: '[INPUT_INVALID] <role>: "root" is not a role: give viewer, operator or admin' },
        {
          args: ["tokens", "create", "--service", "etl", "--expires", "forever"],
          error: '[INPUT_INVALID] --expires: "forever" is not a lifetime: write e.g. 30d, 12h or "never"',
        },
        { args: ["audit", "--since", "yesterday"], error: '[INPUT_INVALID] --since: "yesterday" is neither a duration' },
        {
          args: ["users", "create", "bob", "--password-stdin"],
          input: "seven77\n",
          error: "[PASSWORD_TOO_SHORT] the password must be at least 8",
        },
        { args: ["users", "create", "etl", "--service", "--password-stdin"], input: "long enough\n", error: "[SERVICE_ACCOUNT_PASSWORD]" },
        { args: ["users", "password", "bob"], error: "[PASSWORD_STDIN_REQUIRED] users password: give --password-stdin" },
      ];
      const results = await Promise.all(cases.map((c) => runCli(c.args, { env: unreachable, ...(c.input ? { input: c.input } : {}) })));
      results.forEach((r, i) => {
        expect(r.code, `${cases[i]!.args.join(" ")}: ${r.stderr}`).toBe(1);
        expect(r.stderr).toContain(cases[i]!.error);
        expect(r.stderr).not.toMatch(/ECONNREFUSED|connect/i);
      });
    },
    cliBudget(3),
  );

  it(
    "creates users, service accounts, tokens (shown once, stored hashed), teams and grants, and audits each change as the local caller",
    async () => {
      const store = new PgAccessStore(database.db);
      const [admin, etl, team] = await Promise.all([
        cli(["users", "create", "ann", "--admin", "--password-stdin"], "first password\n"),
        cli(["users", "create", "etl", "--service"]),
        cli(["teams", "create", "sales"]),
      ]);
      [admin, etl, team].forEach(ok);
      expect(admin.stdout).toContain('created user "ann" with admin of every asset and the instance');
      expect(etl.stdout).toContain('created service account "etl", without any role');
      expect(etl.stdout).toContain("tributary tokens create --service etl");

      const [created, plain, owned, granted, password, wrongKind] = await Promise.all([
        cli(["tokens", "create", "--service", "etl", "--expires", "12h", "--description", "nightly loads", "--json"]),
        cli(["tokens", "create", "--user", "ann"]),
        cli(["teams", "own", "sales", "--group", "g1"]),
        cli(["grant", "operator", "--team", "sales", "--to", "etl"]),
        cli(["users", "password", "ann", "--password-stdin"], "second password\n"),
        cli(["tokens", "create", "--user", "etl"]),
      ]);
      [created, plain, owned, granted, password].forEach(ok);
      const token = JSON.parse(created.stdout) as { token: string; id: string; prefix: string; expiresAt: string };
      expect(token.token).toMatch(/^trb_[A-Za-z0-9_-]{43}$/);
      expect(token.prefix).toBe(token.token.slice(0, 12));
      const lifetime = new Date(token.expiresAt).getTime() - Date.now();
      expect(lifetime).toBeGreaterThan(11 * 3600_000);
      expect(lifetime).toBeLessThanOrEqual(12 * 3600_000);
      expect(created.stderr).toContain("the token will not be shown again");
      // Without --json: the token alone on stdout (for `$(…)`), what it is and the warning on stderr.
      expect(plain.stdout).toMatch(/^trb_[A-Za-z0-9_-]{43}\n$/);
      expect(plain.stderr).toMatch(/token [0-9a-f-]{36} for user "ann", expires \d{4}-/);
      expect(plain.stderr).toContain("the token will not be shown again");
      expect(granted.stdout).toContain('granted operator on sales to service account "etl"; it holds operator on sales');
      expect(password.stdout).toContain('set the password of user "ann"');
      expect(wrongKind.code).toBe(1);
      expect(wrongKind.stderr).toContain('[PRINCIPAL_KIND_MISMATCH] --user: "etl" is a service account; name it with --service etl');

      // Only the tokens' sha256 is stored; the password is an argon2id hash, and the new one is the one that works.
      const rows = await database.db.selectFrom("api_tokens").select(["id", "token_hash", "prefix"]).execute();
      expect(rows.find((r) => r.id === token.id)?.token_hash).toBe(createHash("sha256").update(token.token).digest("hex"));
      const stored = JSON.stringify(await sql`select * from api_tokens`.execute(database.db));
      expect(stored).not.toContain(token.token);
      expect((await store.passwordHash("ann"))?.hash).toMatch(/^\$argon2id\$/);
      const authenticator = new Authenticator(store, { open: false });
      await expect(authenticator.checkPassword("ann", "second password", null, "signIn")).resolves.toMatchObject({ name: "ann" });

      const [teams, disabled, badRevoke] = await Promise.all([
        cli(["teams", "list", "--json"]),
        cli(["users", "disable", "etl"]),
        cli(["revoke", "viewer", "--team", "sales", "--from", "etl"]),
      ]);
      [teams, disabled].forEach(ok);
      expect((JSON.parse(teams.stdout) as { teams: unknown[] }).teams).toEqual([
        { name: "sales", groups: ["g1"], owners: [], assets: [], members: [{ principal: "etl", role: "operator" }] },
      ]);
      expect(disabled.stdout).toContain('disabled service account "etl": its tokens and sessions no longer work');
      expect(badRevoke.code).toBe(1);
      expect(badRevoke.stderr).toContain('[GRANT_NOT_FOUND] "etl" does not hold viewer on sales: it holds operator on sales');

      const [users, revoked, audit] = await Promise.all([
        cli(["users", "list"]),
        cli(["tokens", "revoke", token.prefix]),
        cli(["audit", "--user", "local", "--action", "createToken", "--json"]),
      ]);
      [users, revoked, audit].forEach(ok);
      expect(users.stdout).toMatch(/^ann\s+user\s+set\s+enabled\s+admin of every asset and the instance\s+\d{4}-/m);
      expect(users.stdout).toMatch(/^etl\s+service account\s+disabled\s+operator on sales\s+\d{4}-/m);
      expect(revoked.stdout).toContain(`revoked token ${token.id} (${token.prefix}) of service account "etl"`);
      const events = (JSON.parse(audit.stdout) as { events: { principalName: string; outcome: string; detail: Record<string, unknown> }[] })
        .events;
      expect(events).toHaveLength(2);
      for (const e of events) expect(e).toMatchObject({ principalName: "local", outcome: "success", detail: { via: "cli" } });
      expect(events.map((e) => e.detail.name).sort()).toEqual(["ann", "etl"]);

      const [enabled, ungranted, tokens] = await Promise.all([
        cli(["users", "enable", "etl"]),
        cli(["revoke", "operator", "--team", "sales", "--from", "etl", "--json"]),
        cli(["tokens", "list", "--user", "etl", "--json"]),
      ]);
      [enabled, ungranted, tokens].forEach(ok);
      expect(enabled.stdout).toContain('enabled service account "etl"');
      expect((JSON.parse(ungranted.stdout) as { user: { grants: unknown[] } }).user.grants).toEqual([]);
      // Listings never hold a token: its prefix, owner, description, times and state.
      expect(tokens.stdout).not.toContain(token.token);
      const listed = (JSON.parse(tokens.stdout) as { tokens: Record<string, unknown>[] }).tokens;
      expect(listed).toEqual([
        {
          id: token.id,
          prefix: token.prefix,
          owner: "etl",
          ownerKind: "service",
          description: "nightly loads",
          createdAt: expect.any(String),
          expiresAt: token.expiresAt,
          lastUsedAt: null,
          revokedAt: expect.any(String),
          state: "revoked",
        },
      ]);

      // Every change is in the trail, written with it; the refused ones (a wrong kind, a grant not held) are not.
      const actions = (await store.auditEvents({ limit: 100 })).map((e) => e.action).sort();
      expect(actions).toEqual(
        [
          "createTeam",
          "createToken",
          "createToken",
          "createUser",
          "createUser",
          "disableUser",
          "enableUser",
          "grantRole",
          "grantRole",
          "revokeRole",
          "revokeToken",
          "setPassword",
          "setTeamOwnership",
        ].sort(),
      );
    },
    cliBudget(8),
  );
});

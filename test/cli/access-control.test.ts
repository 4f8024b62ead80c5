import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { auditEntry, hashPassword, localCaller, newApiToken, signAccessToken, type Role } from "../../src/access/index.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";
import { PgAccessStore, PgRunStore, PgTryTokenStore } from "../../src/storage/index.js";
import { storeDefinitions } from "../api/graphql-fixture.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { cliBudget, eventually, runCli, startCli, type CliResult } from "./run-cli.js";

// Access control end to end: users and tokens made by the CLI, then a real `tributary api` process on a test Postgres
// database asked over HTTP, as clients ask it. Each refusal is checked for its status and for writing nothing.

// Team A owns group "ga"; team B owns group "gb" and the assets whose owner is finance@example.com.
const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01", timezone: "UTC" });
export const orders = asset({ key: "a/orders", group: "ga", partitions: days }, async () => 1);
export const stock = asset({ key: "b/stock", group: "gb", partitions: days }, async () => 2);
export const ledger = asset({ key: "b/ledger", owner: "finance@example.com", partitions: days }, async () => 3);
`;

const ADMIN_PASSWORD = "correct horse battery";
const LAUNCH = `mutation ($input: LaunchRunInput!) { launchRun(input: $input) { id } }`;

interface Answer {
  status: number;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[]; [key: string]: unknown };
  headers: Headers;
}

/** Rows a request may write. */
interface Written {
  runs: number;
  steps: number;
  events: number;
  pools: number;
  audit: number;
}

interface Issued {
  token: string;
  id: string;
}

describePostgres("access control end to end (tributary api on Postgres)", () => {
  const database = useTestDatabase();
  let store: PgAccessStore;
  let removeDefinitions: () => Promise<void>;
  let logsDir: string;
  let api: ReturnType<typeof startCli>;
  let base: string;
  /** Every credential handed out here: none may ever appear in the server's log. */
  const credentials: string[] = [];
  const tokens = {} as Record<"opsA" | "viewerA" | "nobody" | "teamAdmin" | "expired" | "revoked" | "disabled", Issued>;

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, DEFS);
    logsDir = await mkdtemp(path.join(tmpdir(), "tributary-access-logs-"));
    store = new PgAccessStore(database.db);
    const env = { DATABASE_URL: database.url };
    const cli = (args: string[], input?: string) => runCli(args, { env, ...(input === undefined ? {} : { input }) });
    const ok = (rs: CliResult[]) => rs.forEach((r) => expect(r.code, r.stdout + r.stderr).toBe(0));

    // The first admin, a service account of team A and its token, as an operator sets them up.
    ok(
      await Promise.all([
        cli(["users", "create", "admin", "--admin", "--password-stdin"], `${ADMIN_PASSWORD}\n`),
        cli(["users", "create", "ops-a", "--service"]),
        cli(["teams", "create", "team-a"]),
      ]),
    );
    const second = await Promise.all([
      cli(["tokens", "create", "--service", "ops-a", "--description", "team A's loads", "--json"]),
      cli(["teams", "own", "team-a", "--group", "ga"]),
      cli(["grant", "operator", "--team", "team-a", "--to", "ops-a"]),
    ]);
    ok(second);
    tokens.opsA = JSON.parse(second[0]!.stdout) as Issued;

    // The other principals through the store those commands use.
    const setup = (action: string) => auditEntry(localCaller(), action, { detail: { via: "test" } });
    const now = new Date();
    await store.createTeam("team-b", setup("createTeam"), now);
    await store.setOwnership("team-b", { kind: "group", value: "gb" }, setup("setTeamOwnership"), now);
    await store.setOwnership("team-b", { kind: "owner", value: "finance@example.com" }, setup("setTeamOwnership"), now);
    const tokenFor = async (name: string, expiresAt: Date | null = null): Promise<Issued> => {
      const t = newApiToken();
      const record = await store.createToken(
        { principalName: name, tokenHash: t.hash, prefix: t.prefix, description: "", expiresAt },
        setup("createToken"),
        now,
      );
      return { token: t.token, id: record.id };
    };
    const service = async (name: string, grants: { role: Role; team: string | null }[]): Promise<Issued> => {
      await store.createPrincipal({ name, kind: "service" }, setup("createUser"), now);
      for (const g of grants) await store.grant({ principalName: name, ...g }, setup("grantRole"), now);
      return tokenFor(name);
    };
    tokens.viewerA = await service("viewer-a", [{ role: "viewer", team: "team-a" }]);
    tokens.nobody = await service("nobody", []);
    tokens.teamAdmin = await service("admin-a", [{ role: "admin", team: "team-a" }]);
    tokens.disabled = await service("gone", [{ role: "operator", team: null }]);
    await store.setDisabled("gone", true, setup("disableUser"), now);
    tokens.expired = await tokenFor("ops-a", new Date(now.getTime() - 60_000));
    tokens.revoked = await tokenFor("ops-a");
    await store.revokeToken(tokens.revoked.id, setup("revokeToken"), now);
    await store.createPrincipal(
      { name: "target", kind: "user", passwordHash: await hashPassword("the real password") },
      setup("createUser"),
      now,
    );
    credentials.push(...Object.values(tokens).map((t) => t.token));

    api = startCli(["api", "--port", "0"], { env: { DATABASE_URL: database.url, TRIBUTARY_LOGS_DIR: logsDir } });
    const port = await eventually(
      async () => Number(/serving the API at http:\/\/127\.0\.0\.1:(\d+)/.exec(api.output())?.[1]) || undefined,
      120_000,
      () => `tributary api to listen\n${api.output()}`,
    );
    base = `http://127.0.0.1:${port}`;
  }, cliBudget(3));

  afterAll(async () => {
    if (api && api.exitCode === null) {
      const exited = new Promise((resolve) => api.once("exit", resolve));
      api.kill("SIGTERM");
      await exited;
    }
    await removeDefinitions?.();
    if (logsDir) await rm(logsDir, { recursive: true, force: true });
  });

  async function call(pathname: string, init: { method?: string; authorization?: string; body?: unknown } = {}): Promise<Answer> {
    const res = await fetch(`${base}${pathname}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: {
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        ...(init.authorization === undefined ? {} : { authorization: init.authorization }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    return { status: res.status, body: (await res.json()) as Answer["body"], headers: res.headers };
  }
  const gql = (token: string | undefined, query: string, variables: Record<string, unknown> = {}) =>
    call("/graphql", { body: { query, variables }, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) });
  const launch = (token: string | undefined, assetKeys: string[], partition = "2025-01-02") =>
    gql(token, LAUNCH, { input: { assetKeys, partition } });
  const codeOf = (a: Answer) => a.body.errors?.[0]?.extensions?.code ?? a.body.code;
  const messageOf = (a: Answer) => a.body.errors?.[0]?.message ?? "";

  /** What a request may have written: runs, steps, events, pools and audit records. */
  async function written(): Promise<Written> {
    const { rows } = await sql<Written>`
      select (select count(*) from runs)::int as runs, (select count(*) from steps)::int as steps,
             (select count(*) from events)::int as events, (select count(*) from pools)::int as pools,
             (select count(*) from audit_events)::int as audit`.execute(database.db);
    return rows[0]!;
  }
  /** The newest `n` audit records, oldest first. */
  const lastAudit = async (n: number) => (await store.auditEvents({ limit: n })).reverse();
  const adminAccessToken = async (): Promise<string> => {
    const r = await call("/auth/token", { body: { username: "admin", password: ADMIN_PASSWORD } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const token = r.body.access_token as string;
    credentials.push(token);
    return token;
  };

  it("answers 401 to a missing, malformed, expired, revoked, forged or unknown credential, and writes nothing", async () => {
    const admin = (await store.principal("admin"))!;
    const key = await store.signingSecret();
    const forged = await signAccessToken({ id: key.id, secret: randomBytes(32).toString("base64url") }, admin, new Date());
    const expiredJwt = await signAccessToken(key, admin, new Date(Date.now() - 2 * 3600_000));
    credentials.push(forged, expiredJwt);
    const cases: { what: string; authorization: string | undefined; code: string }[] = [
      { what: "no credential", authorization: undefined, code: "UNAUTHENTICATED" },
      { what: "not a bearer token", authorization: "Basic YWRtaW46cGFzc3dvcmQ=", code: "TOKEN_MALFORMED" },
      { what: "a bearer token of no known shape", authorization: "Bearer not-a-token", code: "TOKEN_MALFORMED" },
      { what: "an empty bearer", authorization: "Bearer ", code: "TOKEN_MALFORMED" },
      { what: "an unknown API token", authorization: `Bearer ${newApiToken().token}`, code: "TOKEN_INVALID" },
      { what: "an expired API token", authorization: `Bearer ${tokens.expired.token}`, code: "TOKEN_INVALID" },
      { what: "a revoked API token", authorization: `Bearer ${tokens.revoked.token}`, code: "TOKEN_INVALID" },
      { what: "a disabled service account's token", authorization: `Bearer ${tokens.disabled.token}`, code: "TOKEN_INVALID" },
      { what: "an access token signed with another key", authorization: `Bearer ${forged}`, code: "TOKEN_INVALID" },
      { what: "an expired access token", authorization: `Bearer ${expiredJwt}`, code: "TOKEN_EXPIRED" },
    ];
    const before = await written();
    for (const c of cases) {
      const body = { query: LAUNCH, variables: { input: { assetKeys: ["a/orders"], partition: "2025-01-02" } } };
      const graphql = await call("/graphql", { body, ...(c.authorization === undefined ? {} : { authorization: c.authorization }) });
      expect([c.what, graphql.status, codeOf(graphql)]).toEqual([c.what, 401, c.code]);
      expect(graphql.headers.get("www-authenticate")).toBe('Bearer realm="tributary"');
      const rest = await call("/api/v1/dags", c.authorization === undefined ? {} : { authorization: c.authorization });
      expect([c.what, rest.status, codeOf(rest)]).toEqual([c.what, 401, c.code]);
    }
    expect(await written()).toEqual(before);
  });

  it("answers 401 on /graphql to a worker's per-try execution token, which /execution/v1 accepts", async () => {
    const launched = await launch(tokens.opsA.token, ["a/orders"], "2025-01-05");
    expect(launched.status, JSON.stringify(launched.body)).toBe(200);
    const runs = new PgRunStore(database.db, RUN_DECISIONS);
    const claims = await runs.claimRunnable({ now: new Date(), capacity: { local: 10 }, limit: 10 });
    const [issued] = await new PgTryTokenStore(database.db).issue(claims, new Date());
    expect(issued).toBeDefined();
    credentials.push(issued!.token);

    const inputs = await call(`/execution/v1/tries/${issued!.stepId}/${issued!.tryNumber}/inputs`, {
      authorization: `Bearer ${issued!.token}`,
    });
    expect(inputs.status, JSON.stringify(inputs.body)).toBe(200);
    const before = await written();
    const refused = await launch(issued!.token, ["a/orders"]);
    expect([refused.status, codeOf(refused)]).toEqual([401, "TOKEN_MALFORMED"]);
    // Nor does an API token open the execution API.
    const crossed = await call(`/execution/v1/tries/${issued!.stepId}/${issued!.tryNumber}/inputs`, {
      authorization: `Bearer ${tokens.opsA.token}`,
    });
    expect(crossed.status).toBe(401);
    expect(await written()).toEqual(before);
  });

  it("answers 403 to a token without any grant: the refusal names the asset and the role, and only it is recorded", async () => {
    const before = await written();
    const r = await launch(tokens.nobody.token, ["a/orders"]);
    expect([r.status, codeOf(r)]).toEqual([403, "FORBIDDEN"]);
    expect(messageOf(r)).toBe(
      'launchRun: service account "nobody" needs the operator role on asset "a/orders", owned by team "team-a"; nothing was changed',
    );
    expect(await written()).toEqual({ ...before, audit: before.audit + 1 });
    const [denied] = await lastAudit(1);
    expect(denied).toMatchObject({
      principalName: "nobody",
      tokenId: tokens.nobody.id,
      action: "launchRun",
      outcome: "denied",
      assets: ["a/orders"],
      partitions: ["2025-01-02"],
      detail: { missingRole: "operator", asset: "a/orders" },
    });
  });

  it("lets a viewer of team A read, and refuses its launchRun, clearPartitions, cancelRun and reportAssetEvent with 403", async () => {
    const run = await launch(tokens.opsA.token, ["a/orders"], "2025-01-03");
    const runId = (run.body.data!.launchRun as { id: string }).id;

    const read = await gql(tokens.viewerA.token, "{ me { name kind via } assets { key viewerCan { view operate } } }");
    expect(read.status).toBe(200);
    expect(read.body.data!.me).toEqual({ name: "viewer-a", kind: "service", via: "api-token" });
    expect(read.body.data!.assets).toEqual([
      { key: "a/orders", viewerCan: { view: true, operate: false } },
      { key: "b/ledger", viewerCan: { view: false, operate: false } },
      { key: "b/stock", viewerCan: { view: false, operate: false } },
    ]);

    const before = await written();
    const attempts: [string, string, Record<string, unknown>][] = [
      ["launchRun", LAUNCH, { input: { assetKeys: ["a/orders"], partition: "2025-01-02" } }],
      [
        "clearPartitions",
        "mutation ($input: ClearPartitionsInput!) { clearPartitions(input: $input) { id } }",
        { input: { assetKey: "a/orders", partition: "2025-01-03" } },
      ],
      ["cancelRun", "mutation ($id: String!) { cancelRun(id: $id) { id } }", { id: runId }],
      [
        "reportAssetEvent",
        "mutation ($input: ReportAssetEventInput!) { reportAssetEvent(input: $input) { eventId } }",
        { input: { assetKey: "a/orders", partition: "2025-01-02" } },
      ],
    ];
    for (const [action, query, variables] of attempts) {
      const r = await gql(tokens.viewerA.token, query, variables);
      expect([action, r.status, codeOf(r)]).toEqual([action, 403, "FORBIDDEN"]);
      expect(messageOf(r)).toBe(
        `${action}: service account "viewer-a" needs the operator role on asset "a/orders", owned by team "team-a"; nothing was changed`,
      );
    }
    expect(await written()).toEqual({ ...before, audit: before.audit + attempts.length });
    const denied = await lastAudit(attempts.length);
    expect(denied.map((e) => e.action)).toEqual(attempts.map(([action]) => action));
    for (const e of denied) {
      expect(e).toMatchObject({
        principalName: "viewer-a",
        tokenId: tokens.viewerA.id,
        outcome: "denied",
        assets: ["a/orders"],
        detail: { missingRole: "operator", asset: "a/orders" },
      });
    }
    expect((await new PgRunStore(database.db, RUN_DECISIONS).getRun(runId))?.status).not.toBe("canceled");
  });

  it("refuses an operator of team A team B's assets, and a launch touching both teams' assets as a whole", async () => {
    const before = await written();
    const cases: [string[], string, string][] = [
      [["b/stock"], "b/stock", "team-b"],
      [["b/ledger"], "b/ledger", "team-b"],
      [["a/orders", "b/stock"], "b/stock", "team-b"],
    ];
    for (const [keys, refusedKey, team] of cases) {
      const r = await launch(tokens.opsA.token, keys);
      expect([keys, r.status, codeOf(r)]).toEqual([keys, 403, "FORBIDDEN"]);
      expect(messageOf(r)).toBe(
        `launchRun: service account "ops-a" needs the operator role on asset "${refusedKey}", owned by team "${team}"; nothing was changed`,
      );
    }
    expect(await written()).toEqual({ ...before, audit: before.audit + cases.length });
    const [, , both] = await lastAudit(3);
    expect(both).toMatchObject({ outcome: "denied", assets: ["a/orders", "b/stock"], detail: { asset: "b/stock" } });
  });

  it("lets an operator of team A launch its own asset, audited with principal, token, assets, partitions and run", async () => {
    const before = await written();
    const r = await gql(tokens.opsA.token, LAUNCH, { input: { assetKeys: ["a/orders"], from: "2025-01-07", to: "2025-01-08" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const runId = (r.body.data!.launchRun as { id: string }).id;
    const after = await written();
    expect(after.runs).toBe(before.runs + 1);
    expect(after.audit).toBe(before.audit + 1);
    const [record] = await lastAudit(1);
    expect(record).toMatchObject({
      principalName: "ops-a",
      principalId: (await store.principal("ops-a"))!.id,
      tokenId: tokens.opsA.id,
      action: "launchRun",
      outcome: "success",
      assets: ["a/orders"],
      partitions: ["2025-01-07", "2025-01-08"],
      detail: { runId },
    });
    expect(record!.address).toMatch(/127\.0\.0\.1/);
  });

  it("lets only an admin without a team set a pool's slots", async () => {
    const setSlots = (token: string) => gql(token, `mutation { setPoolSlots(name: "warehouse", slots: 3) { name slots } }`);
    const before = await written();
    for (const [token, who] of [
      [tokens.opsA.token, 'service account "ops-a"'],
      [tokens.teamAdmin.token, 'service account "admin-a"'],
    ] as const) {
      const r = await setSlots(token);
      expect([who, r.status, codeOf(r)]).toEqual([who, 403, "FORBIDDEN"]);
      expect(messageOf(r)).toContain(`setPoolSlots: ${who} needs the admin role without a team`);
    }
    expect(await written()).toEqual({ ...before, audit: before.audit + 2 });
    const allowed = await setSlots(await adminAccessToken());
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    expect(allowed.body.data!.setPoolSlots).toEqual({ name: "warehouse", slots: 3 });
    const [, record] = await lastAudit(2); // the access token's issue, then the change
    expect(record).toMatchObject({ principalName: "admin", tokenId: null, action: "setPoolSlots", outcome: "success" });
  });

  it("exchanges a good password for an access token (POST /auth/token) that GraphQL and /api/v1 accept, as an Airflow client does", async () => {
    const r = await call("/auth/token", { body: { username: "admin", password: ADMIN_PASSWORD } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ token_type: "bearer", expires_in: 3600 });
    const jwt = r.body.access_token as string;
    credentials.push(jwt);
    expect(jwt).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
    const me = await gql(jwt, "{ me { name kind via admin } }");
    expect(me.body.data!.me).toEqual({ name: "admin", kind: "user", via: "access-token", admin: true });
    const dags = await call("/api/v1/dags", { authorization: `Bearer ${jwt}` });
    expect(dags.status).toBe(200);
    expect(dags.body.total_entries).toBe(3);
    // The issue is in the trail, with the address it came from.
    const issued = (await store.auditEvents({ action: "createAccessToken", principalName: "admin", limit: 1 }))[0];
    expect(issued).toMatchObject({ outcome: "success", principalId: (await store.principal("admin"))!.id });
  });

  it("refuses 20 wrong passwords, throttling them after the free attempts (429 SIGN_IN_THROTTLED), and audits every attempt", async () => {
    const before = await written();
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await call("/auth/token", { body: { username: "target", password: `guess ${i}` } }));
    // The first five are heard and refused; later ones wait out a doubling delay, answered 429 while it lasts.
    expect(answers.slice(0, 5).map((a) => [a.status, codeOf(a)])).toEqual(Array(5).fill([401, "SIGN_IN_FAILED"]));
    for (const a of answers.slice(5))
      expect([
        [401, "SIGN_IN_FAILED"],
        [429, "SIGN_IN_THROTTLED"],
      ]).toContainEqual([a.status, codeOf(a)]);
    const throttled = answers.filter((a) => a.status === 429);
    expect(throttled.length).toBeGreaterThan(0);
    expect(throttled[0]!.body.detail).toMatch(/^too many failed sign-ins for "target"; try again in \d+ s$/);
    expect(await written()).toEqual({ ...before, audit: before.audit + 20 });
    const attempts = await lastAudit(20);
    for (const [i, e] of attempts.entries()) {
      expect(e).toMatchObject({
        principalName: "target",
        principalId: null,
        action: "createAccessToken",
        outcome: answers[i]!.status === 429 ? "denied" : "failed",
        detail: { reason: answers[i]!.status === 429 ? "throttled" : "bad name or password" },
      });
      expect(e.address).toMatch(/127\.0\.0\.1/);
    }
  });

  it(
    "sends TRIBUTARY_TOKEN from the CLI: `tributary runs --url` lists runs with a token, and says what to do without one",
    async () => {
      const [withToken, without] = await Promise.all([
        runCli(["runs", "--url", base, "--json"], { env: { TRIBUTARY_TOKEN: tokens.viewerA.token } }),
        runCli(["runs", "--url", base, "--json"]),
      ]);
      expect(withToken.code, withToken.stdout + withToken.stderr).toBe(0);
      expect(withToken.stdout).toContain('"status"');
      expect(without.code).toBe(1);
      expect(without.stdout).toContain(`"code": "UNAUTHENTICATED"`);
      expect(without.stdout).toContain(`the server at ${base} refused the request`);
      expect(without.stdout).toContain("set TRIBUTARY_TOKEN or pass --token (`tributary tokens create`)");
    },
    cliBudget(1),
  );

  it("keeps the audit trail as written: the database refuses an UPDATE, and no mutation of the API touches it", async () => {
    await expect(sql`update audit_events set outcome = 'success' where outcome = 'denied'`.execute(database.db)).rejects.toThrow(
      /audit_events is append-only/,
    );
    expect((await store.auditEvents({ limit: 1000 })).filter((e) => e.outcome === "denied").length).toBeGreaterThan(0);
    const schema = await gql(tokens.opsA.token, '{ __type(name: "Mutation") { fields { name } } }');
    const mutations = (schema.body.data!.__type as { fields: { name: string }[] }).fields.map((f) => f.name);
    expect(mutations.length).toBeGreaterThan(5);
    expect(mutations.filter((m) => /audit/i.test(m))).toEqual([]);
    // Reading it is an admin's: an operator is refused.
    const read = await gql(tokens.opsA.token, "{ auditEvents(first: 5) { id } }");
    expect([read.status, codeOf(read)]).toEqual([403, "FORBIDDEN"]);
  });

  it("never shows a bearer token in the server's log, even when a request quotes one", async () => {
    // A token pasted where an asset key belongs: the error quotes it, and the server logs the error.
    const quoted = await gql(
      tokens.opsA.token,
      "mutation ($input: ReportAssetEventInput!) { reportAssetEvent(input: $input) { eventId } }",
      {
        input: { assetKey: tokens.opsA.token },
      },
    );
    expect(messageOf(quoted)).toContain(tokens.opsA.token);
    await eventually(
      async () => (/graphql: GRAPH_UNKNOWN_ASSET: no asset has the key "\*\*\*"/.test(api.output()) ? true : undefined),
      30_000,
      () => `the logged error\n${api.output()}`,
    );
    const output = api.output();
    expect(credentials.length).toBeGreaterThan(10);
    for (const credential of credentials) expect(output).not.toContain(credential);
  });
});

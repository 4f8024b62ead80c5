import { sql } from "kysely";
import { beforeAll, expect, it } from "vitest";
import { auditEntry, hashPassword, localCaller, secretHash } from "../../src/access/index.js";
import { createApiApp } from "../../src/api/index.js";
import { PgAccessStore } from "../../src/storage/index.js";
import { apiServicesOn } from "../support/api-services.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";

// The UI's sign-in: a session cookie that scripts cannot read and other sites cannot ride on. The app over a real
// database, asked in-process: what is checked here is the cookie and the Origin, not a socket.
describePostgres("sign-in sessions (POST /auth/login, the session cookie, /auth/logout)", () => {
  const database = useTestDatabase();
  const password = "a long enough password";
  const own = { host: "tributary.example", origin: "http://tributary.example" };
  let app: ReturnType<typeof createApiApp>;

  beforeAll(async () => {
    const store = new PgAccessStore(database.db);
    const setup = (action: string) => auditEntry(localCaller(), action, { detail: { via: "test" } });
    await store.createPrincipal({ name: "ann", kind: "user", passwordHash: await hashPassword(password) }, setup("createUser"), new Date());
    await store.grant({ principalName: "ann", role: "admin", team: null }, setup("grantRole"), new Date());
    app = createApiApp({
      context: apiServicesOn(database.db, { openAccess: false }),
      ping: async () => {},
      version: "test",
      safety: { publicHosts: [own.host] },
    });
  });

  const post = (path: string, headers: Record<string, string>, body: unknown) =>
    app.request(`http://${own.host}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", host: own.host, ...headers },
      body: JSON.stringify(body),
    });
  const setSlots = (headers: Record<string, string>) =>
    post("/graphql", headers, { query: 'mutation { setPoolSlots(name: "nightly", slots: 2) { slots } }' });
  const count = async (table: "sessions" | "pools") =>
    (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(database.db)).rows[0]!.n;

  it("refuses a sign-in posted from another site, and gives its own pages an HttpOnly, SameSite=Strict cookie stored as a hash", async () => {
    const foreign = await post("/auth/login", { origin: "https://evil.example" }, { username: "ann", password });
    // The origin check in front of every route refuses it before sign-in is looked at.
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe("ORIGIN_NOT_ALLOWED");
    expect(foreign.headers.get("set-cookie")).toBeNull();
    expect(await count("sessions")).toBe(0);

    const signedIn = await post("/auth/login", { origin: own.origin }, { username: "ann", password });
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^tributary_session=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).not.toContain("Secure"); // plain http here; behind TLS (x-forwarded-proto: https) it is Secure
    const value = /^tributary_session=([^;]+)/.exec(cookie)![1]!;
    const { rows } = await sql<{ id_hash: string }>`select id_hash from sessions`.execute(database.db);
    expect(rows).toEqual([{ id_hash: secretHash(value) }]);

    const overTls = await post("/auth/login", { origin: own.origin, "x-forwarded-proto": "https" }, { username: "ann", password });
    expect(overTls.headers.get("set-cookie")).toContain("Secure");
  });

  it("refuses a change riding on the cookie from another site (403, nothing written), allows its own pages, and ends at sign-out", async () => {
    const signedIn = await post("/auth/login", { origin: own.origin }, { username: "ann", password });
    const cookie = /^(tributary_session=[^;]+)/.exec(signedIn.headers.get("set-cookie")!)![1]!;
    const pools = await count("pools");

    // A foreign Origin is refused in front of every route; a browser that says the request crossed sites (without an
    // Origin) is refused where the session cookie is read.
    const crossSite: [Record<string, string>, string][] = [
      [{ origin: "https://evil.example" }, "ORIGIN_NOT_ALLOWED"],
      [{ "sec-fetch-site": "cross-site" }, "CROSS_ORIGIN_REFUSED"],
    ];
    for (const [headers, code] of crossSite) {
      const r = await setSlots({ cookie, ...headers });
      expect(r.status).toBe(403);
      expect(((await r.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe(code);
    }
    expect(await count("pools")).toBe(pools);

    const allowed = await setSlots({ cookie, origin: own.origin });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ data: { setPoolSlots: { slots: 2 } } });

    const session = await app.request(`http://${own.host}/auth/session`, { headers: { cookie, host: own.host } });
    expect(await session.json()).toMatchObject({ accessControl: true, caller: { name: "ann", kind: "user" } });

    const out = await post("/auth/logout", { cookie, origin: own.origin }, {});
    expect(out.status).toBe(200);
    const after = await setSlots({ cookie, origin: own.origin });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe("SESSION_EXPIRED");
  });
});

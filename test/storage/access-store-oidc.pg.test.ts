import { expect, it } from "vitest";
import { Authenticator, hashPassword, oidcUserName } from "../../src/access/index.js";
import { PgAccessStore } from "../../src/storage/index.js";
import { seedAccess } from "../support/access-seed.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";

// Which user an OIDC identity signs in as: the one it signed in as before, a passwordless user an admin made under
// its name, or a new user; never a user with a password, whatever name the provider gives.
describePostgres("OIDC identities and users", () => {
  const database = useTestDatabase();
  const ISSUER = "https://login.example.com";
  const audit = { principalId: null, principalName: "test", action: "createUser", outcome: "success" } as const;

  it("finds, links or creates the user of an identity", async () => {
    const store = new PgAccessStore(database.db);
    await seedAccess(database.db, {
      teams: [{ name: "ops" }],
      users: [
        { name: "root", password: "correct horse battery", grants: [{ role: "admin", team: null }] },
        { name: "pia", grants: [{ role: "operator", team: "ops" }] },
      ],
    });
    const now = new Date();

    // An admin made "pia" without a password: the identity named pia is her from now on, grants and all.
    const pia = await store.oidcPrincipal(ISSUER, "sub-pia", "pia", audit, now);
    expect(pia).toMatchObject({ name: "pia", grants: [{ role: "operator", team: "ops" }] });
    // Found by the identity, not the name, next time (a provider may rename a user; the subject stays).
    expect((await store.oidcPrincipal(ISSUER, "sub-pia", "pia.renamed", audit, now)).id).toBe(pia.id);
    // Another identity calling itself pia is someone else.
    const otherPia = await store.oidcPrincipal(ISSUER, "sub-other", "pia", audit, now);
    expect(otherPia.name).toMatch(/^pia-[0-9a-f]{6}$/);
    expect(otherPia.grants).toEqual([]);

    // "root" has a password: a provider's "root" never becomes that admin.
    const impostor = await store.oidcPrincipal(ISSUER, "sub-root", "root", audit, now);
    expect(impostor.name).toMatch(/^root-[0-9a-f]{6}$/);
    expect(impostor.grants).toEqual([]);
    expect((await store.passwordHash("root"))?.principal.grants).toEqual([{ role: "admin", team: null }]);

    // The longest name a provider may give still leaves room for the suffix of a taken one.
    const long = "x".repeat(90);
    await store.createPrincipal({ name: long, kind: "user", passwordHash: await hashPassword("correct horse battery") }, audit, now);
    expect((await store.oidcPrincipal(ISSUER, "sub-long", long, audit, now)).name).toMatch(new RegExp(`^${long}-[0-9a-f]{6}$`));
  });

  it("signs in the user of an identity, and refuses a disabled one, auditing both", async () => {
    const store = new PgAccessStore(database.db);
    const authenticator = new Authenticator(store, { open: false });
    const { caller, sessionId } = await authenticator.signInWithOidc({ issuer: ISSUER, subject: "sub-quinn", name: "quinn" }, "10.0.0.1");
    expect(caller).toMatchObject({ name: "quinn", kind: "user", via: "session", grants: [] });
    expect(await authenticator.callerOf({ sessionId, address: null })).toMatchObject({ name: "quinn" });

    await store.setDisabled("quinn", true, audit, new Date());
    await expect(authenticator.signInWithOidc({ issuer: ISSUER, subject: "sub-quinn", name: "quinn" }, "10.0.0.1")).rejects.toMatchObject({
      code: "USER_DISABLED",
    });
    const events = await store.auditEvents({ principalName: "quinn", limit: 10 });
    expect(events.map((e) => [e.action, e.outcome])).toEqual([
      ["signIn", "failed"],
      ["signIn", "success"],
      ["createUser", "success"],
    ]);
  });

  it("names users from preferred_username, else email, else sub, as user names may be written", () => {
    expect(oidcUserName({ sub: "1", preferred_username: "ana", email: "a@example.com" })).toBe("ana");
    expect(oidcUserName({ sub: "1", email: "ana.lima@example.com" })).toBe("ana.lima@example.com");
    expect(oidcUserName({ sub: "248289761001" })).toBe("248289761001");
    expect(oidcUserName({ sub: "1", preferred_username: "Ana Lima" })).toBe("Ana-Lima");
    expect(oidcUserName({ sub: "1", preferred_username: "  ·· " })).toBe("1");
    expect(oidcUserName({ sub: "1", preferred_username: "y".repeat(300) })).toHaveLength(90);
    expect(oidcUserName({ sub: "|||" })).toMatch(/^oidc-[0-9a-f]+$/);
  });
});

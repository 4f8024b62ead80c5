import type { Page } from "playwright-core";
import { afterAll, expect, it } from "vitest";
import { PgAccessStore } from "../../src/storage/index.js";
import { storeDefinitions } from "../api/graphql-fixture.js";
import { seedAccess } from "../support/access-seed.js";
import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, startOidcProvider, type TestOidcProvider } from "../support/oidc-test-provider.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useSignedInUi } from "./browser.js";

// Single sign-on against a real OpenID Connect provider started here (oidc-provider), with `tributary api` over
// Postgres configured by TRIBUTARY_OIDC_*: Chromium follows the whole flow through the provider's login form; a
// provider that is down, a state that does not match, a replayed answer and a sign-in not started in this browser are
// refused.
const DEFS = `
import { asset } from "tributary";
export const orders = asset({ key: "sales/orders", group: "sales" }, async () => 1);
`;

const ORDERS_PAGE = "/assets/sales/orders";

describeBrowser("UI sign-in with an OpenID Connect provider", () => {
  const database = useTestDatabase();
  let provider: TestOidcProvider | undefined;
  const ui = useSignedInUi({
    databaseUrl: () => database.url,
    prepare: async () => {
      await (
        await storeDefinitions(database.db, DEFS)
      )();
      await seedAccess(database.db, {
        teams: [{ name: "sales", groups: ["sales"] }],
        users: [
          { name: "admin", password: "correct horse battery", grants: [{ role: "admin", team: null }] },
          // Made by an admin for single sign-on: no password, a role already.
          { name: "olga", grants: [{ role: "operator", team: "sales" }] },
        ],
      });
      provider = await startOidcProvider();
    },
    env: () => ({
      TRIBUTARY_OIDC_ISSUER: provider!.issuer,
      TRIBUTARY_OIDC_CLIENT_ID: OIDC_CLIENT_ID,
      TRIBUTARY_OIDC_CLIENT_SECRET: OIDC_CLIENT_SECRET,
      TRIBUTARY_OIDC_LABEL: "Test IdP",
    }),
  });
  afterAll(async () => {
    await provider?.close();
  });

  const store = () => new PgAccessStore(database.db);

  /** From the sign-in page of `page` to the provider's login form, and through it as `login`. */
  async function signInAtProvider(page: Page, login: string): Promise<void> {
    await page.getByTestId("sign-in-oidc").click();
    await submitProviderLogin(page, login);
  }

  async function submitProviderLogin(page: Page, login: string): Promise<void> {
    await page.locator("input[name=login]").fill(login);
    await page.locator("input[name=password]").fill("any password will do");
    await page.locator("button[type=submit]").click();
  }

  it("explains a provider that cannot be reached, and works once it can", async () => {
    const start = await fetch(`${ui.dev.url}/auth/oidc/start?next=/assets`, {
      redirect: "manual",
      headers: { accept: "application/json" },
    });
    expect(start.status).toBe(502);
    const problem = (await start.json()) as { code: string; detail: string };
    expect(problem.code).toBe("OIDC_PROVIDER_UNAVAILABLE");
    expect(problem.detail).toContain(`the sign-in provider ${provider!.issuer} cannot be reached`);
    // The server did not crash: it still serves, and the sign-in page offers the provider.
    const session = await (await fetch(`${ui.dev.url}/auth/session`)).json();
    expect(session).toEqual({
      accessControl: true,
      caller: null,
      oidc: { enabled: true, label: "Test IdP", start: "/auth/oidc/start" },
    });
    const { page } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/assets");
    await page.getByTestId("sign-in-oidc").click();
    await expect.poll(() => page.getByTestId("oidc-error").textContent()).toContain("OIDC_PROVIDER_UNAVAILABLE");
    await page.context().close();

    // Discovery is tried again on the next sign-in.
    provider!.serve(`${ui.dev.url}/auth/oidc/callback`);
    const again = await fetch(`${ui.dev.url}/auth/oidc/start?next=/assets`, { redirect: "manual" });
    expect(again.status).toBe(302);
    expect(again.headers.get("location")).toMatch(new RegExp(`^${provider!.issuer}/`));
  });

  it("signs in through the provider's login form and returns to the page wanted; the session works on /graphql", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto(ORDERS_PAGE);
    await page.getByTestId("sign-in-page").waitFor();
    expect(await page.getByTestId("sign-in-oidc").textContent()).toBe("Sign in with Test IdP");
    await screenshot(page, "sign-in-oidc");
    expectNoProblems(problems.filter((p) => !p.includes("401")));
    await signInAtProvider(page, "ana");

    await page.getByTestId("asset-page").waitFor();
    problems.length = 0; // what the provider's own pages met is not ours to check
    expect(new URL(page.url()).pathname).toBe(ORDERS_PAGE);
    expect(await page.getByTestId("caller-name").textContent()).toBe("ana");
    // A new user has no roles: the asset can be seen (the catalog is public to users), not materialised.
    expect(await page.getByTestId("caller-roles").textContent()).toBe("no roles yet");
    expect(await page.getByTestId("materialise").count()).toBe(0);
    const me = await page.evaluate(async () => {
      const res = await fetch("/graphql", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ me { name kind via admin } }" }),
      });
      return res.json() as Promise<unknown>;
    });
    expect(me).toEqual({ data: { me: { name: "ana", kind: "user", via: "session", admin: false } } });
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === "tributary_session")).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    // The flow's cookie is spent.
    expect(cookies.some((c) => c.name === "tributary_oidc")).toBe(false);
    expectNoProblems(problems);

    const ana = await store().principal("ana");
    expect(ana).toMatchObject({ kind: "user", hasPassword: false, grants: [] });
    const signIns = await store().auditEvents({ principalName: "ana", action: "signIn", limit: 10 });
    expect(signIns.map((e) => [e.outcome, e.detail])).toEqual([["success", { method: "oidc" }]]);

    // Signing in again (the provider remembers ana: no login form this time) is the same user, not a new one.
    await page.getByTestId("sign-out").click();
    await page.getByTestId("sign-in-oidc").click();
    await expect.poll(() => page.getByTestId("caller-name").textContent()).toBe("ana");
    expect((await store().listPrincipals()).filter((p) => p.name.startsWith("ana"))).toHaveLength(1);
    await page.context().close();
  });

  it("signs in as the passwordless user an admin made for that name, never as a user with a password", async () => {
    const olga = await openPage(ui.browser, ui.dev.url);
    await olga.page.goto(ORDERS_PAGE);
    await signInAtProvider(olga.page, "olga");
    await expect.poll(() => olga.page.getByTestId("caller-name").textContent()).toBe("olga");
    expect(await olga.page.getByTestId("caller-roles").textContent()).toBe("operator of sales");
    await olga.page.getByTestId("materialise").waitFor();
    await olga.page.context().close();

    // The provider calls someone "admin": that is not the local admin (who has a password), but a new user.
    const impostor = await openPage(ui.browser, ui.dev.url);
    await impostor.page.goto("/assets");
    await signInAtProvider(impostor.page, "admin");
    await expect.poll(() => impostor.page.getByTestId("caller-name").textContent()).toMatch(/^admin-[0-9a-f]{6}$/);
    expect(await impostor.page.getByTestId("caller-roles").textContent()).toBe("no roles yet");
    await impostor.page.context().close();
  });

  it("refuses a state that does not match, a replayed answer and an answer to a sign-in this browser did not start, auditing each", async () => {
    const { page } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/assets");
    await page.getByTestId("sign-in-oidc").click();
    await page.locator("input[name=login]").waitFor();
    // Another tab of the same browser starts another sign-in: the provider's answer to the first one then carries a
    // state this browser no longer waits for.
    const other = await page.context().newPage();
    await other.goto("/auth/oidc/start?next=/runs");
    await other.locator("input[name=login]").waitFor();
    await submitProviderLogin(page, "eve");
    await expect.poll(() => page.getByTestId("oidc-error").textContent()).toContain("OIDC_STATE_MISMATCH");
    expect((await page.context().cookies()).some((c) => c.name === "tributary_session")).toBe(false);
    await other.close();

    // A genuine answer used twice: the second finds its flow spent. (The provider remembers eve: no login form.)
    let answer: string | undefined;
    page.on("request", (r) => {
      if (r.url().includes("/auth/oidc/callback?")) answer ??= r.url();
    });
    await page.goto("/assets");
    await page.getByTestId("sign-in-oidc").click();
    await expect.poll(() => page.getByTestId("caller-name").textContent()).toBe("eve");
    await page.goto(answer!);
    await expect.poll(() => page.getByTestId("oidc-error").textContent()).toContain("OIDC_FLOW_MISSING");
    await page.context().close();

    // An answer sent to a browser that never started a sign-in (or with a cookie this server did not sign).
    const stray = await fetch(`${ui.dev.url}/auth/oidc/callback?code=a-code&state=a-state`, {
      headers: { accept: "application/json", cookie: "tributary_oidc=eyJzdGF0ZSI6ImEtc3RhdGUifQ" },
    });
    expect(stray.status).toBe(400);
    expect(((await stray.json()) as { code: string }).code).toBe("OIDC_FLOW_MISSING");

    const failed = (await store().auditEvents({ action: "signIn", limit: 100 })).filter((e) => e.outcome === "failed");
    const reasons = failed.map((e) => String((e.detail as { reason?: string }).reason));
    expect(reasons.filter((r) => r.startsWith("OIDC_STATE_MISMATCH"))).toHaveLength(1);
    expect(reasons.filter((r) => r.startsWith("OIDC_FLOW_MISSING"))).toHaveLength(2);
    expect(failed.every((e) => (e.detail as { method?: string }).method === "oidc")).toBe(true);
  });
});

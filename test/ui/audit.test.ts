import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { newApiToken } from "../../src/access/index.js";
import { PgAccessStore, recordAudit } from "../../src/storage/index.js";
import { storeDefinitions } from "../api/graphql-fixture.js";
import { seedAccess } from "../support/access-seed.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, graphqlFrom, openPage, screenshot, signedIn, submitSignIn, useSignedInUi } from "./browser.js";

// The audit trail in the UI of a server that controls access (`tributary api` over Postgres): an admin reads what
// was done (a refused sign-in, a launch from the UI, a service account's report through its token, a refusal),
// filters it in the URL and pages back through it; a viewer is told the page is for admins, and the API refuses them.
const DEFS = `
import { asset } from "tributary";
export const orders = asset({ key: "sales/orders", group: "sales" }, async () => 1);
`;

const PASSWORD = "correct horse battery";
const ETL_TOKEN = newApiToken();
/** Older records of one service account, more than a page of them. */
const FILLER_RECORDS = 60;

describeBrowser("UI audit trail", () => {
  const database = useTestDatabase();
  const ui = useSignedInUi({
    databaseUrl: () => database.url,
    prepare: async () => {
      await (
        await storeDefinitions(database.db, DEFS)
      )();
      await seedAccess(database.db, {
        teams: [{ name: "sales", groups: ["sales"] }],
        users: [
          { name: "admin", password: PASSWORD, grants: [{ role: "admin", team: null }] },
          { name: "vera", password: PASSWORD, grants: [{ role: "viewer", team: "sales" }] },
        ],
      });
      const store = new PgAccessStore(database.db);
      const seeding = { principalId: null, principalName: "test-seed", action: "seed", outcome: "success" } as const;
      const now = new Date();
      await store.createPrincipal({ name: "etl", kind: "service" }, seeding, now);
      await store.grant({ principalName: "etl", role: "operator", team: "sales" }, seeding, now);
      await store.createToken(
        { principalName: "etl", tokenHash: ETL_TOKEN.hash, prefix: ETL_TOKEN.prefix, description: "nightly loads", expiresAt: null },
        seeding,
        now,
      );
      const bot = (await store.principal("etl"))!;
      for (let i = FILLER_RECORDS; i >= 1; i--) {
        await recordAudit(
          database.db,
          {
            principalId: bot.id,
            principalName: "etl",
            principalKind: "service",
            action: "setPoolSlots",
            outcome: "denied",
            detail: { pool: "warehouse", slots: i, missingRole: "admin" },
          },
          new Date(now.getTime() - i * 60_000),
        );
      }
    },
  });

  /** The rows the page shows, top to bottom. */
  const rowsOf = (page: Page) =>
    page.getByTestId("audit-row").evaluateAll((rows) =>
      rows.map((r) => {
        const text = (id: string) => r.querySelector(`[data-testid="${id}"]`)?.textContent ?? null;
        return {
          id: Number(r.getAttribute("data-id")),
          action: r.getAttribute("data-action"),
          principal: text("audit-principal"),
          kind: text("audit-kind"),
          token: text("audit-token"),
          outcome: text("audit-outcome-label"),
          reason: text("audit-reason"),
          target: text("audit-target"),
          runLink: r.querySelector('[data-testid="audit-run-link"]')?.getAttribute("href") ?? null,
        };
      }),
    );

  it("shows an admin who did what, newest first: a wrong password, a launch, a token's report, a refusal", async () => {
    // A wrong password for vera: the attempt is audited, nobody is signed in.
    const attempt = await openPage(ui.browser, ui.dev.url);
    await attempt.page.goto("/");
    await submitSignIn(attempt.page, "vera", "not the password");
    await expect.poll(() => attempt.page.getByTestId("sign-in-error").textContent()).toContain("wrong");
    await attempt.page.context().close();

    // The admin launches a run from the asset page.
    const admin = await signedIn(ui, "admin", PASSWORD, "/assets/sales/orders");
    await admin.page.getByTestId("materialise").click();
    const result = admin.page.getByTestId("action-result");
    await result.waitFor();
    const runId = (await result.getAttribute("data-id"))!;

    // A service account reports an event with its API token.
    const reported = await fetch(`${ui.dev.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ETL_TOKEN.token}` },
      body: JSON.stringify({ query: 'mutation { reportAssetEvent(input: { assetKey: "sales/orders" }) { assetKey } }' }),
    });
    expect(reported.status, await reported.clone().text()).toBe(200);

    // A viewer's launch, sent anyway, is refused.
    const viewer = await signedIn(ui, "vera", PASSWORD, "/assets");
    const refused = await graphqlFrom(viewer.page, `mutation ($input: LaunchRunInput!) { launchRun(input: $input) { id } }`, {
      input: { assetKeys: ["sales/orders"] },
    });
    expect(refused.status).toBe(403);
    await viewer.page.context().close();

    await admin.page.getByRole("link", { name: "Audit", exact: true }).click();
    await admin.page.getByTestId("audit-table").waitFor();
    expect(new URL(admin.page.url()).pathname).toBe("/audit");
    const rows = await rowsOf(admin.page);
    expect(rows.slice(0, 6).map((r) => [r.action, r.principal, r.kind, r.outcome])).toEqual([
      ["launchRun", "vera", "user", "refused"],
      ["signIn", "vera", "user", "success"],
      ["reportAssetEvent", "etl", "service account", "success"],
      ["launchRun", "admin", "user", "success"],
      ["signIn", "admin", "user", "success"],
      ["signIn", "vera", "unverified", "failed"],
    ]);
    const [refusal, , report, launch, , wrongPassword] = rows;
    expect(refusal!.reason).toBe('needs the operator role on asset "sales/orders"');
    expect(refusal!.target).toContain("sales/orders");
    expect(report!.token).toBe(`token ${ETL_TOKEN.prefix} (nightly loads)`);
    expect(launch!.target).toContain("sales/orders");
    expect(launch!.runLink).toBe(`/runs/${runId}`);
    expect(wrongPassword!.reason).toBe("bad name or password");
    // Newest first all the way down: the seeded records come last.
    expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort((a, b) => b - a));
    await screenshot(admin.page, "audit");

    // The run's id leads to its page.
    await admin.page.locator(`[data-testid=audit-run-link][href="/runs/${runId}"]`).click();
    await admin.page.getByTestId("run-page").waitFor();
    expect(new URL(admin.page.url()).pathname).toBe(`/runs/${runId}`);
    expectNoProblems(admin.problems.filter((p) => !p.includes("401")));
    await admin.page.context().close();
  });

  it("narrows the list by outcome and user in the URL, keeps it on a reload, and loads older records", async () => {
    const { page, problems } = await signedIn(ui, "admin", PASSWORD, "/audit");
    await page.getByTestId("audit-table").waitFor();

    await page.getByTestId("filter-outcome").selectOption("failed");
    await expect.poll(async () => new URL(page.url()).searchParams.get("outcome")).toBe("failed");
    await expect
      .poll(async () => (await rowsOf(page)).map((r) => [r.action, r.principal, r.outcome]))
      .toEqual([["signIn", "vera", "failed"]]);

    await page.reload();
    await page.getByTestId("audit-table").waitFor();
    expect(await page.getByTestId("filter-outcome").inputValue()).toBe("failed");
    expect((await rowsOf(page)).map((r) => [r.action, r.principal, r.outcome])).toEqual([["signIn", "vera", "failed"]]);

    // The service account's records: its report and more than a page of refusals, newest first.
    await page.getByTestId("filter-outcome").selectOption("");
    await page.getByTestId("filter-user").fill("etl");
    await page.getByTestId("filter-user").press("Enter");
    await expect.poll(async () => new URL(page.url()).search).toBe("?user=etl");
    await expect.poll(async () => (await rowsOf(page)).length).toBe(50);
    const first = await rowsOf(page);
    expect(first[0]!.action).toBe("reportAssetEvent");
    expect(new Set(first.map((r) => r.principal))).toEqual(new Set(["etl"]));
    expect(first[1]).toMatchObject({ action: "setPoolSlots", outcome: "refused", reason: "needs the admin role without a team" });
    expect(first[1]!.target).toContain("pool: warehouse · slots: 1");

    await page.getByTestId("audit-older").click();
    await expect.poll(async () => (await rowsOf(page)).length).toBe(FILLER_RECORDS + 1);
    const all = await rowsOf(page);
    expect(all.at(-1)!.target).toContain(`slots: ${FILLER_RECORDS}`);
    expect(new Set(all.map((r) => r.id)).size).toBe(all.length);
    expect(all.map((r) => r.id)).toEqual([...all.map((r) => r.id)].sort((a, b) => b - a));
    await expect(page.getByTestId("audit-end").textContent()).resolves.toBe(`${FILLER_RECORDS + 1} records, the oldest that match`);
    expect(await page.getByTestId("audit-older").count()).toBe(0);

    await page.reload();
    await expect.poll(async () => (await rowsOf(page)).length).toBe(50);
    expect(await page.getByTestId("filter-user").inputValue()).toBe("etl");
    expectNoProblems(problems.filter((p) => !p.includes("401")));
    await page.context().close();
  });

  it("tells a viewer the audit trail is for admins, offers no link to it, and the API refuses them", async () => {
    const { page, problems } = await signedIn(ui, "vera", PASSWORD, "/assets");
    await page.getByRole("link", { name: "Runs", exact: true }).waitFor();
    expect(await page.getByRole("link", { name: "Audit", exact: true }).count()).toBe(0);

    await page.goto("/audit");
    await expect.poll(() => page.getByTestId("audit-admins-only").textContent()).toContain("Only admins can read the audit trail.");
    expect(await page.getByTestId("audit-table").count()).toBe(0);

    const read = await graphqlFrom(page, "{ auditEvents(first: 5) { id action } }");
    expect(read.status).toBe(403);
    expect(read.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expectNoProblems(problems.filter((p) => !p.includes("401") && !p.includes("403")));
    await page.context().close();
  });
});

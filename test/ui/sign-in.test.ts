import { expect, it } from "vitest";
import { storeDefinitions } from "../api/graphql-fixture.js";
import { seedAccess } from "../support/access-seed.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, graphqlFrom, openPage, screenshot, signedIn, submitSignIn, useSignedInUi } from "./browser.js";

// Signing in to the UI of a server that controls access (`tributary api` over Postgres, with seeded teams and
// users): the password form and its refusals, the header's caller, actions offered only to those who may take them
// (and refused by the API all the same), and signing out.
const DEFS = `
import { asset } from "tributary";
export const orders = asset({ key: "sales/orders", group: "sales" }, async () => 1);
export const costs = asset({ key: "finance/costs", group: "finance" }, async () => 2);
`;

const PASSWORD = "correct horse battery";
const ORDERS_PAGE = "/assets/sales/orders";

describeBrowser("UI sign-in", () => {
  const database = useTestDatabase();
  const ui = useSignedInUi({
    databaseUrl: () => database.url,
    prepare: async () => {
      // Stored once: the definitions' directory is not needed after.
      await (
        await storeDefinitions(database.db, DEFS)
      )();
      await seedAccess(database.db, {
        teams: [
          { name: "sales", groups: ["sales"] },
          { name: "finance", groups: ["finance"] },
        ],
        users: [
          { name: "admin", password: PASSWORD, grants: [{ role: "admin", team: null }] },
          { name: "vera", password: PASSWORD, grants: [{ role: "viewer", team: "sales" }] },
          { name: "olga", password: PASSWORD, grants: [{ role: "operator", team: "sales" }] },
          { name: "finn", password: PASSWORD, grants: [{ role: "operator", team: "finance" }] },
        ],
      });
    },
  });

  it("asks for a sign-in, refuses a wrong password, then shows the catalog and who is signed in", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/");
    await page.getByTestId("sign-in-page").waitFor();
    // No provider configured: no single sign-on button.
    expect(await page.getByTestId("sign-in-oidc").count()).toBe(0);
    await screenshot(page, "sign-in");

    await submitSignIn(page, "vera", "not the password");
    await expect.poll(() => page.getByTestId("sign-in-error").textContent()).toContain("The user name or password is wrong.");
    expect(await page.getByTestId("sign-in-password").inputValue()).toBe("");

    await submitSignIn(page, "vera", PASSWORD);
    await page.getByTestId("catalog-table").waitFor();
    expect(new URL(page.url()).pathname).toBe("/assets");
    expect(await page.getByTestId("caller-name").textContent()).toBe("vera");
    expect(await page.getByTestId("caller-roles").textContent()).toBe("viewer of sales");
    // The session cookie cannot be read by scripts and is not sent by other sites' pages.
    const [cookie] = (await page.context().cookies()).filter((c) => c.name === "tributary_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
    // A 401 page error (the queries before the sign-in) is the only problem the page may have met.
    expectNoProblems(problems.filter((p) => !p.includes("401")));
    await page.context().close();
  });

  it("says so when sign-ins of a name are throttled", async () => {
    const { page } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/");
    // Five failures are free; the next attempts wait 1 s, 2 s, 4 s… so one of these soon comes too early.
    let shown = "";
    for (let attempt = 1; attempt <= 12 && !shown.includes("Too many failed sign-ins"); attempt++) {
      await submitSignIn(page, "mallory", "guess number " + String(attempt));
      await expect.poll(() => page.getByTestId("sign-in-error").textContent()).toMatch(/wrong|Too many/);
      shown = (await page.getByTestId("sign-in-error").textContent()) ?? "";
      // The next attempt only once this one's answer is in (the button is enabled again).
      await page.getByTestId("sign-in-submit").getByText("Sign in", { exact: true }).waitFor();
    }
    expect(shown).toMatch(/Too many failed sign-ins: too many failed sign-ins for "mallory"; try again in \d+ s/);
    expect(shown).toContain("SIGN_IN_THROTTLED");
    await page.context().close();
  });

  it("offers Materialise and Cancel to an operator of the asset's team only; the API refuses the others", async () => {
    // A viewer of the team: the page, not the actions.
    const viewer = await signedIn(ui, "vera", PASSWORD, ORDERS_PAGE);
    await viewer.page.getByTestId("asset-status").waitFor();
    await viewer.page.getByTestId("read-only").waitFor();
    expect(await viewer.page.getByTestId("materialise").count()).toBe(0);
    expect(await viewer.page.getByTestId("clear").count()).toBe(0);
    await screenshot(viewer.page, "asset-viewer");

    // An operator of the team: Materialise, and a run it may cancel.
    const operator = await signedIn(ui, "olga", PASSWORD, ORDERS_PAGE);
    expect(new URL(operator.page.url()).pathname).toBe(ORDERS_PAGE); // back on the page wanted
    await operator.page.getByTestId("materialise").click();
    const result = operator.page.getByTestId("action-result");
    await result.waitFor();
    const runId = (await result.getAttribute("data-id"))!;
    await operator.page.goto(`/runs/${runId}`);
    await operator.page.getByTestId("cancel-run").waitFor();
    expectNoProblems(operator.problems.filter((p) => !p.includes("401")));

    // An operator of another team: neither button; and a launch sent anyway from its session is refused.
    const other = await signedIn(ui, "finn", PASSWORD, ORDERS_PAGE);
    await other.page.getByTestId("read-only").waitFor();
    expect(await other.page.getByTestId("materialise").count()).toBe(0);
    const refused = await graphqlFrom(other.page, `mutation ($input: LaunchRunInput!) { launchRun(input: $input) { id } }`, {
      input: { assetKeys: ["sales/orders"] },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect(refused.body.errors?.[0]?.message).toContain('asset "sales/orders"');
    await other.page.goto(`/runs/${runId}`);
    await other.page.getByTestId("run-page").waitFor();
    expect(await other.page.getByTestId("cancel-run").count()).toBe(0);
    const cancel = await graphqlFrom(other.page, `mutation ($id: String!) { cancelRun(id: $id) { id } }`, { id: runId });
    expect(cancel.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");

    // Pools: slots are an admin's to change.
    await other.page.goto("/pools");
    await other.page.getByTestId("pools-table").waitFor();
    expect(await other.page.getByTestId("pool-edit").count()).toBe(0);
    const admin = await signedIn(ui, "admin", PASSWORD, "/pools");
    await admin.page.getByTestId("pool-edit").first().waitFor();
    expect(await admin.page.getByTestId("caller-roles").textContent()).toBe("admin");

    for (const { page } of [viewer, operator, other, admin]) await page.context().close();
  });

  it("signs out: the sign-in page shows again and the old session cookie no longer works", async () => {
    const { page } = await signedIn(ui, "olga", PASSWORD, "/runs");
    const session = (await page.context().cookies()).find((c) => c.name === "tributary_session")!.value;
    const me = () =>
      fetch(`${ui.dev.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: `tributary_session=${session}` },
        body: JSON.stringify({ query: "{ me { name via } }" }),
      });
    expect(await (await me()).json()).toEqual({ data: { me: { name: "olga", via: "session" } } });

    await page.getByTestId("sign-out").click();
    await page.getByTestId("sign-in-page").waitFor();
    expect((await page.context().cookies()).some((c) => c.name === "tributary_session")).toBe(false);
    const after = await me();
    expect(after.status).toBe(401);
    expect(((await after.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe("SESSION_EXPIRED");
    // A run page opened while signed out is the UI's sign-in page, not the API's refusal; the run's event stream
    // beside it still needs a caller.
    const runPage = "/runs/00000000-0000-4000-8000-000000000000";
    await page.goto(runPage);
    await page.getByTestId("sign-in-page").waitFor();
    expect((await fetch(`${ui.dev.url}${runPage}/events`)).status).toBe(401);
    await page.context().close();
  });
});

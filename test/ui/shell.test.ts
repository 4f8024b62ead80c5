import { expect, it } from "vitest";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, useUi } from "./browser.js";

// The shell every page shares: served at every page URL, navigation, not-found pages, the API-unreachable banner.
describeBrowser("UI shell", () => {
  const database = useTestDatabase();
  const ui = useUi({ databaseUrl: () => database.url });

  it("serves the UI at every page URL, its files for good, and leaves API paths to the API", async () => {
    const page = await fetch(`${ui.dev.url}/runs/123`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const html = await page.text();
    const script = /src="(\/_ui\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await fetch(`${ui.dev.url}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("cache-control")).toContain("immutable");
    const api = await fetch(`${ui.dev.url}/api/v1/nothing-here`, { headers: { accept: "*/*" } });
    expect(api.headers.get("content-type") ?? "").not.toContain("text/html");
    expect((await fetch(`${ui.dev.url}/_ui/missing.js`)).status).toBe(404);
  });

  it("navigates between pages, shows not-found pages, and a banner while the API is unreachable", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/");
    await page.waitForURL("**/assets");
    // Without access control (dev on loopback): no sign-in, and every request is the local caller.
    expect(await page.getByTestId("caller-name").textContent()).toBe("local");
    expect(await page.getByTestId("sign-in-page").count()).toBe(0);
    expect(await page.getByTestId("sign-out").count()).toBe(0);
    await page.getByRole("link", { name: "Runs", exact: true }).click();
    await page.waitForURL("**/runs");
    await page.goto("/no/such/page");
    await expect(page.getByTestId("not-found").textContent()).resolves.toContain("not found");
    expectNoProblems(problems);

    // The API goes away (its requests fail) while the page shows `path`, until it comes back.
    const apiAwayAt = async (path: string) => {
      await page.route("**/graphql", (route) => route.abort("connectionrefused"));
      await page.route("**/healthz", (route) => route.abort("connectionrefused"));
      await page.goto(path);
      await page.getByTestId("api-banner").waitFor();
    };
    const apiBack = async () => {
      await page.unroute("**/graphql");
      await page.unroute("**/healthz");
    };

    // The banner says so and offers a retry. The page's clock is held still, so its own backed-off probe cannot
    // fire: only the button can bring the page back.
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 60_000);
    await apiAwayAt("/assets");
    // It comes back: the banner goes after "Retry now" and the page loads.
    await apiBack();
    // A request the page had under way when the API came back can bring it back first (on a busy machine the
    // button is then gone before the click lands); while the banner is there, the button must do it.
    const banner = page.getByTestId("api-banner");
    await page
      .getByRole("button", { name: "Retry now" })
      .click({ timeout: 10_000 })
      .catch(async (err: unknown) => {
        if ((await banner.count()) > 0) throw err;
      });
    await banner.waitFor({ state: "detached" });
    // And without the button: the page probes by itself, backing off, once its time moves on.
    await apiAwayAt("/runs");
    await apiBack();
    await page.clock.runFor(16_000);
    await page.getByTestId("api-banner").waitFor({ state: "detached" });
    await page.context().close();
  });
});

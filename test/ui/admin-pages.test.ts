import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually, graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openBrowser, openPage, screenshot, startDev, type DevServer } from "./browser.js";

// Pools, definitions, triggers and audit pages against `tributary dev` on Postgres with a small definitions directory:
// a source asset whose observation waits for files that never land (waiting triggers), a file with a syntax error and
// a file with an invalid definition.
const GOOD = `import { asset, daily, fileExists, sourceAsset } from "tributary";
const days = daily({ start: "2026-01-01" });
export const landing = sourceAsset({ key: "admin/landing", partitions: days, observe: fileExists("/nonexistent/tributary-ui-admin/{partition}.csv"), pollInterval: "5s", owner: "team:ops" });
export const report = asset({ key: "admin/report", partitions: days, deps: { landing } }, async () => null);
`;
const SYNTAX_ERROR = `import { asset } from "tributary";
export const broken = asset({ key: "admin/broken" }, async () => null;
`;
const INVALID = `import { asset } from "tributary";
export const p = asset({ key: "admin/problem", deps: { nope: "admin/does_not_exist" } } as never, async () => null);
`;

describeBrowser("UI: pools, definitions, triggers, audit", () => {
  const database = useTestDatabase();
  let dir: string;
  let dev: DevServer;
  let browser: Browser;
  const gql = async <T>(query: string, variables?: Record<string, unknown>) => {
    const r = await graphqlAt<T>(dev.port, query, variables);
    if (!r.data) throw new Error(`GraphQL failed: ${JSON.stringify(r)}`);
    return r.data;
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-ui-admin-"));
    const definitionsDir = path.join(dir, "definitions");
    await mkdir(definitionsDir);
    await writeFile(path.join(definitionsDir, "good.ts"), GOOD);
    await writeFile(path.join(definitionsDir, "broken.ts"), SYNTAX_ERROR);
    await writeFile(path.join(definitionsDir, "invalid.ts"), INVALID);
    // A data directory of its own keeps the server's local files (logs) out of the checkout; the database is Postgres.
    [dev, browser] = await Promise.all([
      startDev({ databaseUrl: database.url, dataDir: path.join(dir, "data"), definitionsDir }),
      openBrowser(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("shows each broken definitions file with its code, location and message", async () => {
    const { page, problems } = await openPage(browser, dev.url);
    await page.goto("/definitions");
    await page.getByTestId("definitions-summary").waitFor();
    await expect(page.getByTestId("definitions-summary").textContent()).resolves.toContain("2 files have errors");

    const broken = page.locator('[data-testid=definition-file][data-path="broken.ts"]');
    await expect(broken.getAttribute("data-status")).resolves.toBe("error");
    const error = broken.getByTestId("definition-error");
    await expect(error.textContent()).resolves.toContain("LOAD_SYNTAX_ERROR");
    await expect(error.getByTestId("definition-location").textContent()).resolves.toBe("broken.ts:2:70");
    await expect(error.textContent()).resolves.toContain('Expected ")" but found ";"');

    const invalid = page.locator('[data-testid=definition-file][data-path="invalid.ts"]').getByTestId("definition-error");
    await expect(invalid.textContent()).resolves.toContain("DEFINITION_INVALID");
    await expect(invalid.getByTestId("definition-location").textContent()).resolves.toBe(
      "invalid.ts:2:18 (asset admin/problem, field deps.nope)",
    );

    const good = page.locator('[data-testid=definition-file][data-path="good.ts"]');
    await expect(good.getAttribute("data-status")).resolves.toBe("ok");
    await expect(good.getByTestId("definition-error").count()).resolves.toBe(0);
    await screenshot(page, "definitions");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("lists the waiting triggers first, filters by status in the URL and counts them as the API does", async () => {
    // The source asset's observations of its recent partitions wait for files that never land: once the server's
    // automation has made them (serving the definitions comes first).
    const { triggerCounts } = await eventually(
      async () => {
        const r = await gql<{ triggerCounts: { waiting: number } }>("{ triggerCounts { waiting } }");
        return r.triggerCounts.waiting > 0 ? r : undefined;
      },
      120_000,
      "the source asset's observations to wait",
    );

    const { page, problems } = await openPage(browser, dev.url);
    await page.goto("/triggers");
    const firstRow = page.getByTestId("trigger-row").first();
    await firstRow.waitFor();
    await expect(firstRow.getAttribute("data-status")).resolves.toBe("waiting");
    await expect(firstRow.textContent()).resolves.toContain("fileExists");
    await expect(firstRow.textContent()).resolves.toContain("/nonexistent/tributary-ui-admin/{partition}.csv");
    await expect(firstRow.textContent()).resolves.toContain("admin/landing");
    await expect(firstRow.textContent()).resolves.toContain("source observation");
    // The asset links to its page.
    await expect(firstRow.getByRole("link", { name: "admin/landing" }).getAttribute("href")).resolves.toBe("/assets/admin/landing");

    const waitingButton = page.getByTestId("trigger-count-waiting");
    // The counts are their own query: "–" until it answers.
    await expect.poll(() => waitingButton.textContent(), { timeout: 15_000 }).toMatch(/waiting \d+/);
    const shown = Number((await waitingButton.locator("strong").textContent())?.replace(/,/g, ""));
    const now = await gql<{ triggerCounts: { waiting: number } }>("{ triggerCounts { waiting } }");
    expect(shown).toBeGreaterThanOrEqual(triggerCounts.waiting);
    expect(shown).toBeLessThanOrEqual(now.triggerCounts.waiting);

    // A status filter is part of the URL: nothing fired here, so the list is empty; a reload keeps it.
    await page.getByTestId("trigger-count-fired").click();
    await page.waitForURL("**/triggers?status=fired");
    await page.getByTestId("triggers-empty").waitFor();
    await page.reload();
    await expect(page.getByTestId("triggers-empty").textContent()).resolves.toBe("No fired triggers.");
    await page.goto("/triggers?status=waiting");
    await page.getByTestId("trigger-row").first().waitFor();
    const statuses = await page.getByTestId("trigger-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-status")));
    expect(new Set(statuses)).toEqual(new Set(["waiting"]));
    await screenshot(page, "triggers");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("pages through triggers with Load more, in the API's order", async () => {
    const { triggers } = await gql<{ triggers: { nodes: { id: string }[] } }>(
      '{ triggers(status: "waiting", first: 500) { nodes { id } } }',
    );
    expect(triggers.nodes.length).toBeGreaterThan(4);
    const { page, problems } = await openPage(browser, dev.url);
    // Pages of 2 (the page size is in the URL like the filter).
    await page.goto("/triggers?status=waiting&first=2");
    await page.getByTestId("trigger-row").first().waitFor();
    const ids = () => page.getByTestId("trigger-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-trigger")));
    await expect(ids()).resolves.toEqual(triggers.nodes.slice(0, 2).map((t) => t.id));
    await page.getByTestId("triggers-more").click();
    await expect.poll(ids).toEqual(triggers.nodes.slice(0, 4).map((t) => t.id));
    await page.getByTestId("triggers-more").click();
    await expect.poll(ids).toEqual(triggers.nodes.slice(0, 6).map((t) => t.id));
    expectNoProblems(problems);
    await page.context().close();
  });

  it("edits a pool's slots inline, and shows the API's error for a bad value", async () => {
    const { page, problems } = await openPage(browser, dev.url);
    await page.goto("/pools");
    const row = page.locator('[data-testid=pool-row][data-pool="default_pool"]');
    await row.waitFor();

    await row.getByTestId("pool-edit").click();
    await row.getByTestId("pool-slots-input").fill("7");
    await row.getByTestId("pool-save").click();
    await expect
      .poll(() =>
        row
          .getByTestId("pool-slots")
          .textContent()
          .catch(() => null),
      )
      .toBe("7");
    const { pools } = await gql<{ pools: { name: string; slots: number }[] }>("{ pools { name slots } }");
    expect(pools.find((p) => p.name === "default_pool")?.slots).toBe(7);

    await row.getByTestId("pool-edit").click();
    await row.getByTestId("pool-slots-input").fill("-3");
    await row.getByTestId("pool-save").click();
    const error = page.getByTestId("error");
    await error.waitFor();
    await expect(error.textContent()).resolves.toContain("INPUT_INVALID");
    await expect(error.textContent()).resolves.toContain("must be 0");
    // Not a whole number cannot be sent as an Int: the page says so before asking, and nothing changed.
    await row.getByTestId("pool-slots-input").fill("lots");
    await row.getByTestId("pool-save").click();
    await expect(page.getByTestId("pool-invalid").textContent()).resolves.toBe('Slots must be a whole number of 0 or more, got "lots".');
    await expect(page.getByTestId("error").count()).resolves.toBe(0);
    const after = await gql<{ pools: { name: string; slots: number }[] }>("{ pools { name slots } }");
    expect(after.pools.find((p) => p.name === "default_pool")?.slots).toBe(7);
    await screenshot(page, "pools");
    // The API's error responses are not console errors of the page.
    expectNoProblems(problems);
    await page.context().close();
  });
  it("offers the audit trail without access control: the local caller is an admin, and its changes are there as local", async () => {
    await gql('mutation { setPoolSlots(name: "audit_pool", slots: 3) { name } }');
    const { page, problems } = await openPage(browser, dev.url);
    await page.goto("/assets");
    await page.getByRole("link", { name: "Audit", exact: true }).click();
    await page.getByTestId("filter-action").fill("setPoolSlots");
    await page.getByTestId("filter-action").press("Enter");
    await expect.poll(async () => new URL(page.url()).search).toBe("?action=setPoolSlots");
    const row = page.getByTestId("audit-row").filter({ hasText: "audit_pool" });
    await row.waitFor();
    await expect(row.getByTestId("audit-principal").textContent()).resolves.toBe("local");
    await expect(row.getByTestId("audit-kind").textContent()).resolves.toBe("local");
    await expect(row.getByTestId("audit-outcome-label").textContent()).resolves.toBe("success");
    await expect(row.getByTestId("audit-target").textContent()).resolves.toContain("pool: audit_pool · slots: 3");
    expectNoProblems(problems);
    await page.context().close();
  });
});

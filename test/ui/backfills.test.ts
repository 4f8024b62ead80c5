import { expect, it } from "vitest";
import { eventually, graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// The backfills pages and the launch dialog in Chromium against a real `tributary dev` on Postgres: the preview's
// counts match the API, the launched backfill runs to completion on the page, and invalid ranges are explained.
const DEFS = `
import { asset, daily, dep } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-01-11", timezone: "UTC" });
export const daysAsset = asset({ key: "bf/days", partitions: days }, async (ctx) => ctx.partition.key);
export const after = asset({ key: "bf/after", partitions: days, deps: { d: dep(daysAsset) } }, async (_ctx, { d }) => d + "!");
export const other = asset({ key: "misc/lookup" }, async () => 1);
`;

const PREVIEW = `query ($input: LaunchBackfillInput!) { backfillPreview(input: $input) { partitions runs } }`;

describeBrowser("UI backfills and the launch dialog", () => {
  const database = useTestDatabase();

  const gql = async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const r = await graphqlAt<T>(ui.dev.port, query, variables);
    if (r.errors) throw new Error(JSON.stringify(r.errors));
    return r.data!;
  };
  const backfillCount = async () => (await gql<{ backfills: { id: string }[] }>(`{ backfills(first: 1000) { id } }`)).backfills.length;

  const ui = useUi({ files: { "assets.ts": DEFS }, databaseUrl: () => database.url });

  it("launches a backfill from the dialog with the previewed counts, then shows its progress until it completes", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/backfills");
    await page.getByTestId("open-backfill-dialog").click();
    await page.waitForURL(/launch=1/);
    const dialog = page.getByTestId("backfill-dialog");
    await dialog.getByTestId("bf-search").fill("bf/");
    // The dialog lists the assets from its own query: wait for it rather than count at once.
    await expect.poll(() => dialog.locator("[data-testid^=bf-asset-]").count(), { timeout: 15_000 }).toBe(2);
    await dialog.getByTestId("bf-asset-bf/days").check();
    await dialog.getByTestId("bf-asset-bf/after").check();
    await dialog.getByTestId("bf-from").fill("2025-01-02");
    await dialog.getByTestId("bf-to").fill("2025-01-07");
    await dialog.getByTestId("bf-per-run").fill("2");
    await dialog.locator("[data-testid=bf-preview][data-state=ok]").waitFor();

    const input = { assetKeys: ["bf/days", "bf/after"], from: "2025-01-02", to: "2025-01-07", maxPartitionsPerRun: 2 };
    const api = (await gql<{ backfillPreview: { partitions: number; runs: number } }>(PREVIEW, { input })).backfillPreview;
    expect(api).toEqual({ partitions: 12, runs: 3 });
    expect(await dialog.getByTestId("bf-preview-partitions").getAttribute("data-count")).toBe(String(api.partitions));
    expect(await dialog.getByTestId("bf-preview-runs").getAttribute("data-count")).toBe(String(api.runs));
    await screenshot(page, "backfill-dialog");

    await dialog.getByTestId("bf-launch").click();
    await page.waitForURL(/\/backfills\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).pathname.split("/").at(-1)!;
    const progress = page.getByTestId("backfill-progress");
    expect(await progress.getAttribute("data-requested")).toBe("12");
    // The page follows it to the end without a reload.
    await page.locator("[data-testid=backfill-page][data-status=completed]").waitFor({ timeout: 90_000 });
    expect(await progress.getAttribute("data-done")).toBe("12");
    const stored = (
      await gql<{ backfill: { status: string; requested: number; done: number; runs: { id: string }[] } }>(
        `query ($id: String!) { backfill(id: $id) { status requested done runs { id } } }`,
        { id },
      )
    ).backfill;
    expect(stored).toMatchObject({ status: "completed", requested: 12, done: 12 });
    expect(stored.runs).toHaveLength(3);
    await eventually(async () => ((await page.getByTestId("run-row").count()) === 3 ? true : undefined), 10_000, "its three runs listed");
    for (const run of stored.runs) expect(await page.locator(`a[href="/runs/${run.id}"]`).count()).toBe(1);
    await screenshot(page, "backfill");

    // The list shows it with its progress; its runs are a filter of the runs page away.
    await page.goto("/backfills");
    const row = page.locator(`[data-testid=backfill-row][data-id="${id}"]`);
    await row.waitFor();
    expect(await row.getAttribute("data-status")).toBe("completed");
    await screenshot(page, "backfills");
    await page.goto(`/runs?backfill=${id}`);
    await page.getByTestId("runs-table").waitFor();
    expect(await page.getByTestId("run-row").count()).toBe(3);
    expectNoProblems(problems);
    await page.context().close();
  });

  it("explains an invalid range before submitting and keeps the launch disabled", async () => {
    const before = await backfillCount();
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/backfills?launch=1");
    const dialog = page.getByTestId("backfill-dialog");
    await dialog.getByTestId("bf-asset-bf/days").check();
    const launchButton = dialog.getByTestId("bf-launch");

    const cases: [from: string, to: string, explanation: RegExp][] = [
      ["2025-01-07", "2025-01-02", /reversed partition range.*"2025-01-07" comes after "2025-01-02"/],
      ["2025-01-02", "2025-01-99", /2025-01-99/],
      ["2024-12-01", "2025-01-03", /2024-12-01/],
    ];
    for (const [from, to, explanation] of cases) {
      await dialog.getByTestId("bf-from").fill(from);
      await dialog.getByTestId("bf-to").fill(to);
      await dialog.locator("[data-testid=bf-preview][data-state=error]").waitFor();
      expect(await dialog.getByTestId("bf-preview-error").textContent()).toMatch(explanation);
      expect(await launchButton.isDisabled()).toBe(true);
    }
    await screenshot(page, "backfill-dialog-invalid");
    // A valid range enables it again.
    await dialog.getByTestId("bf-from").fill("2025-01-02");
    await dialog.getByTestId("bf-to").fill("2025-01-03");
    await dialog.locator("[data-testid=bf-preview][data-state=ok]").waitFor();
    expect(await launchButton.isDisabled()).toBe(false);
    expect(await backfillCount()).toBe(before);
    expectNoProblems(problems);
    await page.context().close();
  });

  it("shows a not-found page for an unknown backfill id", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/backfills/00000000-0000-4000-8000-000000000000");
    expect(await page.getByTestId("not-found").textContent()).toContain("Backfill not found");
    expectNoProblems(problems);
    await page.context().close();
  });
});

import { expect, it } from "vitest";
import { graphqlAt } from "../cli/run-cli.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// What a data engineer does on the first day, as `npm start` serves it: the demo on the embedded database; the
// graph; an asset; a range of partitions selected on its status bar and backfilled; the backfill followed to the
// end; one of its runs with the Gantt chart and a step's log. The screenshots in the README come from here
// (SCREENSHOTS=1 npx vitest run test/ui/flow.test.ts).
describeBrowser("UI: the first-day flow on the demo", () => {
  const ui = useUi({ firstStart: true });

  it("graph → asset → select partitions → backfill → completed → run Gantt and logs", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);

    // The catalog lists every demo asset.
    const { data } = await graphqlAt<{ assets: { key: string }[] }>(ui.dev.port, "{ assets { key } }");
    const keys = data!.assets.map((a) => a.key);
    expect(keys).toContain("shop/raw_orders");
    await page.goto("/assets");
    await page.getByRole("link", { name: "shop/raw_orders", exact: true }).first().waitFor();
    await screenshot(page, "demo-catalog");

    // The graph draws every asset; clicking one opens its page.
    await page.goto("/graph");
    await page.locator('[data-testid="asset-graph"][data-ready="true"]').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("graph-node").count()).toBe(keys.length);
    await screenshot(page, "demo-graph");
    await page.locator('[data-testid="graph-node"][data-key="shop/raw_orders"]').click();
    await page.waitForURL(/\/assets\/shop\/raw_orders/);
    await page.getByTestId("asset-definition").waitFor();

    // Its status bar: drag across a stretch of old partitions (automation only does the latest ones).
    const bar = page.locator('[data-testid="partition-bar"][data-ready="true"]');
    await bar.waitFor({ timeout: 30_000 });
    const total = Number(await bar.getAttribute("data-total"));
    expect(total).toBeGreaterThan(100);
    const box = (await bar.boundingBox())!;
    const xAt = (index: number) => box.x + ((index + 0.5) / total) * box.width;
    const y = box.y + Math.min(12, box.height / 2);
    await page.mouse.move(xAt(0), y);
    await page.mouse.down();
    await page.mouse.move(xAt(20), y, { steps: 5 });
    await page.mouse.move(xAt(39), y, { steps: 5 });
    await page.mouse.up();
    const count = await page.getByTestId("selection-count").textContent();
    const selected = Number(/([\d,]+) partitions/.exec(count ?? "")?.[1]?.replace(/,/g, ""));
    expect(selected).toBeGreaterThan(25); // more than one run's worth: a backfill
    await screenshot(page, "demo-asset");

    // Materialise them as a backfill of 20 partitions per run.
    await page.getByTestId("per-run").fill("20");
    await page.getByTestId("materialise").click();
    const result = page.getByTestId("action-result");
    await result.waitFor();
    expect(await result.getAttribute("data-kind")).toBe("backfill");
    const backfillId = (await result.getAttribute("data-id"))!;
    await result.getByRole("link").click();
    await page.waitForURL(`**/backfills/${backfillId}`);

    // The backfill page follows it to the end by itself.
    await page.locator('[data-testid="backfill-page"] .badge[data-state="completed"]').first().waitFor({ timeout: 180_000 });
    const backfill = await graphqlAt<{
      backfill: { status: string; requested: number; done: number; failed: number; runs: { id: string }[] };
    }>(ui.dev.port, `query ($id: String!) { backfill(id: $id) { status requested done failed runs { id } } }`, { id: backfillId });
    expect(backfill.data!.backfill).toMatchObject({ status: "completed", requested: selected, done: selected, failed: 0 });
    expect(backfill.data!.backfill.runs.length).toBe(Math.ceil(selected / 20));
    await screenshot(page, "demo-backfill");

    // One of its runs: a Gantt row per step, and the log of a step.
    const runId = backfill.data!.backfill.runs[0]!.id;
    await page.locator(`a[href="/runs/${runId}"]`).first().click();
    await page.waitForURL(`**/runs/${runId}`);
    const rows = page.getByTestId("gantt-row");
    await rows.first().waitFor();
    const run = await graphqlAt<{ run: { steps: { id: string; assetKey: string }[] } }>(
      ui.dev.port,
      `query ($id: String!) { run(id: $id) { steps { id assetKey } } }`,
      {
        id: runId,
      },
    );
    expect(await rows.count()).toBe(run.data!.run.steps.length);
    await screenshot(page, "demo-run-gantt");
    await rows.first().click();
    await page.getByText("wrote orders").first().waitFor({ timeout: 20_000 });
    await page.getByTestId("log-view").scrollIntoViewIfNeeded();
    await screenshot(page, "demo-run-logs");

    expectNoProblems(problems);
    await page.context().close();
  });
});

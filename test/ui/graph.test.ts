import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// The asset graph of the demo (asset-definitions/) in `tributary dev`.
interface ApiAsset {
  key: string;
  group: string;
  upstream: { key: string }[];
  partitionStatus: {
    counts: {
      total: number;
      materialized: number;
      stale: number;
      failed: number;
      materializing: number;
      missing: number;
      timedOut: number;
    };
  };
}

/** The colour rule the page states: failed > (timed out) > materializing > stale > missing > materialized. */
function expectedStatus(c: ApiAsset["partitionStatus"]["counts"]): string {
  if (!c.total) return "MISSING";
  if (c.failed) return "FAILED";
  if (c.timedOut) return "TIMED_OUT";
  if (c.materializing) return "MATERIALIZING";
  if (c.stale) return "STALE";
  if (c.missing) return "MISSING";
  return "MATERIALIZED";
}

describeBrowser("UI: asset graph", () => {
  const assets = async () => {
    const r = await graphqlAt<{ assets: ApiAsset[] }>(
      ui.dev.port,
      "{ assets { key group upstream { key } partitionStatus { counts { total materialized stale failed materializing missing timedOut } } } }",
    );
    return r.data!.assets;
  };
  const drawn = async (page: Page, url: string) => {
    await page.goto(url);
    await page.locator("[data-testid=asset-graph][data-ready=true]").waitFor({ timeout: 30_000 });
  };
  const nodeStatuses = (page: Page) =>
    page
      .getByTestId("graph-node")
      .evaluateAll((nodes) => Object.fromEntries(nodes.map((n) => [n.getAttribute("data-key"), n.getAttribute("data-status")])));

  const database = useTestDatabase();
  const ui = useUi({ databaseUrl: () => database.url });

  it("draws every demo asset in its group's cluster, coloured by status, with every dependency", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    const api = await assets();
    expect(api.length).toBeGreaterThan(5);
    await drawn(page, "/graph");
    const statuses = await nodeStatuses(page);
    expect(Object.keys(statuses).sort()).toEqual(api.map((a) => a.key).sort());
    const groups = await page.locator(".graph-group").evaluateAll((gs) => gs.map((g) => g.getAttribute("data-group")));
    expect(groups.sort()).toEqual([...new Set(api.map((a) => a.group))].sort());
    const edges = api.reduce((n, a) => n + a.upstream.length, 0);
    await expect(page.getByTestId("graph-count").textContent()).resolves.toBe(`${api.length} assets, ${edges} dependencies`);
    // Each node sits inside its group's box.
    const outside = await page.getByTestId("graph-node").evaluateAll(
      (nodes, byKey) => {
        const boxes = new Map(
          [...document.querySelectorAll(".graph-group")].map((g) => [
            g.getAttribute("data-group"),
            g.querySelector("rect")!.getBoundingClientRect(),
          ]),
        );
        return nodes
          .filter((n) => {
            const r = n.getBoundingClientRect();
            const box = boxes.get(byKey[n.getAttribute("data-key")!]!)!;
            return r.left < box.left || r.right > box.right || r.top < box.top || r.bottom > box.bottom;
          })
          .map((n) => n.getAttribute("data-key"));
      },
      Object.fromEntries(api.map((a) => [a.key, a.group])),
    );
    expect(outside).toEqual([]);

    // Colours follow the API's partition counts (the demo's automation keeps changing them: compare until a
    // fresh page and a fresh answer agree).
    await expect
      .poll(
        async () => {
          const now = await assets();
          await drawn(page, "/graph");
          const shown = await nodeStatuses(page);
          return now
            .filter((a) => shown[a.key] !== expectedStatus(a.partitionStatus.counts))
            .map((a) => `${a.key}: ${shown[a.key]} vs ${expectedStatus(a.partitionStatus.counts)}`);
        },
        { timeout: 30_000 },
      )
      .toEqual([]);
    const fill = await page
      .locator("[data-testid=graph-node] rect")
      .first()
      .evaluate((r) => r.getAttribute("fill"));
    expect(fill).toMatch(/^#[0-9a-f]{6}$/);
    await screenshot(page, "graph");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("zooms with the wheel, pans by dragging, and opens an asset on click", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await drawn(page, "/graph");
    const graph = page.getByTestId("asset-graph");
    const zoom = async () => Number(await graph.getAttribute("data-zoom"));
    const before = await zoom();
    const box = (await graph.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -400);
    await expect.poll(zoom).toBeGreaterThan(before);

    const node = page.locator('[data-testid=graph-node][data-key="shop/raw_orders"]');
    const at = (await node.boundingBox())!;
    // Drag from an empty corner: everything moves by the drag, and nothing opens.
    await page.mouse.move(box.x + 5, box.y + box.height - 5);
    await page.mouse.down();
    await page.mouse.move(box.x + 45, box.y + box.height - 25, { steps: 5 });
    await page.mouse.up();
    const moved = (await node.boundingBox())!;
    expect(Math.round(moved.x - at.x)).toBe(40);
    expect(Math.round(moved.y - at.y)).toBe(-20);
    expect(new URL(page.url()).pathname).toBe("/graph");

    // Hovering names the asset and its partitions' counts.
    await node.hover();
    const tip = page.getByTestId("graph-tooltip");
    await expect.poll(() => tip.isVisible()).toBe(true);
    await expect(tip.textContent()).resolves.toMatch(/^shop\/raw_orders\n[a-z ]+\n[\d,]+ partitions/);

    await node.click();
    await page.waitForURL("**/assets/shop/raw_orders");

    // Zoomed far out, labels go: every asset is still drawn, as a block of its status colour.
    await drawn(page, "/graph");
    const api = await assets();
    for (let i = 0; i < 8 && (await zoom()) >= 0.3; i++) await page.getByRole("button", { name: "Zoom out" }).click();
    expect(await zoom()).toBeLessThan(0.3);
    await expect.poll(() => page.getByTestId("graph-node").count()).toBe(0);
    const blocks = await page
      .locator(".graph-blocks")
      .evaluateAll((ps) => ps.reduce((n, p) => n + Number(p.getAttribute("data-count")), 0));
    expect(blocks).toBe(api.length);
    expectNoProblems(problems);
    await page.context().close();
  });

  it("filters by group and centres a focused asset, both from the URL", async () => {
    const api = await assets();
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await drawn(page, "/graph?group=partner");
    const keys = Object.keys(await nodeStatuses(page)).sort();
    expect(keys).toEqual(
      api
        .filter((a) => a.group === "partner")
        .map((a) => a.key)
        .sort(),
    );
    await page.getByTestId("graph-group").selectOption("shop");
    await page.waitForURL("**/graph?group=shop");
    await page.locator("[data-testid=asset-graph][data-ready=true]").waitFor();
    await expect
      .poll(async () => Object.keys(await nodeStatuses(page)).sort())
      .toEqual(
        api
          .filter((a) => a.group === "shop")
          .map((a) => a.key)
          .sort(),
      );

    await drawn(page, "/graph?focus=shop/revenue_7d");
    const graph = (await page.getByTestId("asset-graph").boundingBox())!;
    const focused = page.locator('[data-testid=graph-node][data-key="shop/revenue_7d"]');
    await expect(focused.getAttribute("class")).resolves.toContain("focus");
    const at = (await focused.boundingBox())!;
    expect(Math.abs(at.x + at.width / 2 - (graph.x + graph.width / 2))).toBeLessThan(2);
    expect(Math.abs(at.y + at.height / 2 - (graph.y + graph.height / 2))).toBeLessThan(2);

    await page.goto("/graph?focus=shop/no_such_asset");
    await expect(page.getByTestId("graph-focus-missing").textContent()).resolves.toContain("shop/no_such_asset");
    expectNoProblems(problems);
    await page.context().close();
  });
});

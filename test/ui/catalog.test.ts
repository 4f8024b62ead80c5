import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually, graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openBrowser, openPage, screenshot, startDev, type DevServer } from "./browser.js";

// The asset catalog against `tributary dev` on Postgres with four assets brought into known states through the API:
// one all materialised, one failed, one with a stale partition, one with missing partitions.
const DEFINITIONS = `import { asset, daily } from "tributary";
const days = daily({ start: "2026-01-01" });
export const events = asset({ key: "ingest/events", owner: "team:data", tags: { tier: "gold" }, partitions: days }, async () => null);
export const users = asset({ key: "ingest/users", owner: "team:crm" }, async () => null);
export const report = asset({ key: "marts/daily_report", owner: "team:data", partitions: days, deps: { events } }, async () => null);
export const broken = asset({ key: "marts/broken", owner: "team:bi", tags: { tier: "gold" } }, async () => {
  throw new Error("the broken asset fails on purpose");
});
`;

interface Counts {
  total: number;
  materialized: number;
  stale: number;
  failed: number;
  missing: number;
}

describeBrowser("UI: asset catalog", () => {
  const database = useTestDatabase();
  let dir: string;
  let dev: DevServer;
  let browser: Browser;
  const gql = async <T>(query: string, variables?: Record<string, unknown>) => {
    const r = await graphqlAt<T>(dev.port, query, variables);
    if (!r.data || r.errors?.length) throw new Error(`GraphQL failed: ${JSON.stringify(r)}`);
    return r.data;
  };
  /** Launches a run and waits for it to end; returns its status. */
  const run = async (input: Record<string, unknown>) => {
    const { launchRun } = await gql<{ launchRun: { id: string } }>(
      "mutation($input: LaunchRunInput!) { launchRun(input: $input) { id } }",
      { input },
    );
    return eventually(
      async () => {
        const { run } = await gql<{ run: { status: string } }>("query($id: String!) { run(id: $id) { status } }", { id: launchRun.id });
        return ["success", "failed", "canceled"].includes(run.status) ? run.status : undefined;
      },
      60_000,
      `run ${launchRun.id} to end`,
    );
  };
  const countsOf = async () => {
    const { assets } = await gql<{
      assets: { key: string; partitionStatus: { counts: Counts }; latestMaterialization: { runId: string | null } | null }[];
    }>("{ assets { key partitionStatus { counts { total materialized stale failed missing } } latestMaterialization { runId } } }");
    return new Map(assets.map((a) => [a.key, a]));
  };
  const shownKeys = (page: Page) => page.getByTestId("catalog-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-key")));

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-ui-catalog-"));
    const definitionsDir = path.join(dir, "definitions");
    await mkdir(definitionsDir);
    await writeFile(path.join(definitionsDir, "assets.ts"), DEFINITIONS);
    // A data directory of its own keeps the server's local files (logs) out of the checkout; the database is Postgres.
    [dev, browser] = await Promise.all([
      startDev({ databaseUrl: database.url, dataDir: path.join(dir, "data"), definitionsDir }),
      openBrowser(),
    ]);
    await expect(run({ assetKeys: ["ingest/users"] })).resolves.toBe("success");
    await expect(run({ assetKeys: ["marts/broken"] })).resolves.toBe("failed");
    // The report reads events' partition; events is materialised again after, so the report's partition is stale.
    await expect(run({ assetKeys: ["ingest/events", "marts/daily_report"], partition: "2026-01-02" })).resolves.toBe("success");
    await expect(run({ assetKeys: ["ingest/events"], partition: "2026-01-02" })).resolves.toBe("success");
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("lists every asset with its owner, partitions, health bar matching the API's counts, staleness and latest run", async () => {
    const api = await countsOf();
    expect(api.get("marts/daily_report")?.partitionStatus.counts.stale).toBe(1);
    const { page, problems } = await openPage(browser, dev.url);
    await page.goto("/assets");
    await page.getByTestId("catalog-table").waitFor();
    await expect(shownKeys(page)).resolves.toEqual(["ingest/events", "ingest/users", "marts/broken", "marts/daily_report"]);

    for (const [key, asset] of api) {
      const row = page.locator(`[data-testid=catalog-row][data-key="${key}"]`);
      const c = asset.partitionStatus.counts;
      const bar = row.getByTestId("health-bar");
      await expect(bar.getAttribute("data-total")).resolves.toBe(String(c.total));
      for (const [status, n] of [
        ["MATERIALIZED", c.materialized],
        ["STALE", c.stale],
        ["FAILED", c.failed],
        ["MISSING", c.missing],
      ] as const) {
        const segment = bar.locator(`[data-status=${status}]`);
        if (n === 0) await expect(segment.count()).resolves.toBe(0);
        else await expect(segment.getAttribute("data-count")).resolves.toBe(String(n));
      }
      await expect(row.getByTestId("stale-count").textContent()).resolves.toBe(String(c.stale));
      const runId = asset.latestMaterialization?.runId;
      if (runId) await expect(row.getByRole("link", { name: /ago/ }).getAttribute("href")).resolves.toBe(`/runs/${runId}`);
    }
    const events = page.locator('[data-testid=catalog-row][data-key="ingest/events"]');
    await expect(events.textContent()).resolves.toContain("team:data");
    await expect(events.textContent()).resolves.toContain("daily(start 2026-01-01");
    await expect(events.getByTestId("health-bar").getAttribute("title")).resolves.toContain("1 materialized");
    await expect(page.locator('[data-testid=catalog-row][data-key="marts/broken"]').textContent()).resolves.toContain("never");
    await screenshot(page, "catalog");

    // The key links to the asset's page.
    await events.getByRole("link", { name: "ingest/events" }).click();
    await page.waitForURL("**/assets/ingest/events");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("searches and filters by group, owner, tag and status, all kept in the URL across a reload", async () => {
    const { page, problems } = await openPage(browser, dev.url);
    await page.goto("/assets");
    await page.getByTestId("catalog-table").waitFor();

    await page.getByTestId("catalog-search").fill("INGEST");
    await page.waitForURL("**/assets?q=INGEST");
    await expect(shownKeys(page)).resolves.toEqual(["ingest/events", "ingest/users"]);
    await page.getByTestId("catalog-search").fill("");

    await page.getByTestId("filter-group").selectOption("marts");
    await expect.poll(() => shownKeys(page)).toEqual(["marts/broken", "marts/daily_report"]);
    await page.getByTestId("filter-tag").selectOption("tier=gold");
    await expect.poll(() => shownKeys(page)).toEqual(["marts/broken"]);
    await page.getByTestId("filter-group").selectOption("");
    await page.getByTestId("filter-owner").selectOption("team:data");
    await expect.poll(() => shownKeys(page)).toEqual(["ingest/events"]);
    expect(new URL(page.url()).searchParams.get("tag")).toBe("tier=gold");

    // A shared link shows the same view.
    await page.reload();
    await page.getByTestId("catalog-table").waitFor();
    await expect(shownKeys(page)).resolves.toEqual(["ingest/events"]);
    await expect(page.getByTestId("filter-owner").inputValue()).resolves.toBe("team:data");
    await expect(page.getByTestId("filter-tag").inputValue()).resolves.toBe("tier=gold");

    const byStatus: Record<string, string[]> = {
      failed: ["marts/broken"],
      stale: ["marts/daily_report"],
      missing: ["ingest/events", "marts/daily_report"],
      materialized: ["ingest/users"],
    };
    for (const [status, keys] of Object.entries(byStatus)) {
      await page.goto(`/assets?status=${status}`);
      await page.getByTestId("catalog-table").waitFor();
      await expect(shownKeys(page), status).resolves.toEqual(keys);
      await expect(page.getByTestId("filter-status").inputValue()).resolves.toBe(status);
    }
    await page.goto("/assets?q=nothing-like-this");
    await expect(page.getByTestId("catalog-empty").textContent()).resolves.toBe("No asset matches these filters.");
    expectNoProblems(problems);
    await page.context().close();
  });
});

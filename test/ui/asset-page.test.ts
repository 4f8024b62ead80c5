import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { hourlyStart, mixedStatuses, resetRandom, seedHistory } from "../../bench/_seed-history.js";
import { hourly, partitionSpace } from "../../src/partitions/index.js";
import { graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openBrowser, openPage, screenshot, startDev, type DevServer } from "./browser.js";

// The asset page in Chromium against a real `tributary dev` on Postgres: the definition, the partition bar and
// matrix (counts as the API has them, hover keys), materialise and clear of a selection (runs and backfills the
// API then lists), the API's errors, an unknown asset, and an asset with 100 000 seeded partitions.

const BIG = 100_000;
const bigPartitions = `hourly({ start: "${hourlyStart(BIG)}", end: "2026-01-01T00:00" })`;

const DEFINITIONS = `import { asset, daily, dep, dynamicPartitions, eager, hourly, multiPartitions, staticPartitions, timeWindow } from "tributary";
const noop = async () => null;
const days = daily({ start: "2025-01-01", end: "2025-03-01" });
export const dailyNumbers = asset(
  {
    key: "ui/daily",
    partitions: days,
    owner: "team:ui",
    description: "Daily numbers the UI test reads",
    tags: { tier: "gold" },
    metadata: { pii: ["email"], rows: 10 },
    automation: eager(),
    pool: "ui-pool",
    priority: 3,
    retries: 2,
    timeout: "5m",
    codeVersion: "v1",
  },
  noop,
);
export const report = asset({ key: "ui/report", partitions: days, deps: { daily: dep(dailyNumbers) } }, noop);
export const lagged = asset({ key: "ui/lagged", partitions: days, deps: { daily: dep(dailyNumbers, timeWindow({ startOffset: -1 })) } }, noop);
// Nothing materialises ui/feed: a run of ui/needs_feed is refused by the planner.
export const feed = asset({ key: "ui/feed", partitions: days }, noop);
export const needsFeed = asset({ key: "ui/needs_feed", partitions: days, deps: { feed: dep(feed) } }, noop);
export const regions = asset(
  { key: "ui/regions", partitions: multiPartitions({ date: daily({ start: "2025-01-01", end: "2025-01-11" }), region: staticPartitions(["eu", "us", "apac"]) }) },
  noop,
);
export const customers = asset({ key: "ui/customers", partitions: dynamicPartitions("ui_customers") }, noop);
export const raw = asset({ key: "ui/raw", partitions: ${bigPartitions} }, noop);
export const big = asset({ key: "ui/big", codeVersion: "v2", partitions: ${bigPartitions}, deps: { raw: dep(raw) } }, noop);
`;

interface Counts {
  missing: number;
  materializing: number;
  materialized: number;
  failed: number;
  stale: number;
  timedOut: number;
  total: number;
}

describeBrowser("asset page", () => {
  const database = useTestDatabase();
  let defsDir: string;
  let dev: DevServer;
  let browser: Browser;
  let page: Page;
  let problems: string[];

  const api = async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const r = await graphqlAt<T>(dev.port, query, variables);
    if (r.errors?.length || !r.data) throw new Error(`GraphQL failed: ${JSON.stringify(r.errors)}`);
    return r.data;
  };

  beforeAll(async () => {
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-ui-asset-"));
    await writeFile(path.join(defsDir, "ui.ts"), DEFINITIONS);
    // 100 000 hourly partitions of mixed statuses (and an upstream for the stale ones), as bench/api.ts seeds them.
    resetRandom();
    const spec = hourly({ start: hourlyStart(BIG), end: "2026-01-01T00:00" });
    const statuses = mixedStatuses(BIG);
    await seedHistory(database.db, [
      { key: "ui/raw", partitions: spec, from: () => 0, status: () => "materialized", upstreams: [], codeVersion: null },
      { key: "ui/big", partitions: spec, from: () => 0, status: (i) => statuses[i]!, upstreams: ["ui/raw"], codeVersion: "v2" },
    ]);
    [dev, browser] = await Promise.all([startDev({ databaseUrl: database.url, definitionsDir: defsDir }), openBrowser()]);
    ({ page, problems } = await openPage(browser, dev.url));
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    if (defsDir) await rm(defsDir, { recursive: true, force: true });
  });

  /** Drags across the bar from one fraction of its width to another. */
  async function dragBar(from: number, to: number): Promise<void> {
    const box = (await page.getByTestId("partition-bar").boundingBox())!;
    const y = box.y + 10;
    await page.mouse.move(box.x + box.width * from, y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * ((from + to) / 2), y, { steps: 3 });
    await page.mouse.move(box.x + box.width * to, y, { steps: 3 });
    await page.mouse.up();
  }

  it("shows the definition, its dependencies with their mappings, and links up and down", async () => {
    await page.goto("/assets/ui/daily");
    await page.getByTestId("asset-definition").waitFor();
    expect(await page.getByTestId("asset-key").textContent()).toBe("ui/daily");
    expect(await page.getByTestId("def-owner").textContent()).toBe("team:ui");
    expect(await page.getByTestId("def-partitions").textContent()).toContain("daily");
    expect(await page.getByTestId("def-pool").textContent()).toBe("ui-pool");
    expect(await page.getByTestId("def-retries").textContent()).toContain("2");
    expect(await page.getByTestId("def-timeout").textContent()).toBe("5 min 0 s");
    expect(await page.getByTestId("def-code-version").textContent()).toBe("v1");
    expect(await page.getByTestId("def-automation").textContent()).toBe("eager()");
    expect(await page.getByTestId("pii-flag").textContent()).toContain("email");
    expect(await page.locator(".asset-description").textContent()).toBe("Daily numbers the UI test reads");
    const downstream = await page.getByTestId("asset-downstream").textContent();
    expect(downstream).toContain("ui/report");
    expect(downstream).toContain("ui/lagged");

    await page.getByTestId("asset-downstream").getByRole("link", { name: "ui/lagged" }).click();
    await page.waitForURL("**/assets/ui/lagged");
    const deps = page.getByTestId("asset-deps");
    await deps.waitFor();
    expect(await deps.textContent()).toContain("ui/daily");
    expect(await deps.textContent()).toContain("time window (offsets -1, 0)");
    await screenshot(page, "asset-definition");
    expectNoProblems(problems);
  });

  it("draws 100 000 partitions with the API's counts, and hovering shows the key and status under the cursor", async () => {
    const started = Date.now();
    await page.goto("/assets/ui/big");
    await page.locator('[data-testid="partition-bar"][data-ready="true"]').waitFor({ timeout: 30_000 });
    const renderMs = Date.now() - started;
    const { asset } = await api<{ asset: { partitionStatus: { counts: Counts; ranges: unknown[] } } }>(
      `{ asset(key: "ui/big") { partitionStatus { counts { missing materializing materialized failed stale timedOut total } ranges { count } } } }`,
    );
    const counts = asset.partitionStatus.counts;
    expect(counts.total).toBe(BIG);
    expect(counts.failed).toBeGreaterThan(0);
    expect(counts.stale).toBeGreaterThan(0);
    expect(await page.getByTestId("partition-bar").getAttribute("data-total")).toBe(String(BIG));
    expect(await page.getByTestId("legend-total").textContent()).toBe(BIG.toLocaleString("en-US"));
    for (const [status, field] of [
      ["MATERIALIZED", "materialized"],
      ["STALE", "stale"],
      ["MISSING", "missing"],
      ["FAILED", "failed"],
      ["MATERIALIZING", "materializing"],
    ] as const) {
      expect(await page.getByTestId(`legend-${status}`).getAttribute("data-count"), status).toBe(String(counts[field]));
    }

    // Hover: the key under the cursor is the n-th hour since the start, and has the status the bar shows for it.
    const box = (await page.getByTestId("partition-bar").boundingBox())!;
    const firstHour = Date.parse(`${hourlyStart(BIG)}:00Z`);
    for (const x of [box.x, box.x + box.width * 0.37, box.x + box.width - 0.5]) {
      await page.mouse.move(x, box.y + 10);
      const key = (await page.getByTestId("partition-tooltip-key").textContent())!;
      const n = Number((await page.getByTestId("partition-tooltip-index").textContent())!.replace(/,/g, ""));
      expect(key).toBe(new Date(firstHour + (n - 1) * 3_600_000).toISOString().slice(0, 16).replace("T", "-"));
      const status = await page.getByTestId("partition-tooltip-status").textContent();
      const listed = await api<{ asset: { partitions: { nodes: { key: string; status: string }[] } } }>(
        `query($k: String!) { asset(key: "ui/big") { partitions(from: $k, to: $k) { nodes { key status } } } }`,
        { k: key },
      );
      expect(listed.asset.partitions.nodes.map((n) => [n.key, n.status.toLowerCase().replace(/_/g, " ")])).toEqual([[key, status]]);
    }
    await page.mouse.move(box.x, box.y + 10);
    expect(await page.getByTestId("partition-tooltip-index").textContent()).toBe("1");
    // The last pixel holds the last partitions (about 80 at this width: a pixel is the finest a mouse points).
    await page.mouse.move(box.x + box.width - 0.5, box.y + 10);
    const last = Number((await page.getByTestId("partition-tooltip-index").textContent())!.replace(/,/g, ""));
    expect(last).toBeGreaterThan(BIG - BIG / box.width - 1);

    // Clicking a status lists its partitions, with their stale reasons.
    await page.getByTestId("legend-STALE").click();
    await page.waitForURL(/status=STALE/);
    await page.getByTestId("partition-row").first().waitFor();
    const rows = page.getByTestId("partition-row");
    expect(await rows.count()).toBe(50);
    expect(await rows.first().textContent()).toMatch(/stale/);
    expect(await rows.first().textContent()).toMatch(/code version|materialised again/);
    await page.getByTestId("next-page").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="partition-row"]') !== null);
    await screenshot(page, "asset-partitions");
    expect(renderMs).toBeLessThan(15_000);
    expectNoProblems(problems);
  });

  it("materialises a dragged range as a run and a larger one as a backfill, both listed by the API; the selection is in the URL", async () => {
    await page.goto("/assets/ui/daily");
    await page.locator('[data-testid="partition-bar"][data-ready="true"]').waitFor();
    // 59 partitions: from the 3rd to the 8th.
    await dragBar(2.5 / 59, 7.5 / 59);
    await page.getByTestId("selection-actions").waitFor();
    expect(await page.getByTestId("selection-count").textContent()).toBe("6 partitions");
    expect(await page.getByTestId("selection-label").textContent()).toBe("2025-01-03 … 2025-01-08");
    expect(page.url()).toContain("from=2025-01-03");
    expect(page.url()).toContain("to=2025-01-08");
    // A reload shows the same selection.
    await page.reload();
    await page.getByTestId("selection-actions").waitFor();
    expect(await page.getByTestId("selection-label").textContent()).toBe("2025-01-03 … 2025-01-08");

    await page.getByTestId("materialise").click();
    const result = page.getByTestId("action-result");
    await result.waitFor();
    expect(await result.getAttribute("data-kind")).toBe("run");
    const runId = (await result.getAttribute("data-id"))!;
    const { run } = await api<{ run: { id: string; origin: string; steps: { partitionKey: string }[] } | null }>(
      `query($id: String!) { run(id: $id) { id origin steps { partitionKey } } }`,
      { id: runId },
    );
    expect(run?.origin).toBe("manual");
    expect(run!.steps.map((s) => s.partitionKey).sort()).toEqual([
      "2025-01-03",
      "2025-01-04",
      "2025-01-05",
      "2025-01-06",
      "2025-01-07",
      "2025-01-08",
    ]);
    expect(await result.getByRole("link").getAttribute("href")).toBe(`/runs/${runId}`);

    // The whole bar: more than a run takes, so a backfill.
    await dragBar(0, 1);
    await page.waitForFunction(() => document.querySelector('[data-testid="selection-count"]')?.textContent === "59 partitions");
    expect(await page.getByTestId("materialise").textContent()).toContain("backfill");
    await page.getByTestId("materialise").click();
    await page.locator('[data-testid="action-result"][data-kind="backfill"]').waitFor();
    const backfillId = (await page.getByTestId("action-result").getAttribute("data-id"))!;
    const { backfills } = await api<{ backfills: { id: string; requested: number; from: string; to: string }[] }>(
      `{ backfills { id requested from to } }`,
    );
    expect(backfills.find((b) => b.id === backfillId)).toMatchObject({ requested: 59, from: "2025-01-01", to: "2025-02-28" });
    expectNoProblems(problems);
  });

  it("clears a range as a rerun, downstream included", async () => {
    await page.goto("/assets/ui/daily?from=2025-01-04&to=2025-01-05");
    await page.getByTestId("selection-actions").waitFor();
    expect(await page.getByTestId("selection-count").textContent()).toBe("2 partitions");
    await page.getByTestId("clear-downstream").check();
    await page.getByTestId("clear").click();
    await page.locator('[data-testid="action-result"][data-kind="run"]').waitFor();
    const runId = (await page.getByTestId("action-result").getAttribute("data-id"))!;
    const { run } = await api<{ run: { origin: string; steps: { assetKey: string; partitionKey: string }[] } | null }>(
      `query($id: String!) { run(id: $id) { origin steps { assetKey partitionKey } } }`,
      { id: runId },
    );
    expect(run?.origin).toBe("rerun");
    const steps = run!.steps.map((s) => `${s.assetKey}:${s.partitionKey}`);
    expect(steps).toEqual(
      expect.arrayContaining(["ui/daily:2025-01-04", "ui/daily:2025-01-05", "ui/report:2025-01-04", "ui/report:2025-01-05"]),
    );
    expectNoProblems(problems);
  });

  it("shows the API's error with its code and message", async () => {
    await page.goto("/assets/ui/needs_feed?from=2025-02-20&to=2025-02-22");
    await page.getByTestId("selection-actions").waitFor();
    await page.getByTestId("materialise").click();
    const error = page.getByTestId("selection-actions").getByTestId("error");
    await error.waitFor();
    expect(await error.textContent()).toContain("PLAN_MISSING_UPSTREAM");
    expect(await error.textContent()).toContain("upstream partitions that are not there");
    expect(await error.textContent()).toContain("ui/feed");
    expect(await page.getByTestId("action-result").count()).toBe(0);
    expectNoProblems(problems);
  });

  it("shows a multi-partitioned asset as a matrix; a dragged block is backfilled by its keys", async () => {
    await page.goto("/assets/ui/regions");
    const matrix = page.locator('[data-testid="partition-matrix"][data-ready="true"]');
    await matrix.waitFor();
    expect(await page.getByTestId("legend-total").textContent()).toBe("30");
    const canvas = (await page.locator('[data-testid="partition-matrix"] canvas').first().boundingBox())!;
    // Rows: region (3), columns: date (10).
    const cell = (row: number, col: number) => ({
      x: canvas.x + (canvas.width * (col + 0.5)) / 10,
      y: canvas.y + (canvas.height * (row + 0.5)) / 3,
    });
    const a = cell(0, 1);
    await page.mouse.move(a.x, a.y);
    expect(await page.getByTestId("partition-tooltip-key").textContent()).toBe("region=eu · date=2025-01-02");
    await page.mouse.down();
    const b = cell(1, 3);
    await page.mouse.move(b.x, b.y, { steps: 4 });
    await page.mouse.up();
    await page.getByTestId("selection-actions").waitFor();
    expect(await page.getByTestId("selection-count").textContent()).toBe("6 partitions");
    // Not one range of consecutive partitions: no clear, a backfill of the listed keys.
    expect(await page.getByTestId("clear").isDisabled()).toBe(true);
    await page.getByTestId("materialise").click();
    await page.locator('[data-testid="action-result"][data-kind="backfill"]').waitFor();
    const id = (await page.getByTestId("action-result").getAttribute("data-id"))!;
    const { backfill } = await api<{ backfill: { requested: number; partitions: string[] } | null }>(
      `query($id: String!) { backfill(id: $id) { requested partitions } }`,
      { id },
    );
    expect(backfill?.requested).toBe(6);
    expect([...backfill!.partitions].sort()).toEqual([
      "2025-01-02|eu",
      "2025-01-02|us",
      "2025-01-03|eu",
      "2025-01-03|us",
      "2025-01-04|eu",
      "2025-01-04|us",
    ]);
    await screenshot(page, "asset-matrix");
    expectNoProblems(problems);
  });

  it("reads the keys of dynamic partitions for the hover, in the order they were added", async () => {
    await api(`mutation { addDynamicPartitions(name: "ui_customers", keys: ["zeta", "alpha", "mid"]) { total } }`);
    await page.goto("/assets/ui/customers");
    await page.locator('[data-testid="partition-bar"][data-ready="true"]').waitFor();
    const box = (await page.getByTestId("partition-bar").boundingBox())!;
    const keys: string[] = [];
    for (const fraction of [1 / 6, 3 / 6, 5 / 6]) {
      await page.mouse.move(box.x + box.width * fraction, box.y + 10);
      // The keys load after the bar is drawn: until then the tooltip names the position.
      await page.waitForFunction(
        () => !document.querySelector('[data-testid="partition-tooltip-key"]')?.textContent?.startsWith("partition #"),
      );
      keys.push((await page.getByTestId("partition-tooltip-key").textContent())!);
    }
    expect(keys).toEqual(["zeta", "alpha", "mid"]);
    expectNoProblems(problems);
  });

  it("shows history, lineage and automation decisions for the chosen partition, and an unknown asset as not found", async () => {
    // The run of an earlier test materialises 2025-01-03 of ui/daily.
    await page.goto("/assets/ui/daily?partition=2025-01-03&tab=history");
    await page.getByTestId("history-row").first().waitFor({ timeout: 60_000 });
    expect(await page.getByTestId("history-row").first().textContent()).toContain("2025-01-03");
    await page.getByTestId("tab-lineage").click();
    await page.waitForURL(/tab=lineage/);
    await page.getByTestId("lineage-down").waitFor();
    expect(await page.getByTestId("lineage-down").textContent()).toContain("ui/report");
    await page.getByTestId("tab-automation").click();
    await page.getByTestId("automation").waitFor();
    await page.waitForFunction(() => !document.querySelector('[data-testid="automation"]')?.textContent?.includes("Loading"));
    expect(await page.getByTestId("automation").textContent()).toContain("eager()");

    await page.goto("/assets/no/such/asset");
    expect(await page.getByTestId("not-found").textContent()).toContain("no/such/asset");
    expectNoProblems(problems);
  });

  it("wipes a range after saying what would go: the partitions are missing, the reason is in the audit trail", async () => {
    const space = partitionSpace(hourly({ start: hourlyStart(BIG), end: "2026-01-01T00:00" }));
    const [from, to] = [space.keyAt(0), space.keyAt(4)];
    const statuses = async () =>
      (
        await api<{ asset: { partitions: { nodes: { status: string }[] } } }>(
          `query($from: String!, $to: String!) { asset(key: "ui/raw") { partitions(from: $from, to: $to) { nodes { status } } } }`,
          { from, to },
        )
      ).asset.partitions.nodes.map((n) => n.status);
    expect(await statuses()).toEqual(Array(5).fill("MATERIALIZED"));
    await page.goto(`/assets/ui/raw?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
    await page.getByTestId("selection-actions").waitFor();
    await page.getByTestId("wipe").click();
    const preview = page.getByTestId("wipe-preview");
    await preview.waitFor();
    // Some raw partitions were materialised twice (their downstream partition is stale).
    expect(await preview.textContent()).toMatch(
      /^Wipe 5 partitions\? This removes 5 statuses, \d+ materialisations, 0 check results and 0 outputs\./,
    );
    // Nothing went yet: the preview was a dry run.
    expect(await statuses()).toEqual(Array(5).fill("MATERIALIZED"));
    await page.getByTestId("wipe-reason").fill("seeded by mistake");
    await page.getByTestId("wipe-confirm").click();
    await page.getByTestId("wipe-result").waitFor();
    expect(await page.getByTestId("wipe-result").textContent()).toContain("Wiped 5 partitions");
    expect(await statuses()).toEqual(Array(5).fill("MISSING"));
    const { auditEvents } = await api<{ auditEvents: { action: string; partitions: string[]; detail: { reason?: string } }[] }>(
      `{ auditEvents(action: "wipePartitions", first: 1) { action partitions detail } }`,
    );
    expect(auditEvents[0]).toMatchObject({ action: "wipePartitions", detail: { reason: "seeded by mistake" } });
    expect(auditEvents[0]!.partitions).toHaveLength(5);
    expectNoProblems(problems);
  });
});

// The asset graph and the asset catalog with 2 000 assets, in a real headless Chromium against a real
// `tributary dev` on the local Postgres.
//
// The graph: 8 groups of 250 assets, each group a pipeline of 12 levels where an asset reads 1–3 assets of the
// level before (sometimes two before), and 10 % of the dependencies come from another group (≈ 3 900 edges).
// Every asset has 24 static partitions whose statuses are seeded as bench/api.ts seeds them (materialised, stale,
// failed, missing in runs), so the nodes take every colour.
//
// Measured in the page, from navigation start (a fresh browser context each time: no cache):
// - graph: until the AssetGraph sets data-ready (the "asset-graph-drawn" mark, the frame after the SVG commit),
//   with the dagre time spent in the Web Worker (data-layout-ms); and a second visit inside the app (Assets →
//   Graph), which reuses the layout;
// - catalog: until the first page of rows is in the table; then typing a search until the rows are filtered.
//
//   npx tsx bench/ui-graph.ts [--runs 5]
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import type { Browser, Page } from "playwright-core";
import { mixedStatuses, resetRandom, random, seedHistory, type SeedAsset } from "./_seed-history.js";
import { staticPartitions } from "../src/partitions/index.js";
import { writeBenchDefinitions } from "./_definitions.js";
import { printResult, withScope } from "./_setup.js";
import { launchChromium, startDev, stats } from "./_ui-bench.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" }, assets: { type: "string", default: "2000" } } });
const RUNS = Number(values.runs);
const ASSETS = Number(values.assets);
const GROUPS = ["ingest", "crm", "finance", "marketing", "ops", "product", "sales", "support"];
const LEVELS = 12;
const KEYS = Array.from({ length: 24 }, (_, i) => `p${String(i).padStart(2, "0")}`);

/** The definitions file and each asset's upstreams, upstream assets first. */
function generate(): { source: string; assets: { key: string; upstreams: string[] }[]; edges: number } {
  resetRandom();
  const perGroup = Math.ceil(ASSETS / GROUPS.length);
  const perLevel = Math.ceil(perGroup / LEVELS);
  const byLevel = GROUPS.map(() => Array.from({ length: LEVELS }, () => [] as number[]));
  const assets: { key: string; upstreams: string[] }[] = [];
  const lines = [
    `import { asset, staticPartitions } from "tributary";`,
    `const parts = staticPartitions(${JSON.stringify(KEYS)});`,
    `const noop = async () => null;`,
  ];
  let edges = 0;
  for (let level = 0; level < LEVELS; level++) {
    for (let g = 0; g < GROUPS.length; g++) {
      for (let j = 0; j < perLevel && assets.length < ASSETS; j++) {
        const i = assets.length;
        const deps = new Set<number>();
        if (level > 0) {
          const count = 1 + Math.floor(random() * 3);
          for (let d = 0; d < count; d++) {
            const fromGroup = random() < 0.1 ? Math.floor(random() * GROUPS.length) : g;
            const fromLevel = level > 1 && random() < 0.2 ? level - 2 : level - 1;
            const pool = byLevel[fromGroup]![fromLevel]!;
            if (pool.length > 0) deps.add(pool[Math.floor(random() * pool.length)]!);
          }
        }
        const key = `${GROUPS[g]}/l${String(level).padStart(2, "0")}_a${i}`;
        const depList = [...deps].map((k) => `d${k}: a${k}`).join(", ");
        lines.push(
          `export const a${i} = asset({ key: "${key}", group: "${GROUPS[g]}", owner: "team:${GROUPS[g]}", partitions: parts, deps: { ${depList} } }, noop);`,
        );
        assets.push({ key, upstreams: [...deps].map((k) => assets[k]!.key) });
        edges += deps.size;
        byLevel[g]![level]!.push(i);
      }
    }
  }
  return { source: `${lines.join("\n")}\n`, assets, edges };
}

async function seed(url: string, assets: readonly { key: string; upstreams: string[] }[]): Promise<object> {
  return withScope(async (scope) => {
    const { db } = await scope.postgres(url);
    resetRandom();
    const partitions = staticPartitions(KEYS);
    return await seedHistory(
      db,
      assets.map((a): SeedAsset => {
        const statuses = mixedStatuses(KEYS.length);
        return { key: a.key, partitions, from: () => 0, status: (i) => statuses[i]!, upstreams: a.upstreams, codeVersion: null };
      }),
    );
  });
}

/** A fresh context and page that records console errors. */
async function freshPage(browser: Browser, problems: string[]): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  page.on("pageerror", (e) => problems.push(e.message));
  return page;
}

const graphqlMs = (page: Page) =>
  page.evaluate(() => {
    const r = (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).find((e) => e.name.endsWith("/graphql"));
    return r ? r.responseEnd - r.startTime : NaN;
  });

/** Where the time of the first load went: [start, end] since navigation of the page's files and GraphQL requests, and marks. */
const phasesOf = (page: Page) =>
  page.evaluate(() => [
    ...[
      ["html", 0, (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).responseEnd],
      ...(performance.getEntriesByType("resource") as PerformanceResourceTiming[]).map((r) => [
        r.name.replace(/^https?:\/\/[^/]+/, ""),
        r.startTime,
        r.responseEnd,
      ]),
    ].map(([name, start, end]) => `${name as string} ${Math.round(start as number)}–${Math.round(end as number)}`),
    ...performance.getEntriesByType("mark").map((m) => `${m.name} ${Math.round(m.startTime)}`),
  ]);

async function main(): Promise<void> {
  await withScope(async (scope) => {
    const url = await scope.scratchDatabase("ui_graph");
    const dir = await scope.tempDir("ui-graph");
    const browser = await launchChromium(scope);
    const problems: string[] = [];
    const { source, assets, edges } = generate();
    await writeBenchDefinitions(dir, source);
    const seeded = await seed(url, assets);
    const dev = await startDev(scope, url, dir);
    const base = `http://127.0.0.1:${dev.port}`;

    const graph = { ready: [] as number[], layout: [] as number[], query: [] as number[], revisit: [] as number[] };
    let statuses: Record<string, number> = {};
    let graphPhases: string[] = [];
    let catalogPhases: string[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const page = await freshPage(browser, problems);
      await page.goto(`${base}/graph`);
      const ready = page.locator('[data-testid="asset-graph"][data-ready="true"]');
      await ready.waitFor({ timeout: 300_000 });
      const readyMs = await page.evaluate(() => performance.getEntriesByName("asset-graph-drawn")[0]!.startTime);
      const layoutMs = Number(await ready.getAttribute("data-layout-ms"));
      // Every node is drawn as a block of its status colour (labelled nodes only once zoomed in).
      const drawnByStatus = await page
        .locator(".graph-blocks")
        .evaluateAll((ps) => Object.fromEntries(ps.map((p) => [p.getAttribute("data-status")!, Number(p.getAttribute("data-count"))])));
      const nodes = Object.values(drawnByStatus).reduce((a, b) => a + b, 0);
      if (nodes !== assets.length) throw new Error(`the graph shows ${nodes} of ${assets.length} assets`);
      if (i === RUNS) {
        graphPhases = await phasesOf(page);
        statuses = drawnByStatus;
      }
      // Inside the app: to the catalog and back; the layout of the same graph is reused.
      await page.getByRole("link", { name: "Assets", exact: true }).click();
      await page.getByTestId("catalog-table").waitFor({ timeout: 60_000 });
      const t0 = await page.evaluate(() => performance.now());
      await page.getByRole("link", { name: "Graph", exact: true }).click();
      await page.locator('[data-testid="asset-graph"][data-ready="true"]').waitFor({ timeout: 300_000 });
      const revisitMs = (await page.evaluate(() => performance.getEntriesByName("asset-graph-drawn").at(-1)!.startTime)) - t0;
      if (i > 0) {
        // The first load warms the server (and Chromium's compile caches): not counted.
        graph.ready.push(readyMs);
        graph.layout.push(layoutMs);
        graph.revisit.push(revisitMs);
        graph.query.push(await graphqlMs(page));
      }
      await page.context().close();
    }

    const catalog = { ready: [] as number[], query: [] as number[], search: [] as number[] };
    for (let i = 0; i <= RUNS; i++) {
      const page = await freshPage(browser, problems);
      await page.goto(`${base}/assets`);
      await page.getByTestId("catalog-row").first().waitFor({ timeout: 60_000 });
      const readyMs = await page.evaluate(() => performance.now());
      const count = await page.getByTestId("catalog-count").getAttribute("data-count");
      if (Number(count) !== assets.length) throw new Error(`the catalog counts ${count} of ${assets.length} assets`);
      if (i === RUNS) catalogPhases = [...(await phasesOf(page)), `rows ${Math.round(readyMs)}`];
      // Typing a search: from the keystroke to the filtered rows.
      const searchMs = await page.evaluate(async () => {
        const input = document.querySelector<HTMLInputElement>("[data-testid=catalog-search]")!;
        const started = performance.now();
        const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
        setter.call(input, "finance/l03");
        input.dispatchEvent(new Event("input", { bubbles: true }));
        for (;;) {
          const rows = document.querySelectorAll("[data-testid=catalog-row]");
          if (rows.length > 0 && [...rows].every((r) => r.getAttribute("data-key")!.includes("finance/l03")))
            return performance.now() - started;
          await new Promise((r) => requestAnimationFrame(r));
        }
      });
      if (i > 0) {
        catalog.ready.push(readyMs);
        catalog.query.push(await graphqlMs(page));
        catalog.search.push(searchMs);
      }
      await page.context().close();
    }
    if (problems.length > 0) throw new Error(`console errors:\n${problems.join("\n")}`);
    printResult({
      bench: "ui-graph",
      browser: "chromium (headless)",
      viewport: "1280x800",
      database: "postgres (local)",
      loadAverage1m: Math.round(loadavg()[0]! * 10) / 10,
      assets: assets.length,
      groups: GROUPS.length,
      edges,
      seeded,
      graph: {
        navigationToDrawnMs: stats(graph.ready),
        layoutInWorkerMs: stats(graph.layout),
        graphqlMs: stats(graph.query),
        revisitInAppMs: stats(graph.revisit),
        nodesByStatus: statuses,
        lastLoad: graphPhases,
      },
      catalog: {
        navigationToRowsMs: stats(catalog.ready),
        graphqlMs: stats(catalog.query),
        searchToRowsMs: stats(catalog.search),
        lastLoad: catalogPhases,
      },
    });
  });
}

await main();

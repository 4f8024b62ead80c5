// The asset page's partition bar in a real headless Chromium against a real `tributary dev` on the local
// Postgres: time from navigation to the bar drawn (the PartitionBar's `data-ready`), for hourly assets with
// 10 000 and 100 000 partitions whose statuses are seeded as bench/api.ts seeds them (mixed, in runs, with
// scattered failures: thousands of status ranges).
//
// Each measurement opens a fresh page (new browser context: no cache) and reads, in the page,
// performance.now() once `data-ready` is set (navigation start = 0), plus the draw time the bar records
// (performance.measure "partition-bar-draw").
//
//   npx tsx bench/ui-partitions.ts [--runs 10] [--sizes 10000,100000]
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { hourlyStart, mixedStatuses, resetRandom, seedHistory, type SeedAsset } from "./_seed-history.js";
import { hourly } from "../src/partitions/index.js";
import { writeBenchDefinitions } from "./_definitions.js";
import { printResult, withScope } from "./_setup.js";
import { launchChromium, startDev, stats } from "./_ui-bench.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "10" }, sizes: { type: "string", default: "10000,100000" } } });
const RUNS = Number(values.runs);
// Seeded and defined always (the seed is the same whatever is measured); measured: these.
const SIZES = [10_000, 100_000];
const MEASURED = values.sizes.split(",").map(Number);
const END = "2026-01-01T00:00";

const source = [
  `import { asset, dep, hourly } from "tributary";`,
  `const noop = async () => null;`,
  `export const raw = asset({ key: "bench/raw", partitions: hourly({ start: "${hourlyStart(100_000)}", end: "${END}" }) }, noop);`,
  ...SIZES.map(
    (n) =>
      `export const p${n} = asset({ key: "bench/p${n}", codeVersion: "v2", partitions: hourly({ start: "${hourlyStart(n)}", end: "${END}" }), deps: { raw: dep(raw) } }, noop);`,
  ),
].join("\n");

async function seed(url: string): Promise<object> {
  return withScope(async (scope) => {
    const { db } = await scope.postgres(url);
    resetRandom();
    const assets: SeedAsset[] = [
      {
        key: "bench/raw",
        partitions: hourly({ start: hourlyStart(100_000), end: END }),
        from: () => 0,
        status: () => "materialized",
        upstreams: [],
        codeVersion: null,
      },
      ...SIZES.map((n): SeedAsset => {
        const statuses = mixedStatuses(n);
        return {
          key: `bench/p${n}`,
          partitions: hourly({ start: hourlyStart(n), end: END }),
          from: () => 0,
          status: (i) => statuses[i]!,
          upstreams: ["bench/raw"],
          codeVersion: "v2",
        };
      }),
    ];
    return await seedHistory(db, assets);
  });
}

async function main(): Promise<void> {
  await withScope(async (scope) => {
    const url = await scope.scratchDatabase("ui_parts");
    const dir = await scope.tempDir("ui");
    const browser = await launchChromium(scope);
    await writeBenchDefinitions(dir, source);
    const seeded = await seed(url);
    const dev = await startDev(scope, url, dir);
    const out: Record<string, unknown> = {};
    const phases: Record<number, string[]> = {};
    for (const n of SIZES.filter((size) => MEASURED.includes(size))) {
      const ready: number[] = [];
      const draw: number[] = [];
      let ranges = 0;
      const problems: string[] = [];
      for (let i = 0; i <= RUNS; i++) {
        const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
        const page = await context.newPage();
        page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
        page.on("pageerror", (e) => problems.push(e.message));
        await page.goto(`http://127.0.0.1:${dev.port}/assets/bench/p${n}`);
        await page.locator('[data-testid="partition-bar"][data-ready="true"]').waitFor({ timeout: 60_000 });
        const m = await page.evaluate(() => ({
          readyMs: performance.now(),
          // Where the time went: the page's own files and each GraphQL request, [start, end] since navigation.
          phases: [
            ["html", 0, (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).responseEnd],
            ...(performance.getEntriesByType("resource") as PerformanceResourceTiming[]).map((r) => [
              r.name.replace(/^https?:\/\/[^/]+/, ""),
              r.startTime,
              r.responseEnd,
            ]),
          ].map(([name, start, end]) => `${name as string} ${Math.round(start as number)}–${Math.round(end as number)}`),
          drawMs: performance.getEntriesByName("partition-bar-draw")[0]?.duration ?? NaN,
          drawnAtMs: performance.getEntriesByName("partition-bar-draw")[0]?.startTime ?? NaN,
        }));
        const total = await page.getByTestId("partition-bar").getAttribute("data-total");
        if (Number(total) !== n) throw new Error(`bench/p${n}: the bar shows ${total} partitions`);
        if (i === RUNS) phases[n] = m.phases;
        if (i > 0) {
          // The first load warms the server (and Chromium's compile caches): not counted.
          ready.push(m.drawnAtMs + m.drawMs);
          draw.push(m.drawMs);
        }
        ranges = await page.evaluate(async (key) => {
          const res = await fetch("/graphql", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ query: `{ asset(key: "${key}") { partitionStatus { ranges { count } } } }` }),
          });
          return ((await res.json()) as { data: { asset: { partitionStatus: { ranges: unknown[] } } } }).data.asset.partitionStatus.ranges
            .length;
        }, `bench/p${n}`);
        await context.close();
      }
      if (problems.length > 0) throw new Error(`bench/p${n}: console errors:\n${problems.join("\n")}`);
      out[`partitions${n}`] = { ranges, navigationToBarDrawnMs: stats(ready), drawMs: stats(draw), lastLoad: phases[n] };
    }
    // The machine's 1-minute load average at the end: the figures move with it on a shared machine.
    const load = Math.round(loadavg()[0]! * 10) / 10;
    printResult({
      bench: "ui-partitions",
      browser: "chromium (headless)",
      viewport: "1280x800",
      database: "postgres (local)",
      loadAverage1m: load,
      seeded,
      ...out,
    });
  });
}

await main();

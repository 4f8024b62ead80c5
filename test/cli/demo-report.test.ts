import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { eventually, graphqlAt, runCli, startDev, type DevServer } from "./run-cli.js";

// The demo as the README's tour uses it: partitions reported by an outside producer (`tributary report`, which
// stores no value) and their readers run by automation or by hand all succeed; and the demo keeps its files in
// the data directory `dev` was started with (its database is a Postgres of its own, not in that directory).
let store: CommandStore | undefined;
let dataDir: string;
let dev: DevServer;

interface Step {
  assetKey: string;
  partitionKey: string;
  mapIndex: number;
  checkName: string | null;
  state: string;
  error: unknown;
}
type Runs = { runs: { id: string; createdAt: string; steps: Step[] }[] };

const READERS = ["shop/regional_sales", "shop/weekly_revenue", "shop/revenue_7d", "partner/delivery_rate"];

async function steps(): Promise<(Step & { runCreatedAt: string })[]> {
  const r = await graphqlAt<Runs>(
    dev.port,
    "{ runs(first: 500) { id createdAt steps { assetKey partitionKey mapIndex checkName state error } } }",
  );
  expect(r.errors).toBeUndefined();
  return r.data!.runs.flatMap((run) => run.steps.map((s) => ({ ...s, runCreatedAt: run.createdAt })));
}

/** Fails at once, with the errors, when a reader of the demo failed. */
function noFailedReaders(all: readonly Step[]): void {
  const failed = all.filter((s) => READERS.includes(s.assetKey) && (s.state === "failed" || s.state === "upstream_failed"));
  expect(failed.map((s) => `${s.assetKey} ${s.partitionKey}: ${JSON.stringify(s.error)}`)).toEqual([]);
}

describePostgres("the demo with partitions reported from outside", () => {
  beforeAll(async () => {
    store = await commandStore("tributary-demo-report-");
    dataDir = store.dataDir;
    // No TRIBUTARY_DEMO_DATA: the demo must find the data directory by itself.
    dev = await startDev({ dataDir, env: { ...store.env, TRIBUTARY_DEMO_DATA: "" } });
  }, 600_000);
  afterAll(async () => {
    await dev?.stop();
    await store?.remove();
  });

  it("runs the readers of reported partitions without failing, by automation and by hand", async () => {
    const cli = (args: string[]) => runCli([...args, "--url", dev.url], { timeoutMs: 300_000 });
    const reportedAt = new Date().toISOString();
    // The tour's reports (an outside write, an observation by hand), and another day of the same week.
    for (const args of [
      ["report", "shop/raw_orders", "--partition", "2025-03-10"],
      ["report", "shop/raw_orders", "--partition", "2025-03-05"],
      ["report", "partner/deliveries", "--partition", "2025-03-10", "--observation"],
    ]) {
      const r = await cli(args);
      expect(r.code, `${args.join(" ")}\n${r.stdout}${r.stderr}`).toBe(0);
    }

    // eager() readers of the reported partitions run by themselves: the day's regional sales, the delivery rate.
    const wanted = [
      ...["eu", "us", "apac"].flatMap((region) => [`shop/regional_sales 2025-03-10|${region}`, `shop/regional_sales 2025-03-05|${region}`]),
      "partner/delivery_rate 2025-03-10",
    ];
    await eventually(
      async () => {
        const all = await steps();
        noFailedReaders(all);
        const done = new Set(
          all.filter((s) => s.state === "success" && s.runCreatedAt >= reportedAt).map((s) => `${s.assetKey} ${s.partitionKey}`),
        );
        return wanted.every((w) => done.has(w)) ? true : undefined;
      },
      400_000,
      () => `the readers of the reported partitions (${wanted.join(", ")})\n${dev.output()}`,
    );

    // The week holding a reported day, and the trailing seven days ending on one: the reported days count, without value.
    const week = await cli(["materialize", "shop/weekly_revenue", "--partition", "2025-03-03", "--include-upstream", "--wait", "--json"]);
    expect(week.code, week.stdout + week.stderr).toBe(0);
    const trailing = await cli(["materialize", "shop/revenue_7d", "--partition", "2025-03-10", "--include-upstream", "--wait", "--json"]);
    expect(trailing.code, trailing.stdout + trailing.stderr).toBe(0);
    // The demo writes each week's value to a file in the data directory.
    const weekValue = JSON.parse(await readFile(path.join(dataDir, "demo-data", "weekly_revenue", "2025-03-03.json"), "utf8")) as unknown;
    expect(weekValue).toMatchObject({ days: 7, reportedDays: 1 });
    noFailedReaders(await steps());
  }, 900_000);

  it("has a blocking check and a mapped asset to show, and one mapped step clears inside its run", async () => {
    // Automation fans the latest days of shop/region_exports out, one mapped step per region, and checks
    // shop/raw_orders (not_empty, blocking) after each day it materialises.
    const found = await eventually(
      async () => {
        const r = await graphqlAt<Runs>(
          dev.port,
          "{ runs(first: 500) { id createdAt steps { assetKey partitionKey mapIndex checkName state error } } }",
        );
        const runs = r.data?.runs ?? [];
        const checked = runs
          .flatMap((run) => run.steps)
          .some((s) => s.assetKey === "shop/raw_orders" && s.checkName === "not_empty" && s.state === "success");
        const mapped = runs.find((run) => {
          const exports = run.steps.filter((s) => s.assetKey === "shop/region_exports");
          return exports.some((s) => s.mapIndex >= 0) && exports.every((s) => s.state === "success");
        });
        return checked && mapped ? mapped : undefined;
      },
      400_000,
      () => `a checked day of shop/raw_orders and a fanned-out day of shop/region_exports\n${dev.output()}`,
    );
    const items = found.steps.filter((s) => s.assetKey === "shop/region_exports" && s.mapIndex >= 0);
    expect(items.length).toBeGreaterThan(0);
    expect(items.length).toBeLessThanOrEqual(3);

    // The tour's command, as a user types it: no --partition (the run fanned out one day).
    const cleared = await runCli(["clear", "shop/region_exports", "--run", found.id, "--map-index", "0", "--wait", "--url", dev.url], {
      timeoutMs: 300_000,
    });
    expect(cleared.code, cleared.stdout + cleared.stderr).toBe(0);
    expect(cleared.stderr).toContain(
      `cleared mapped step 0 of "shop/region_exports" partition "${items[0]!.partitionKey}" in run ${found.id}`,
    );
  }, 600_000);

  it("keeps the demo's files in the data directory dev runs with", async () => {
    // The stand-in partner writes the latest days' files under <data-dir>/demo-data; the triggerer observes them
    // there (the source asset's path follows the data directory too) and the delivery rate reads them.
    const landing = path.join(dataDir, "demo-data", "landing");
    const observed = await eventually(
      async () => {
        const rates = (await steps()).filter(
          (s) => s.assetKey === "partner/delivery_rate" && s.state === "success" && s.partitionKey !== "2025-03-10",
        );
        return rates[0]?.partitionKey;
      },
      300_000,
      () => `the delivery rate of a day the stand-in partner delivered\n${dev.output()}`,
    );
    const files = await readdir(landing);
    expect(files).toContain(`deliveries-${observed}.json`);
    const delivered = JSON.parse(await readFile(path.join(landing, `deliveries-${observed}.json`), "utf8")) as { day: string };
    expect(delivered.day).toBe(observed);
    expect((await readdir(path.join(dataDir, "demo-data", "raw_orders"))).length).toBeGreaterThan(0);
  }, 600_000);
});

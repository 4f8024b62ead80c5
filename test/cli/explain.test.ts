import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliBudget, runCli, writeGoodAndBadDefinitions } from "./run-cli.js";

// `tributary explain` on the demo definitions (asset-definitions/) and on a directory with broken files. It loads
// the definitions as `tributary check` does: no database, no server.

type Explanation = {
  ok: boolean;
  key: string;
  kind: string;
  file: string;
  examplePartition: string | null;
  dependencies: {
    name: string;
    assetKey: string;
    mapping: string | null;
    defaultMapping: boolean;
    reads: { first: string | null; last: string | null; count: number; missing: { count: number } } | null;
  }[];
  automation: { condition: string; words: string } | null;
  settings: { name: string; value: string }[];
  checks: { name: string; blocking: boolean; partitions: string }[];
  downstream: { key: string; as: string }[];
};

let scratch: string;
let brokenDir: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "tributary-explain-"));
  brokenDir = path.join(scratch, "definitions");
  await mkdir(brokenDir);
  await writeGoodAndBadDefinitions(brokenDir);
  await writeFile(
    path.join(brokenDir, "throws.ts"),
    `import { asset } from "tributary";\nthrow new Error("no connection to the warehouse");\nexport const later = asset({ key: "t/later" }, async () => 1);\n`,
  );
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("tributary explain (the demo definitions)", () => {
  it("shows what a partition reads through a trailing time window, without touching a database", async () => {
    const dataDir = path.join(scratch, "no-data-dir");
    const r = await runCli(["explain", "shop/revenue_7d", "--partition", "2025-03-10", "--data-dir", dataDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^shop\/revenue_7d\n/);
    expect(r.stdout).toMatch(/file\s+shop\/orders\.ts \(export revenue7d\)/);
    expect(r.stdout).toMatch(/partitions\s+daily partitions from 2025-01-01 in UTC, each once its day has ended/);
    expect(r.stdout).toContain(
      "orders: shop/raw_orders through timeWindow(startOffset -6): the upstream windows overlapping its own window and the 6 days before it",
    );
    expect(r.stdout).toContain("partition 2025-03-10 reads shop/raw_orders 2025-03-04 … 2025-03-10 (7 partitions)");
    expect(r.stdout).toMatch(/automation\s+materialise a partition when `shop\/raw_orders` changed since it last read it/);
    expect(r.stdout).toContain("eager()");
    expect(existsSync(dataDir)).toBe(false);
  });

  it("explains automation, settings, checks and readers as JSON, reading the latest existing partition by default", async () => {
    const r = await runCli(["explain", "shop/raw_orders", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const e = JSON.parse(r.stdout) as Explanation;
    expect(e).toMatchObject({ ok: true, key: "shop/raw_orders", kind: "asset", file: "shop/orders.ts", dependencies: [] });
    // The latest day whose window has closed.
    expect(e.examplePartition).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(e.examplePartition! < new Date().toISOString().slice(0, 10)).toBe(true);
    expect(e.automation?.words).toBe(
      "materialise the latest daily partition every day at 01:00 in the reconciler's time zone; " +
        "also materialise any of the latest 14 daily partitions when it is missing, unless it is in progress or its latest try failed",
    );
    expect(e.settings).toEqual([
      { name: "retries", value: "3 retries, the first after 30s, exponential backoff" },
      { name: "timeout", value: "10m" },
      { name: "pool", value: "warehouse" },
    ]);
    expect(e.checks).toEqual([expect.objectContaining({ name: "not_empty", blocking: true, partitions: "every partition" })]);
    expect(e.downstream.map((d) => d.key)).toEqual([
      "shop/region_exports",
      "shop/regional_sales",
      "shop/revenue_7d",
      "shop/weekly_revenue",
    ]);
  });

  it(
    "reads a weekly partition's days, the default mapping of a multi-partitioned reader, and a hand-written condition",
    async () => {
      const weekly = JSON.parse(
        (await runCli(["explain", "shop/weekly_revenue", "--partition", "2025-03-10", "--json"])).stdout,
      ) as Explanation;
      expect(weekly.dependencies[0]).toMatchObject({
        mapping: "timeWindow()",
        reads: { first: "2025-03-10", last: "2025-03-16", count: 7, missing: { count: 0 } },
      });
      const regional = JSON.parse(
        (await runCli(["explain", "shop/regional_sales", "--partition", "2025-03-10|eu", "--json"])).stdout,
      ) as Explanation;
      expect(regional.dependencies[0]).toMatchObject({
        mapping: "multiMapping(date ← date: identity())",
        defaultMapping: true,
        reads: { first: "2025-03-10", last: "2025-03-10", count: 1 },
      });
      const exports = JSON.parse((await runCli(["explain", "shop/region_exports", "--json"])).stdout) as Explanation;
      expect(exports.automation?.words).toBe(
        "materialise any of the latest 3 daily partitions when it is missing or `shop/raw_orders` changed since it last read it, " +
          "once `shop/raw_orders` is there, unless it is in progress or its latest try failed",
      );
    },
    cliBudget(3),
  );

  it("says how a source asset is observed", async () => {
    const r = await runCli(["explain", "partner/deliveries"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/kind\s+source asset \(observed, not materialised\)/);
    expect(r.stdout).toMatch(/observe\s+fileExists\(path: ".*deliveries-\{partition\}\.json"\), every 3s/);
    expect(r.stdout).toMatch(/read by\n {2}partner\/delivery_rate as deliveries, through identity\(\) \(the default\)/);
  });

  it("exits 1 on an unknown key, suggesting the nearest one", async () => {
    const r = await runCli(["explain", "shop/raw_order"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\[GRAPH_UNKNOWN_ASSET\] no asset has the key "shop\/raw_order" .*; did you mean "shop\/raw_orders"\?/);
    const json = await runCli(["explain", "shop/raw_order", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: "GRAPH_UNKNOWN_ASSET" } });
  });

  it("exits 1 on a partition the asset does not have", async () => {
    const r = await runCli(["explain", "shop/raw_orders", "--partition", "2024-12-31"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\[PARTITION_KEY_INVALID\] "2024-12-31" is not a partition of daily\(start 2025-01-01, UTC\)/);
  });
});

describe("tributary explain (definitions that fail to load)", () => {
  it("says that the key's file failed to load, with the load error", async () => {
    const r = await runCli(["--definitions", brokenDir, "explain", "t/bad"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/asset "t\/bad" is defined in bad\.ts, which failed to load: .*timezone.*Mars\/Olympus/);
    const thrown = await runCli(["--definitions", brokenDir, "explain", "t/later", "--json"]);
    expect(thrown.code).toBe(1);
    expect(JSON.parse(thrown.stdout)).toMatchObject({
      ok: false,
      error: {
        code: "LOAD_IMPORT_ERROR",
        message: expect.stringMatching(/throws\.ts, which failed to load: .*no connection to the warehouse/),
      },
    });
  });

  it("still explains the files that load, and names the broken ones when a key is unknown", async () => {
    const good = await runCli(["--definitions", brokenDir, "explain", "t/good"]);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toMatch(/^t\/good\n/);
    const typo = await runCli(["--definitions", brokenDir, "explain", "t/goood"]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/did you mean "t\/good"\? \(2 files failed to load: run `tributary check`\)/);
  });
});

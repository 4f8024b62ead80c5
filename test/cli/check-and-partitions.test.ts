import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { runCli, writeGoodAndBadDefinitions } from "./run-cli.js";

let brokenDir: string;

beforeAll(async () => {
  brokenDir = await mkdtemp(path.join(tmpdir(), "tributary-cli-defs-"));
  await writeGoodAndBadDefinitions(brokenDir);
});

afterAll(async () => {
  await rm(brokenDir, { recursive: true, force: true });
});

describe("tributary check", () => {
  it("validates the demo and reports every asset as JSON", async () => {
    const r = await runCli(["check", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      ok: boolean;
      assets: { key: string }[];
      files: { file: string; status: string; loadMs: number }[];
    };
    expect(out.ok).toBe(true);
    expect(out.assets.map((a) => a.key)).toEqual(
      expect.arrayContaining([
        "shop/raw_orders",
        "shop/clickstream",
        "shop/daily_clicks",
        "shop/weekly_revenue",
        "shop/regional_sales",
        "shop/customer_profiles",
      ]),
    );
    expect(out.files.every((f) => f.status === "ok" && f.loadMs >= 0)).toBe(true);
  });

  it("exits 1 naming the file, asset and field of a bad definition, and still loads the others", async () => {
    const r = await runCli(["check", "--json", "--definitions", brokenDir]);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as {
      ok: boolean;
      assets: { key: string }[];
      files: { file: string; status: string; error: { message: string } | null }[];
    };
    expect(out.ok).toBe(false);
    expect(out.assets.map((a) => a.key)).toEqual(["t/good"]);
    const bad = out.files.find((f) => f.file === "bad.ts");
    expect(bad?.status).toBe("error");
    expect(bad?.error?.message).toMatch(/bad\.ts/);
    expect(bad?.error?.message).toMatch(/timezone/);
    expect(bad?.error?.message).toMatch(/Mars\/Olympus/);
  });

  it("prints a readable table and summary without --json", async () => {
    const r = await runCli(["check", "--definitions", brokenDir, "--load-timeout", "20s"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/good\.ts\s+ok/);
    expect(r.stdout).toMatch(/bad\.ts\s+error/);
    expect(r.stdout).toMatch(/1 assets from 2 files/);
  });

  it("rejects a malformed --load-timeout", async () => {
    const r = await runCli(["check", "--load-timeout", "soon"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--load-timeout: "soon" is not a duration/);
  });
});

describePostgres("tributary partitions (in-process, on its own database)", () => {
  const at = useCommandStore("tributary-cli-");
  // No server listens on port 9: the command works in-process on this describe's database.
  const partitions = (...args: string[]) =>
    runCli(["partitions", ...args, "--data-dir", at.dataDir, "--url", "http://127.0.0.1:9"], { env: at.env });

  it("lists keys with their windows as UTC instants", async () => {
    const r = await partitions("shop/raw_orders", "--from", "2025-03-01", "--to", "2025-03-03", "--json");
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { totalCount: number; partitions: { key: string; start: string; end: string }[] };
    expect(out.totalCount).toBe(3);
    expect(out.partitions).toEqual([
      { key: "2025-03-01", start: "2025-03-01T00:00:00.000Z", end: "2025-03-02T00:00:00.000Z", status: "missing", staleReasons: [] },
      { key: "2025-03-02", start: "2025-03-02T00:00:00.000Z", end: "2025-03-03T00:00:00.000Z", status: "missing", staleReasons: [] },
      { key: "2025-03-03", start: "2025-03-03T00:00:00.000Z", end: "2025-03-04T00:00:00.000Z", status: "missing", staleReasons: [] },
    ]);
  });

  it("follows the wall clock: the Berlin spring-forward day has 23 hourly keys", async () => {
    const r = await partitions("shop/clickstream", "--from", "2025-03-30-00:00", "--to", "2025-03-30-23:00", "--json");
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { partitions: { key: string }[] };
    expect(out.partitions).toHaveLength(23);
    expect(out.partitions.map((p) => p.key)).not.toContain("2025-03-30-02:00");
  });

  it("names the asset and the bad key for a key outside the definition", async () => {
    const r = await partitions("shop/raw_orders", "--from", "2025-13-01");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/PARTITION_KEY_INVALID/);
    expect(r.stderr).toMatch(/shop\/raw_orders/);
    expect(r.stderr).toMatch(/"2025-13-01"/);
  });

  it("suggests the nearest key for an unknown asset", async () => {
    const r = await partitions("shop/raw_order", "--json");
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; message: string } };
    expect(out.error.code).toBe("GRAPH_UNKNOWN_ASSET");
    expect(out.error.message).toMatch(/did you mean "shop\/raw_orders"/);
  });
});

describe("help", () => {
  it.each(["dev", "check", "partitions", "migrate"])("%s --help", async (command) => {
    const r = await runCli([command, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`Usage: tributary ${command}`));
  });
});

describe("examples", () => {
  it.each(["hello-world", "dst-hourly", "rollups", "multi-dimensional", "tested-sensors"])(
    "examples/%s loads without problems",
    async (name) => {
      const r = await runCli(["check", "--json", "--definitions", `examples/${name}`]);
      expect(r.code, r.stdout).toBe(0);
      const out = JSON.parse(r.stdout) as { ok: boolean; assets: unknown[]; files: { warnings: string[] }[] };
      expect(out.assets.length).toBeGreaterThan(0);
      expect(out.files.flatMap((f) => f.warnings)).toEqual([]);
    },
  );
});

import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, type CommandStore, useCommandStore } from "../support/pg.js";
import { ROOT, runCli } from "./run-cli.js";

// No server listens on port 9: every command works in-process on its own database.
const NO_SERVER = ["--url", "http://127.0.0.1:9"];

describePostgres("tributary report (in-process, demo definitions)", () => {
  // A database of its own (Postgres; what report does is the same on the embedded one) and a data directory.
  const at = useCommandStore("tributary-report-");

  const report = (...args: string[]) => runCli(["report", ...args, "--data-dir", at.dataDir, ...NO_SERVER], { env: at.env });

  it("records an external event and prints its id", async () => {
    const r = await report("shop/raw_orders", "--partition", "2025-03-10", "--metadata", '{"rows":3}');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^event \d+ recorded: shop\/raw_orders partition 2025-03-10 \(external\)$/m);
    const j = await report("shop/raw_orders", "--partition", "2025-03-09", "--json");
    expect(j.code, j.stderr).toBe(0);
    const out = JSON.parse(j.stdout) as { ok: boolean; event: { eventId: string; partitionKey: string } };
    expect(out).toMatchObject({ ok: true, event: { partitionKey: "2025-03-09" } });
    expect(Number(out.event.eventId)).toBeGreaterThan(0);
  });

  it.each([
    [
      ["shop/raw_order", "--partition", "2025-03-10"],
      /GRAPH_UNKNOWN_ASSET.*no asset has the key "shop\/raw_order"; did you mean "shop\/raw_orders"\?/,
    ],
    [
      ["shop/raw_orders", "--partition", "2025-3-10"],
      /EVENT_PARTITION_INVALID.*"shop\/raw_orders".*"2025-3-10" is not a partition of daily/,
    ],
    [["shop/raw_orders", "--partition", "2099-01-01"], /EVENT_PARTITION_NOT_EXISTING.*partition "2099-01-01" does not exist yet/],
    [["shop/raw_orders"], /EVENT_PARTITION_REQUIRED/],
    [["shop/raw_orders", "--partition", "2025-03-10", "--metadata", "{rows:3}"], /EVENT_METADATA_INVALID.*--metadata: not valid JSON/],
  ])("rejects %j with exit code 1 and the reason", async (args, reason) => {
    const r = await report(...args);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stderr).toMatch(reason);
    expect(r.stdout).toBe("");
  });
});

describePostgres("materialising on top of reported upstream partitions", () => {
  let defs: string;
  let at: CommandStore;

  beforeAll(async () => {
    // The demo definitions: revenue_7d takes upstream days without a stored value (an external producer wrote
    // them: they reach the asset as null).
    defs = await mkdtemp(path.join(tmpdir(), "tributary-report-defs-"));
    at = await commandStore("tributary-report-data-");
    await cp(path.join(ROOT, "asset-definitions"), defs, { recursive: true });
  });
  afterAll(async () => {
    await rm(defs, { recursive: true, force: true });
    await at?.remove();
  });

  it("runs shop/revenue_7d without --include-upstream once the seven raw_orders days were reported", async () => {
    const common = ["--definitions", defs, "--data-dir", at.dataDir, ...NO_SERVER];
    const before = await runCli(["materialize", "shop/revenue_7d", "--partition", "2025-03-10", ...common], { env: at.env });
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(/PLAN_MISSING_UPSTREAM/);
    for (const day of ["04", "05", "06", "07", "08", "09", "10"]) {
      const r = await runCli(["report", "shop/raw_orders", "--partition", `2025-03-${day}`, ...common], { env: at.env });
      expect(r.code, r.stderr).toBe(0);
    }
    const r = await runCli(["materialize", "shop/revenue_7d", "--partition", "2025-03-10", "--json", ...common], { env: at.env });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; run: { status: string; stepsTotal: number } };
    expect(out).toMatchObject({ ok: true, run: { status: "success", stepsTotal: 1 } });
    // Nine CLI processes, each connecting to the database and loading the demo.
  }, 180_000);
});

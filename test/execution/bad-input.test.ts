import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-12-31" });
export const orders = asset({ key: "sales/orders", partitions: days }, async () => 1);
export const ticks = asset({ key: "live/ticks", partitions: daily({ start: "2025-01-01" }) }, async () => 0);
export const revenue = asset({ key: "sales/revenue", partitions: days, deps: { orders } }, async () => 2);
`;

describePostgres("execution: bad launch input writes nothing", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create({ files: { "sales.ts": DEFS } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  async function expectNothingWritten(): Promise<void> {
    const { rows } = await sql<{ runs: number; steps: number; events: number }>`
      select (select count(*)::int from runs) as runs, (select count(*)::int from steps) as steps,
             (select count(*)::int from events) as events`.execute(h.db);
    expect(rows[0]).toEqual({ runs: 0, steps: 0, events: 0 });
  }

  it("rejects a partition key outside the definition", async () => {
    await expect(h.launch(["sales/orders"], { partition: "2024-12-31" })).rejects.toMatchObject({
      code: "PARTITION_KEY_INVALID",
      message: expect.stringContaining(`"2024-12-31" is not a partition of daily(start 2025-01-01`),
    });
    await expect(h.launch(["sales/orders"], { partition: "2026-01-01" })).rejects.toMatchObject({
      code: "PARTITION_KEY_INVALID",
      message: expect.stringContaining("after the last partition"),
    });
    await expect(h.launch(["sales/orders"], { partition: "yesterday" })).rejects.toMatchObject({
      code: "PARTITION_KEY_INVALID",
      message: expect.stringContaining("expected yyyy-MM-dd"),
    });
    // A window that has not closed yet does not exist yet.
    await expect(h.launch(["live/ticks"], { partition: "2099-01-01" })).rejects.toMatchObject({
      message: expect.stringContaining("2099-01-01"),
    });
    await expectNothingWritten();
  });

  it("rejects a reversed range", async () => {
    await expect(h.launch(["sales/orders"], { from: "2025-03-10", to: "2025-03-01" })).rejects.toMatchObject({
      code: "PARTITION_RANGE_INVALID",
      message: expect.stringContaining(`"2025-03-10" comes after "2025-03-01"; swap --from and --to`),
    });
    await expectNothingWritten();
  });

  it("rejects an unknown asset with the nearest key", async () => {
    await expect(h.launch(["sales/ordrs"], { partition: "2025-03-01" })).rejects.toMatchObject({
      code: "GRAPH_UNKNOWN_ASSET",
      message: expect.stringMatching(/no asset has the key "sales\/ordrs".*sales\/orders/),
    });
    await expectNothingWritten();
  });

  it("rejects missing upstream partitions unless includeUpstream", async () => {
    await expect(h.launch(["sales/revenue"], { from: "2025-03-01", to: "2025-03-03" })).rejects.toMatchObject({
      code: "PLAN_MISSING_UPSTREAM",
      message: expect.stringMatching(/"sales\/orders".*3 partition\(s\).*--include-upstream/s),
    });
    await expectNothingWritten();
    const run = await h.waitForRun(await h.launch(["sales/revenue"], { from: "2025-03-01", to: "2025-03-03" }, { includeUpstream: true }));
    expect(run.status).toBe("success");
    expect(run.steps).toHaveLength(6);
  });
});

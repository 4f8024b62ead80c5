// A realistic graph for lineage tests, five levels deep with fan-in, fan-out,
// an unpartitioned lookup, a 3-day time-window mapping, PII marked on three
// assets and an output too large for the database:
//
//   raw/customers (pii) ─► clean/customers (pii) ─┐
//   ref/countries ────────┘                        ├─► mart/enriched (pii) ─┬─► mart/rolling3d (3 days) ─┐
//   raw/orders ──────────► clean/orders ───────────┘                        └─► mart/daily_report ────────┴─► reports/summary (large)
import { Harness } from "../execution/harness.js";

export const LINEAGE_DEFS = `
import { asset, daily, dep, timeWindow } from "tributary";
const days = daily({ start: "2025-01-01" });

export const customers = asset({ key: "raw/customers", partitions: days, metadata: { pii: ["email", "name"] } },
  async (ctx) => ({ day: ctx.partition.key, emails: ["a@example.com"] }));
export const countries = asset({ key: "ref/countries" }, async () => ({ codes: ["FR", "DE"] }));
export const orders = asset({ key: "raw/orders", partitions: days }, async (ctx) => ({ day: ctx.partition.key, n: 3 }));

export const cleanCustomers = asset(
  { key: "clean/customers", partitions: days, metadata: { pii: ["email"] }, deps: { customers, countries } },
  async (ctx, { customers, countries }) => ({ day: customers.day, countries: countries.codes.length }));
export const cleanOrders = asset({ key: "clean/orders", partitions: days, deps: { orders } }, async (ctx, { orders }) => orders);

export const enriched = asset(
  { key: "mart/enriched", partitions: days, metadata: { pii: true }, deps: { c: cleanCustomers, o: cleanOrders } },
  async (ctx, { c, o }) => ({ day: c.day, n: o.n }));

export const rolling = asset(
  { key: "mart/rolling3d", partitions: days, deps: { e: dep(enriched, timeWindow({ startOffset: -2 })) } },
  async (ctx, { e }) => ({ days: e.map((x) => x.day) }));
export const report = asset({ key: "mart/daily_report", partitions: days, deps: { e: enriched } }, async (ctx, { e }) => ({ n: e.n }));

export const summary = asset({ key: "reports/summary", partitions: days, deps: { rolling, report } },
  async (ctx, { rolling, report }) => ({ days: rolling.days, n: report.n, blob: "x".repeat(60 * 1024) }));
`;

export const EARLY = [
  "raw/customers",
  "ref/countries",
  "raw/orders",
  "clean/customers",
  "clean/orders",
  "mart/enriched",
  "mart/daily_report",
];

/**
 * A harness with the graph materialised by real runs: every asset but the
 * rolling window and the summary for 2025-01-01..06, then those two for
 * 2025-01-03..06 (so every window they read exists).
 */
export async function materialisedLineageGraph(): Promise<Harness> {
  const h = await Harness.create({ files: { "lineage.ts": LINEAGE_DEFS } });
  try {
    const first = await h.waitForRun(await h.launch(EARLY, { from: "2025-01-01", to: "2025-01-06" }), 60_000);
    if (first.status !== "success") throw new Error(`the first run ended ${first.status}: ${await h.describe([first.id])}`);
    const second = await h.waitForRun(
      await h.launch(["mart/rolling3d", "reports/summary"], { from: "2025-01-03", to: "2025-01-06" }),
      60_000,
    );
    if (second.status !== "success") throw new Error(`the second run ended ${second.status}: ${await h.describe([second.id])}`);
    return h;
  } catch (err) {
    await h.stop();
    throw err;
  }
}

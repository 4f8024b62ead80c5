import { asset, daily, dep, eager, multiPartitions, staticPartitions } from "tributary";
import { rawOrders } from "./orders.js";
import { REGIONS, ordersBetween, writePartitionFile } from "./_synthetic.js";

const regions = staticPartitions([...REGIONS]);

/** Sales targets per region, maintained by hand in the real world. */
export const regionTargets = asset({ key: "shop/region_targets", partitions: regions, owner: "team:sales" }, async (ctx) => ({
  region: ctx.partition.key,
  dailyTargetCents: 150_000,
}));

/** Daily sales per region: a two-dimensional `date|region` partitioning. */
export const regionalSales = asset(
  {
    key: "shop/regional_sales",
    partitions: multiPartitions({ date: daily({ start: "2025-01-01" }), region: regions }),
    automation: eager(),
    owner: "team:sales",
    deps: { orders: dep(rawOrders) },
  },
  async (ctx, { orders }) => {
    const { date, region } = ctx.partition.dimensions!;
    const { start, end } = ctx.partition.window!;
    const mine = ordersBetween(start, end).filter((o) => o.region === region);
    // The day's total: null when the day was reported by an outside producer (no stored value).
    const value = {
      date,
      region,
      orders: mine.length,
      revenueCents: mine.reduce((n, o) => n + o.amountCents, 0),
      ofDay: orders?.rows ?? null,
    };
    await writePartitionFile("regional_sales", ctx.partition.key, value);
    return value;
  },
);

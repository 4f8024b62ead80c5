import { allOf, anyOf, asset, check, daily, dep, eager, inLatestWindow, isMissing, onCron, timeWindow, weekly } from "tributary";
import { ordersOn } from "./_source.js";

/**
 * One partition per day. The function is told its day (`ctx.partition.key`) and returns that day's summary, which
 * Tributary stores and hands to the assets that read it.
 *
 * Automation: every night at 01:00 UTC for the day that just closed, and any of the last 7 days that is missing
 * (so `npm start` fills the last week at once).
 */
export const dailyOrders = asset(
  {
    key: "shop/daily_orders",
    partitions: daily({ start: "2026-01-01", timezone: "UTC" }),
    automation: anyOf(onCron("0 1 * * *"), allOf(isMissing(), inLatestWindow(7))),
    description: "The orders of one day, summarised",
  },
  async (ctx) => {
    const orders = ordersOn(ctx.partition.key);
    ctx.log.info("read the day's orders", { rows: orders.length });
    return { day: ctx.partition.key, orders: orders.length, revenueCents: orders.reduce((n, o) => n + o.amountCents, 0) };
  },
);

/** A blocking check: a day without orders fails it, and the weeks that read that day wait instead of running. */
export const dailyOrdersNotEmpty = check(
  dailyOrders,
  { name: "not_empty", blocking: true, description: "The day has at least one order" },
  (_ctx, day) => ({ passed: day !== null && day.orders > 0, metadata: { orders: day?.orders ?? 0 } }),
);

/**
 * One partition per week (weeks start on Monday), reading the seven days of its week. `eager()` materialises a
 * week again whenever one of its days changes.
 */
export const weeklyRevenue = asset(
  {
    key: "shop/weekly_revenue",
    partitions: weekly({ start: "2026-01-05", timezone: "UTC" }),
    automation: eager(),
    deps: { days: dep(dailyOrders, timeWindow()) },
    description: "Revenue per week, from the daily summaries",
  },
  async (_ctx, { days }) => ({
    days: days.length,
    orders: days.reduce((n, d) => n + (d?.orders ?? 0), 0),
    revenueCents: days.reduce((n, d) => n + (d?.revenueCents ?? 0), 0),
  }),
);

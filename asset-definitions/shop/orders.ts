import {
  allOf,
  anyOf,
  asset,
  check,
  daily,
  dep,
  eager,
  hasFailed,
  inLatestWindow,
  isInProgress,
  isMissing,
  not,
  onCron,
  timeWindow,
  weekly,
} from "tributary";
import { ordersBetween, writePartitionFile } from "./_synthetic.js";

const days = daily({ start: "2025-01-01", timezone: "UTC" });

/**
 * Raw orders, one file per day; the function writes exactly its window.
 * Automation: every night at 01:00 for the day that just closed, and any of
 * the last 14 days that is missing (not while running, not after a failure).
 */
export const rawOrders = asset(
  {
    key: "shop/raw_orders",
    partitions: days,
    automation: anyOf(onCron("0 1 * * *"), allOf(isMissing(), inLatestWindow(14), not(isInProgress()), not(hasFailed()))),
    owner: "team:shop",
    description: "Orders placed during the day, as exported by the (synthetic) shop database",
    metadata: { pii: ["customer"] },
    retries: { max: 3, delay: "30s", backoff: "exponential" },
    timeout: "10m",
    pool: "warehouse",
  },
  async (ctx) => {
    const { start, end } = ctx.partition.window!;
    const orders = ordersBetween(start, end);
    const file = await writePartitionFile("raw_orders", ctx.partition.key, orders);
    ctx.log.info("wrote orders", { rows: orders.length, file });
    return { rows: orders.length, revenueCents: orders.reduce((n, o) => n + o.amountCents, 0), file };
  },
);

/**
 * A blocking check: a day without orders keeps its readers from running (they end upstream_failed, naming the
 * check) while the other days go on. A day reported from outside has no stored value to judge.
 */
export const rawOrdersNotEmpty = check(
  rawOrders,
  { name: "not_empty", blocking: true, description: "The day has at least one order" },
  (_ctx, value) =>
    value === null ? { passed: true, metadata: { reported: true } } : { passed: value.rows > 0, metadata: { rows: value.rows } },
);

/** Revenue over the trailing seven days, recomputed whenever a day it reads changes. */
export const revenue7d = asset(
  {
    key: "shop/revenue_7d",
    partitions: days,
    automation: eager(),
    owner: "team:finance",
    deps: { orders: dep(rawOrders, timeWindow({ startOffset: -6 })) },
  },
  // A day reported by an outside producer (`tributary report`) has no stored value: it arrives as null.
  async (_ctx, { orders }) => ({
    days: orders.length,
    reportedDays: orders.filter((o) => o === null).length,
    revenueCents: orders.reduce((n, o) => n + (o?.revenueCents ?? 0), 0),
  }),
);

/** Weekly rollup: a weekly partition reads the seven dailies of its week. */
export const weeklyRevenue = asset(
  {
    key: "shop/weekly_revenue",
    partitions: weekly({ start: "2025-01-06", timezone: "UTC" }),
    automation: eager(),
    owner: "team:finance",
    deps: { orders: dep(rawOrders, timeWindow()) },
  },
  async (ctx, { orders }) => {
    // A reported day (null) adds no revenue here: Tributary holds no value of it.
    const value = {
      days: orders.length,
      reportedDays: orders.filter((o) => o === null).length,
      revenueCents: orders.reduce((n, o) => n + (o?.revenueCents ?? 0), 0),
    };
    await writePartitionFile("weekly_revenue", ctx.partition.key, value);
    return value;
  },
);

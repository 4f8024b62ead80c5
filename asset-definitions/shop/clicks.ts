import { asset, daily, dep, eager, hourly, timeWindow } from "tributary";
import { rng, writePartitionFile } from "./_synthetic.js";

/** An hourly click feed in the shop's local time (DST days have 23 or 25 hours). */
export const clickstream = asset(
  {
    key: "shop/clickstream",
    partitions: hourly({ start: "2025-01-01", timezone: "Europe/Berlin" }),
    owner: "team:web",
    priority: 10,
  },
  async (ctx) => {
    const random = rng(ctx.partition.key);
    return { clicks: Math.floor(random() * 5_000), sessions: Math.floor(random() * 800) };
  },
);

/** The hourly feed rolled up to local days. */
export const dailyClicks = asset(
  {
    key: "shop/daily_clicks",
    partitions: daily({ start: "2025-01-01", timezone: "Europe/Berlin" }),
    automation: eager(),
    owner: "team:web",
    deps: { hours: dep(clickstream, timeWindow()) },
  },
  async (ctx, { hours }) => {
    const value = {
      hours: hours.length,
      clicks: hours.reduce((n, h) => n + h.clicks, 0),
      sessions: hours.reduce((n, h) => n + h.sessions, 0),
    };
    await writePartitionFile("daily_clicks", ctx.partition.key, value);
    return value;
  },
);

import {
  allOf,
  anyOf,
  asset,
  daily,
  dep,
  eager,
  hasFailed,
  hourly,
  inLatestWindow,
  isInProgress,
  isMissing,
  not,
  onCron,
  timeWindow,
} from "tributary";
import { rng, writePartitionFile } from "./_synthetic.js";

/**
 * An hourly click feed in the shop's local time (DST days have 23 or 25 hours).
 * Automation: five past every hour for the hour that just closed, and any of
 * the last 48 hours that is missing.
 */
export const clickstream = asset(
  {
    key: "shop/clickstream",
    partitions: hourly({ start: "2025-01-01", timezone: "Europe/Berlin" }),
    automation: anyOf(
      onCron("5 * * * *", { timezone: "Europe/Berlin" }),
      allOf(isMissing(), inLatestWindow(48), not(isInProgress()), not(hasFailed())),
    ),
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
    // An hour reported by an outside producer arrives as null: it is counted, without clicks.
    const value = {
      hours: hours.length,
      clicks: hours.reduce((n, h) => n + (h?.clicks ?? 0), 0),
      sessions: hours.reduce((n, h) => n + (h?.sessions ?? 0), 0),
    };
    await writePartitionFile("daily_clicks", ctx.partition.key, value);
    return value;
  },
);

import { asset, daily, dep, eager, hourly, monthly, timeWindow, weekly } from "tributary";

const start = "2025-01-01";
// A partition reported by an outside producer (`tributary report`) has no stored value: readers get null for it.

export const pageViews = asset({ key: "web/page_views", partitions: hourly({ start }) }, async (ctx) => ({
  views: ctx.partition.key.length * 10,
}));

export const dailyViews = asset(
  { key: "web/daily_views", partitions: daily({ start }), automation: eager(), deps: { hours: dep(pageViews, timeWindow()) } },
  async (_ctx, { hours }) => hours.reduce((n, h) => n + (h?.views ?? 0), 0),
);

/** Trailing seven days, recomputed when any of them changes. */
export const views7d = asset(
  {
    key: "web/views_7d",
    partitions: daily({ start }),
    automation: eager(),
    deps: { days: dep(dailyViews, timeWindow({ startOffset: -6 })) },
  },
  async (_ctx, { days }) => days.reduce((n: number, d) => n + (d ?? 0), 0),
);

export const weeklyViews = asset(
  { key: "web/weekly_views", partitions: weekly({ start: "2025-01-06" }), deps: { days: dep(dailyViews, timeWindow()) } },
  async (_ctx, { days }) => days.reduce((n: number, d) => n + (d ?? 0), 0),
);

export const monthlyViews = asset(
  { key: "web/monthly_views", partitions: monthly({ start }), deps: { days: dep(dailyViews, timeWindow()) } },
  async (_ctx, { days }) => days.reduce((n: number, d) => n + (d ?? 0), 0),
);

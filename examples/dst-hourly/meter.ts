import { asset, daily, dep, hourly, timeWindow } from "tributary";

const zone = "America/New_York";

/**
 * Hourly meter readings on the local wall clock. On 2025-03-09 the 02:00 hour
 * does not exist; on 2025-11-02 01:00 happens twice: `2025-11-02-01:00` and
 * `2025-11-02-01:00-05:00`. Try:
 *   npx tributary partitions energy/meter --definitions examples/dst-hourly \
 *     --from 2025-11-02-00:00 --to 2025-11-02-03:00
 */
export const meter = asset({ key: "energy/meter", partitions: hourly({ start: "2025-01-01", timezone: zone }) }, async (ctx) => ({
  kwh: 1,
  hour: ctx.partition.key,
}));

/** A local day reads its 23, 24 or 25 hours (an hour reported by an outside producer has no value: null). */
export const dailyUsage = asset(
  {
    key: "energy/daily_usage",
    partitions: daily({ start: "2025-01-01", timezone: zone }),
    deps: { hours: dep(meter, timeWindow()) },
  },
  async (_ctx, { hours }) => ({ hours: hours.length, kwh: hours.reduce((n, h) => n + (h?.kwh ?? 0), 0) }),
);

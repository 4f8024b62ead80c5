import { asset, check, daily, dep, hourly, timeWindow } from "tributary";

const zone = "Europe/Berlin";

export interface Reading {
  celsius: number;
}

/**
 * One reading per local hour, fetched from the sensor API. The URL and the token are secrets (environment
 * variables on a worker; the test gives them, and its own HTTP server). On 2025-03-30 the 02:00 hour does not
 * exist; on 2025-10-26 the 02:00 hour happens twice.
 */
export const readings = asset(
  {
    key: "sensors/readings",
    partitions: hourly({ start: "2025-01-01", timezone: zone }),
    retries: { max: 3, delay: "1m" },
    timeout: "2m",
  },
  async (ctx): Promise<Reading> => {
    const url = new URL(
      `/readings/${encodeURIComponent(ctx.partition.window!.start.toISOString())}`,
      await ctx.secrets.get("SENSOR_API_URL"),
    );
    const token = await ctx.secrets.get("SENSOR_API_TOKEN");
    ctx.log.info("fetching", { url: url.href });
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: ctx.signal });
    if (!response.ok) throw new Error(`sensor API answered ${response.status} for ${url.href}`);
    const body = (await response.json()) as { celsius?: unknown };
    if (typeof body.celsius !== "number") throw new Error(`sensor API gave no celsius for ${url.href}`);
    return { celsius: body.celsius };
  },
);

/** A local day's statistics over its 23, 24 or 25 hours; an hour reported without a value (null) is missing. */
export const dailyStats = asset(
  {
    key: "sensors/daily_stats",
    partitions: daily({ start: "2025-01-01", timezone: zone }),
    deps: { hours: dep(readings, timeWindow()) },
  },
  async (ctx, { hours }) => {
    const { start, end } = ctx.partition.window!;
    const values = hours.flatMap((h) => (h === null ? [] : [h.celsius]));
    return {
      expectedHours: Math.round((end.getTime() - start.getTime()) / 3_600_000),
      hours: values.length,
      maxCelsius: values.length === 0 ? null : Math.max(...values),
      meanCelsius: values.length === 0 ? null : Math.round((values.reduce((n, v) => n + v, 0) / values.length) * 10) / 10,
    };
  },
);

/** Blocking: a day with a missing hour keeps its alerts from being computed on partial data. */
export const dailyStatsComplete = check(
  dailyStats,
  { name: "complete", blocking: true, description: "Every hour of the local day has a reading" },
  (_ctx, day) => ({
    passed: day !== null && day.hours === day.expectedHours,
    metadata: { hours: day?.hours ?? 0, expectedHours: day?.expectedHours ?? 0 },
  }),
);

/** The days that were too hot. */
export const heatAlerts = asset(
  {
    key: "sensors/heat_alerts",
    partitions: daily({ start: "2025-01-01", timezone: zone }),
    deps: { stats: dailyStats },
  },
  async (ctx, { stats }) =>
    stats?.maxCelsius != null && stats.maxCelsius >= 30 ? [{ day: ctx.partition.key, maxCelsius: stats.maxCelsius }] : [],
);

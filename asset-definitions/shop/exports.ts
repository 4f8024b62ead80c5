import { readFile } from "node:fs/promises";
import {
  allOf,
  anyOf,
  asset,
  daily,
  hasFailed,
  inLatestWindow,
  isInProgress,
  isMissing,
  not,
  upstreamsReady,
  upstreamUpdated,
} from "tributary";
import { rawOrders } from "./orders.js";
import { REGIONS, ordersBetween, writePartitionFile, type Order } from "./_synthetic.js";

/**
 * Fans out at run time: each day's orders are exported as one file per region that had orders that day, each
 * region its own mapped step (its own tries and log); readers would get the files as one array, in region order.
 * Automation: the latest three days, once their orders are there, and again when the orders change.
 */
export const regionExports = asset(
  {
    key: "shop/region_exports",
    partitions: daily({ start: "2025-01-01", timezone: "UTC" }),
    automation: allOf(anyOf(isMissing(), upstreamUpdated()), upstreamsReady(), inLatestWindow(3), not(isInProgress()), not(hasFailed())),
    owner: "team:shop",
    description: "The day's orders as one file per region, one mapped step per region",
    metadata: { pii: ["customer"] },
    deps: { orders: rawOrders },
    // Known only once the day's orders are written: the regions in the file. A day reported by an outside
    // producer has no stored value (null), so no file to look at (nor has a day whose file was since deleted):
    // every region is exported.
    map: async ({ orders }) => {
      const rows = orders === null ? null : await readOrders(orders.file);
      return rows === null ? [...REGIONS] : REGIONS.filter((region) => rows.some((o) => o.region === region));
    },
    mapLabel: (region) => region,
    retries: 2,
  },
  async (ctx) => {
    const region = ctx.map.item;
    const { start, end } = ctx.partition.window!;
    const mine = ordersBetween(start, end).filter((o) => o.region === region);
    const file = await writePartitionFile(`region_exports/${ctx.partition.key}`, region, mine);
    return { region, orders: mine.length, file };
  },
);

async function readOrders(file: string): Promise<Order[] | null> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as Order[];
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

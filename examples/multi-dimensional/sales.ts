import { asset, daily, dep, identity, multiMapping, multiPartitions, staticPartitions } from "tributary";

const date = daily({ start: "2025-01-01" });
const region = staticPartitions(["eu", "us", "apac"]);
const channel = staticPartitions(["web", "store", "partner"]);

export const orders = asset({ key: "sales/orders", partitions: date }, async (ctx) => ({ day: ctx.partition.key }));

/** Three dimensions: keys read `2025-03-15|eu|web`. Each reads its day of orders. */
export const channelSales = asset(
  {
    key: "sales/channel_sales",
    partitions: multiPartitions({ date, region, channel }),
    deps: { orders: dep(orders) },
  },
  async (ctx) => ({ ...ctx.partition.dimensions }),
);

/** Two of the three dimensions, reading every channel of its (date, region). */
export const regionSales = asset(
  {
    key: "sales/region_sales",
    partitions: multiPartitions({ date, region }),
    deps: {
      channels: dep(
        channelSales,
        multiMapping({
          date: { upstreamDimension: "date", mapping: identity() },
          region: { upstreamDimension: "region", mapping: identity() },
        }),
      ),
    },
  },
  async (_ctx, { channels }) => ({ channels: channels.length }),
);

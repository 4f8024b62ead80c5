import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  allOf,
  asset,
  daily,
  eager,
  fileExists,
  hasFailed,
  inLatestWindow,
  isInProgress,
  isMissing,
  not,
  sourceAsset,
  type JsonValue,
} from "tributary";
import { demoDataDir, ordersBetween, rng } from "../shop/_synthetic.js";

const days = daily({ start: "2025-01-01", timezone: "UTC" });

/** Where the partner drops its files (absolute: the triggerer checks the path as it is). */
const landingDir = path.join(demoDataDir(), "landing");
const landingFile = (day: string): string => path.join(landingDir, `deliveries-${day}.json`);

/**
 * A partner's daily delivery file: produced outside Tributary, so it is
 * observed, not materialised. The triggerer checks every few seconds whether
 * the day's file has landed; when it has, the partition counts as
 * materialised and eager readers run.
 */
export const deliveries = sourceAsset({
  key: "partner/deliveries",
  partitions: days,
  observe: fileExists(landingFile("{partition}")),
  pollInterval: "3s",
  owner: "team:partners",
  description:
    "Delivery confirmations the (simulated) partner drops into demo-data/landing in the data directory, a while after each day ends",
});

/**
 * Stands in for the partner, so the demo needs no outside system: for the
 * latest three days it writes the delivery file, late (after a pause), the
 * way a partner's export would arrive. Write then rename: the file appears
 * whole.
 */
export const partnerExport = asset(
  {
    key: "partner/simulated_export",
    partitions: days,
    automation: allOf(isMissing(), inLatestWindow(3), not(isInProgress()), not(hasFailed())),
    owner: "team:partners",
    description: "Simulates the partner: writes the delivery file of a day, late",
  },
  async (ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 2_000 + Math.floor(rng(ctx.partition.key)() * 3_000)));
    const { start, end } = ctx.partition.window!;
    const delivered = ordersBetween(start, end)
      .filter((_, i) => i % 3 !== 0)
      .map((o) => o.id);
    await mkdir(landingDir, { recursive: true });
    const file = landingFile(ctx.partition.key);
    await writeFile(`${file}.tmp`, JSON.stringify({ day: ctx.partition.key, delivered }));
    await rename(`${file}.tmp`, file);
    return { file, delivered: delivered.length };
  },
);

/** Delivery rate of each day's orders, as soon as the partner's file for the day is observed. */
export const deliveryRate = asset(
  {
    key: "partner/delivery_rate",
    partitions: days,
    automation: eager(),
    owner: "team:partners",
    deps: { deliveries },
  },
  async (ctx, { deliveries }) => {
    // A source passes its latest observation: when it was seen and what the check found ({ path, size, mtime }).
    // An observation reported by hand (`tributary report --observation`) has no payload, and a day reported as
    // written (`tributary report` alone) no observation at all (null): the file is then looked for where the
    // partner drops it, and may not be there.
    const found = deliveries?.payload;
    const file = isFound(found) ? found.path : landingFile(ctx.partition.key);
    const delivered = await readDelivered(file);
    if (delivered === null) ctx.log.warn("no delivery file for the day: its rate is unknown", { file });
    const { start, end } = ctx.partition.window!;
    const orders = ordersBetween(start, end).length;
    return {
      day: ctx.partition.key,
      orders,
      delivered: delivered?.length ?? null,
      rate: delivered === null ? null : delivered.length / orders,
      observedAt: deliveries?.observedAt ?? null,
    };
  },
);

function isFound(payload: JsonValue | undefined): payload is { path: string } {
  return typeof payload === "object" && payload !== null && !Array.isArray(payload) && typeof payload["path"] === "string";
}

/** The order ids a delivery file confirms; null when there is no such file. */
async function readDelivered(file: string): Promise<string[] | null> {
  try {
    return (JSON.parse(await readFile(file, "utf8")) as { delivered: string[] }).delivered;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

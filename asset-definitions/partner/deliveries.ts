import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { allOf, asset, daily, eager, fileExists, hasFailed, inLatestWindow, isInProgress, isMissing, not, sourceAsset } from "tributary";
import { demoDataDir, ordersBetween, rng } from "../shop/_synthetic.js";

const days = daily({ start: "2025-01-01", timezone: "UTC" });

/** Where the partner drops its files (absolute: the triggerer checks the path as it is). */
const landingDir = path.join(demoDataDir(), "landing");

/**
 * A partner's daily delivery file: produced outside Tributary, so it is
 * observed, not materialised. The triggerer checks every few seconds whether
 * the day's file has landed; when it has, the partition counts as
 * materialised and eager readers run.
 */
export const deliveries = sourceAsset({
  key: "partner/deliveries",
  partitions: days,
  observe: fileExists(path.join(landingDir, "deliveries-{partition}.json")),
  pollInterval: "3s",
  owner: "team:partners",
  description: "Delivery confirmations the (simulated) partner drops into .tributary/demo-data/landing, a while after each day ends",
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
    const delivered = ordersBetween(start, end).filter((_, i) => i % 3 !== 0).map((o) => o.id);
    await mkdir(landingDir, { recursive: true });
    const file = path.join(landingDir, `deliveries-${ctx.partition.key}.json`);
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
    const { path: file } = deliveries.payload as { path: string };
    const { delivered } = JSON.parse(await readFile(file, "utf8")) as { delivered: string[] };
    const { start, end } = ctx.partition.window!;
    const orders = ordersBetween(start, end).length;
    return { day: ctx.partition.key, orders, delivered: delivered.length, rate: delivered.length / orders, observedAt: deliveries.observedAt };
  },
);

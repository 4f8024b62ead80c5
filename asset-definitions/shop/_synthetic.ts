// Deterministic synthetic shop data, so the demo needs no external system.
// Every value derives from a seed string (a partition key), so re-running a
// partition overwrites it with the same rows: asset functions stay idempotent.
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";

export const REGIONS = ["eu", "us", "apac"] as const;

/**
 * Where the demo writes its files: `demo-data` inside the data directory Tributary runs with (`--data-dir`, which
 * it passes to definitions and steps as TRIBUTARY_DATA_DIR), unless TRIBUTARY_DEMO_DATA names another place.
 */
export const demoDataDir = (): string =>
  path.resolve(process.env.TRIBUTARY_DEMO_DATA || path.join(process.env.TRIBUTARY_DATA_DIR || ".tributary", "demo-data"));

/** A small fast PRNG seeded from a string (mulberry32 over an FNV-1a hash). */
export function rng(seed: string): () => number {
  let h = 2166136261;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Order {
  id: string;
  customer: string;
  region: (typeof REGIONS)[number];
  amountCents: number;
  at: string;
}

/** The orders placed in [start, end): 20–60 of them, spread over the window. */
export function ordersBetween(start: Date, end: Date): Order[] {
  const random = rng(start.toISOString());
  const n = 20 + Math.floor(random() * 40);
  const span = end.getTime() - start.getTime();
  return Array.from({ length: n }, (_, i) => ({
    id: `${start.toISOString().slice(0, 10)}-${i}`,
    customer: `customer-${1 + Math.floor(random() * 12)}`,
    region: REGIONS[Math.floor(random() * REGIONS.length)] ?? "eu",
    amountCents: 500 + Math.floor(random() * 20_000),
    at: new Date(start.getTime() + Math.floor(random() * span)).toISOString(),
  }));
}

const partitionFile = (asset: string, partition: string): string =>
  path.join(demoDataDir(), asset, `${partition.replace(/[^A-Za-z0-9_.|-]/g, "_") || "all"}.json`);

/** Deletes one partition's file (an erasure); false when there was none. */
export async function removePartitionFile(asset: string, partition: string): Promise<boolean> {
  const file = partitionFile(asset, partition);
  const existed = await stat(file).then(
    () => true,
    () => false,
  );
  await rm(file, { force: true });
  return existed;
}

/** Overwrites one partition's file: the slice is replaced, never appended to. */
export async function writePartitionFile(asset: string, partition: string, value: unknown): Promise<string> {
  const file = partitionFile(asset, partition);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(value, null, 2));
  return file;
}

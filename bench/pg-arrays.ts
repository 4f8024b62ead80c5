/**
 * Array parameters of a partition-status request over 10 000 assets: encoding the asset keys (10 000), the watched
 * upstream keys (24 000, sent twice) and their owners as Postgres array literals, the way node-postgres does from JS
 * arrays and with storage/pg-arrays.ts. Prints one JSON object: milliseconds per request (median of 9 rounds of 20,
 * after a warm-up), and the bytes sent.
 *
 *   npx tsx bench/pg-arrays.ts
 */
import { createRequire } from "node:module";
import { intArray, textArray } from "../src/storage/pg-arrays.js";
import { ascending, floorRank, printResult } from "./_setup.js";

const keys = Array.from({ length: 10_000 }, (_, i) => `bench/a${i}`);
const watched = Array.from({ length: 24_000 }, (_, i) => `bench/a${(i * 7) % 10_000}`);
const owners = Array.from({ length: 24_000 }, (_, i) => 1 + Math.floor(i / 2.4));
// node-postgres's own encoding of a parameter (an internal module: what it does with every JS array parameter).
const { prepareValue } = createRequire(import.meta.url)("pg/lib/utils.js") as { prepareValue: (value: unknown) => string };

function perRequest(encode: () => string[]): { ms: number; bytes: number } {
  let bytes = 0;
  for (let i = 0; i < 20; i++) bytes = encode().reduce((n, s) => n + s.length, 0);
  const times: number[] = [];
  for (let round = 0; round < 9; round++) {
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) encode();
    times.push((performance.now() - t0) / 20);
  }
  return { ms: Number(floorRank(ascending(times), 0.5)!.toFixed(2)), bytes };
}

printResult({
  bench: "pg-arrays",
  nodePostgres: perRequest(() => [keys, watched, owners, watched, owners].map((a) => prepareValue(a))),
  // Each watched array built once, sent twice.
  literals: perRequest(() => [textArray(keys), textArray(watched), intArray(owners)]),
});

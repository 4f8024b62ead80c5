// The automation's codeVersionChanged() read on every full evaluation: which partitions of the assets that use it
// were last materialised with another code version than the asset's current one.
//
// A fresh database with `--assets` assets of a year of hourly partitions each (8 760), every partition materialised
// with code version v1, seeded with bulk SQL. Then PgAutomationStore.codeVersionChanged over all the assets, 10 times
// each:
// - `steady`: every asset still at v1 (nothing to find: the common case, every minute);
// - `oneDeployed`: one asset now at v2 (its 8 760 partitions are found);
// both with partition_status_code_version_idx and again without it (the read before the index: every recorded
// partition of every asset). Prints one JSON object: p50/p95/max ms per case.
//
//   npx tsx bench/code-version-changed.ts [--assets 200]
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { PgAutomationStore } from "../src/storage/index.js";
import { p50p95max, printResult, withScope } from "./_setup.js";

const { values } = parseArgs({ options: { assets: { type: "string", default: "200" } } });
const ASSETS = Number(values.assets);
const HOURS = 8_760;
const CALLS = 10;

async function main(): Promise<void> {
  const results: Record<string, unknown> = {
    bench: "code-version-changed",
    database: "postgres (local)",
    assets: ASSETS,
    partitionsPerAsset: HOURS,
  };
  await withScope(async (scope) => {
    const { db } = await scope.database("code_version");
    const seeded = performance.now();
    await sql`
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version, materialized_at)
      select 'bench/a' || a, to_char(timestamp '2025-01-01' + h * interval '1 hour', 'YYYY-MM-DD-HH24:MI'), 'materialized',
             a * ${HOURS} + h + 1, 'v1', now()
      from generate_series(0, ${ASSETS - 1}) as a, generate_series(0, ${HOURS - 1}) as h`.execute(db);
    await sql`analyze partition_status`.execute(db);
    results.rows = ASSETS * HOURS;
    results.seedMs = Math.round(performance.now() - seeded);
    const store = new PgAutomationStore(db);
    const assets = (deployed: number) =>
      Array.from({ length: ASSETS }, (_, i) => ({ assetKey: `bench/a${i}`, codeVersion: i < deployed ? "v2" : "v1" }));

    const measure = async (deployed: number, expected: number) => {
      const ms: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        const t = performance.now();
        const changed = await store.codeVersionChanged(assets(deployed));
        ms.push(performance.now() - t);
        const found = [...changed.values()].reduce((n, keys) => n + keys.length, 0);
        if (found !== expected) throw new Error(`found ${found} changed partitions, expected ${expected}`);
      }
      return p50p95max(ms);
    };
    results.withIndex = { steady: await measure(0, 0), oneDeployed: await measure(1, HOURS) };
    await sql`drop index partition_status_code_version_idx`.execute(db);
    results.withoutIndex = { steady: await measure(0, 0), oneDeployed: await measure(1, HOURS) };
  });
  printResult(results);
}

await main();

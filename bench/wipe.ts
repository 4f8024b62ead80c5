// Partition wipe at scale: an hourly asset of 100 000 partitions, each materialised twice (with an inline output per
// materialisation and the lineage of a downstream asset reading it), seeded with bulk SQL; then wipes of 1 000,
// 10 000 and 50 000 partitions through the API's command (each a dry run first), then output retention over the
// outputs left, on the local Postgres.
//   npx tsx bench/wipe.ts
import { sql } from "kysely";
import { seedRawAndClean } from "./_lifecycle-seed.js";
import { now } from "./_seed-history.js";
import { printResult, round1, timed, withScope } from "./_setup.js";
import { localGuard } from "../src/access/index.js";
import { partitionSpace } from "../src/partitions/index.js";
import { PgOutputRetentionStore } from "../src/storage/index.js";

const PARTITIONS = 100_000;
const SIZES = [1_000, 10_000, 50_000];

const result = await withScope(async (scope) => {
  const { runtime, spec, history, seedMs } = await seedRawAndClean(scope, "wipe", PARTITIONS);
  const db = runtime.database.db;
  const seeded = await timed(async () => {
    // A second, older materialisation of every raw partition, and an inline output of each materialisation.
    await sql`insert into events (kind, asset_key, partition_key, created_at)
              select 'materialization', asset_key, partition_key, ${now} from events where asset_key = 'bench/raw'`.execute(db);
    await sql`insert into outputs (asset_key, partition_key, run_id, step_id, try_number, size_bytes, inline_value)
              select asset_key, partition_key, gen_random_uuid(), id, 1, 40, '{"rows":12,"note":"seeded"}'::jsonb
              from events where asset_key = 'bench/raw'`.execute(db);
    await sql`analyze`.execute(db);
  });
  const space = partitionSpace(spec);
  const api = runtime.apiContext();
  const wipes = [];
  let from = 0;
  for (const size of SIZES) {
    const range = { assetKey: "bench/raw", from: space.keyAt(from), to: space.keyAt(from + size - 1) };
    from += size;
    const dry = await timed(() => api.assets.wipePartitions({ ...range, dryRun: true }, localGuard()));
    const wiped = await timed(() => api.assets.wipePartitions({ ...range, reason: "bench" }, localGuard()));
    const rows = wiped.value.statusesRemoved + wiped.value.materializationsRemoved + wiped.value.outputsRemoved;
    wipes.push({
      partitions: size,
      dryRunMs: Math.round(dry.ms),
      wipeMs: Math.round(wiped.ms),
      removed: {
        statuses: wiped.value.statusesRemoved,
        materializations: wiped.value.materializationsRemoved,
        outputs: wiped.value.outputsRemoved,
      },
      partitionsPerSecond: Math.round(size / (wiped.ms / 1000)),
      rowsPerSecond: Math.round(rows / (wiped.ms / 1000)),
    });
  }
  // Output retention over what is left: every remaining output is older than the retention and superseded (the seeded
  // statuses name no run), deleted 1 000 per statement as a reconciler does.
  await sql`update outputs set created_at = now() - interval '40 days'`.execute(db);
  const retention = new PgOutputRetentionStore(db);
  const before = new Date(Date.now() - 30 * 86_400_000);
  const pruned = await timed(async () => {
    let total = 0;
    for (;;) {
      const { outputs } = await retention.prune({ before, limit: 1_000 }, new Date());
      total += outputs;
      if (outputs < 1_000) return total;
    }
  });
  return {
    seeded: { ...history, seedS: round1((seedMs + seeded.ms) / 1000) },
    wipes,
    retention: {
      outputs: pruned.value,
      seconds: round1(pruned.ms / 1000),
      outputsPerSecond: Math.round(pruned.value / (pruned.ms / 1000)),
    },
  };
});

printResult({ bench: "wipe", database: "postgres (local)", partitions: PARTITIONS, ...result });

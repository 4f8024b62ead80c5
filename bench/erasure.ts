// Erasure requests at scale: an hourly source of 100 000 partitions and a derived asset reading it, each partition
// materialised with an inline output and its lineage (seeded with bulk SQL); then erasures of 100, 1 000 and 10 000
// source partitions: the request (impact computed and recorded) and the erasure a reconciler carries out up to the
// launch of the re-materialisation backfill (outputs deleted and recorded, partitions marked erased, the impact
// looked at again, the backfill planned), on the local Postgres.
//   npx tsx bench/erasure.ts
import os from "node:os";
import { sql } from "kysely";
import { seedRawAndClean } from "./_lifecycle-seed.js";
import { printResult, round1, timed, withScope } from "./_setup.js";
import { localGuard } from "../src/access/index.js";
import { launchBackfill } from "../src/api/index.js";
import { partitionSpace } from "../src/partitions/index.js";
import { ErasureTask } from "../src/reconciler/index.js";
import { PgErasureStore, PgLineageStore, PgOutputDeletionStore } from "../src/storage/index.js";

const PARTITIONS = 100_000;
const SIZES = [100, 1_000, 10_000];

const result = await withScope(async (scope) => {
  const { runtime, spec, history, seedMs } = await seedRawAndClean(scope, "erasure", PARTITIONS);
  const db = runtime.database.db;
  const outputs = await timed(async () => {
    await sql`insert into outputs (asset_key, partition_key, run_id, step_id, try_number, size_bytes, inline_value)
              select asset_key, partition_key, gen_random_uuid(), id, 1, 40, '{"email":"someone@example.com"}'::jsonb
              from events`.execute(db);
    await sql`analyze`.execute(db);
  });
  const space = partitionSpace(spec);
  const api = runtime.apiContext();
  const erasures = new PgErasureStore(db);
  const task = new ErasureTask({
    store: erasures,
    deletions: new PgOutputDeletionStore(db),
    outputStore: runtime.outputStore,
    logsDir: runtime.logsDir,
    graphs: runtime.graphs,
    lineage: new PgLineageStore(db),
    definitions: runtime.definitions,
    backfills: {
      launch: async (r) =>
        (
          await launchBackfill(
            { graphs: runtime.graphs, runs: runtime.runs, definitions: runtime.definitions, backfills: runtime.backfills },
            { assetKeys: r.assetKeys, assetPartitions: r.assetPartitions, maxPartitionsPerRun: 100 },
            new Date(),
          )
        ).id,
      status: async (id) => (await runtime.backfills.get(id))?.status,
    },
    importHook: async () => undefined,
  });
  const runs = [];
  let from = 0;
  for (const size of SIZES) {
    const keys = Array.from({ length: size }, (_, i) => space.keyAt(from + i));
    from += size;
    const requested = await timed(() =>
      api.lineage.erasures.request({ assetKey: "bench/raw", partitionKeys: keys, reason: "bench" }, localGuard()),
    );
    const id = requested.value.request!.id;
    const erased = await timed(async () => {
      await task.work();
      return (await erasures.get(id))!;
    });
    if (erased.value.state !== "rematerialising") throw new Error(`erasure ${id} is ${erased.value.state}: ${erased.value.message}`);
    const report = await erasures.report(id);
    const outputs = report!.deletions.filter((d) => d.kind === "output").length;
    runs.push({
      sourcePartitions: size,
      partitionsErased: erased.value.erasedCount,
      outputsDeleted: outputs,
      requestMs: Math.round(requested.ms),
      eraseMs: Math.round(erased.ms),
      partitionsPerSecond: Math.round(erased.value.erasedCount / (erased.ms / 1000)),
    });
  }
  // What launching the re-materialisation alone costs (planned over the 100 000-partition space), for comparison.
  const keys = Array.from({ length: 100 }, (_, i) => space.keyAt(from + i));
  const backfill = await timed(() =>
    launchBackfill(
      { graphs: runtime.graphs, runs: runtime.runs, definitions: runtime.definitions, backfills: runtime.backfills },
      {
        assetKeys: ["bench/raw", "bench/clean"],
        assetPartitions: [
          { assetKey: "bench/raw", partitionKeys: keys },
          { assetKey: "bench/clean", partitionKeys: keys },
        ],
        maxPartitionsPerRun: 100,
      },
      new Date(),
    ),
  );
  return {
    seeded: { ...history, seedS: round1((seedMs + outputs.ms) / 1000) },
    erasures: runs,
    backfillOf200PartitionsMs: Math.round(backfill.ms),
  };
});

printResult({ bench: "erasure", database: "postgres (local)", cpus: os.cpus().length, partitions: PARTITIONS, ...result });

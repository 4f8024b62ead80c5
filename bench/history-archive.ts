// History archival at scale: a year of hourly runs of raw/clean asset pairs (a run per asset and partition, with its
// step, try, events, lineage and check result; a share of partitions run again a day later), seeded with bulk SQL;
// then archival with a 90-day retention to a local directory until nothing is left to archive, the database's size
// before, right after and after VACUUM FULL of the history tables, and a restore of one archived day, on the local
// Postgres. Each batch size in --batch archives a fresh seed; a batch never spans two days, so sizes above a day's runs
// (24 × assets, and the re-runs) archive the same batches.
//   npx tsx bench/history-archive.ts [--assets 10] [--days 365] [--rerun-share 0.3] [--retention-days 90] [--batch 500]
// The defaults take about a minute on two cores.
import os from "node:os";
import { parseArgs } from "node:util";
import { sql, type Kysely } from "kysely";
import { seedRunHistoryRuntime } from "./_run-history-seed.js";
import { now } from "./_seed-history.js";
import { p50p95max, printResult, round1, timed, withScope } from "./_setup.js";
import { restoreHistory } from "../src/api/index.js";
import { HistoryArchiveTask, type ArchivePass } from "../src/reconciler/index.js";
import {
  HISTORY_TABLES,
  LocalDirOutputStore,
  PgHistoryArchiveStore,
  type Database,
  type HistoryBatch,
  type HistoryRetentionPolicy,
  type HistoryTable,
} from "../src/storage/index.js";

const { values } = parseArgs({
  options: {
    assets: { type: "string", default: "10" },
    days: { type: "string", default: "365" },
    "rerun-share": { type: "string", default: "0.3" },
    "retention-days": { type: "string", default: "90" },
    batch: { type: "string", default: "500" },
  },
});
const options = { assets: Number(values.assets), days: Number(values.days), rerunShare: Number(values["rerun-share"]) };
const RETENTION_DAYS = Number(values["retention-days"]);
const BATCHES = values.batch.split(",").map(Number);
const MB = 1024 * 1024;

/** The Postgres store, timing each claim and each batch (from its claim to its completion). */
class TimedArchiveStore extends PgHistoryArchiveStore {
  readonly claimMs: number[] = [];
  readonly batchMs: number[] = [];
  #claimedAt = 0;

  override async claim(
    policy: HistoryRetentionPolicy,
    claimOptions: { readonly limit: number; readonly owner: string; readonly orphans?: boolean },
    at: Date,
  ) {
    this.#claimedAt = performance.now();
    const batch = await super.claim(policy, claimOptions, at);
    this.claimMs.push(performance.now() - this.#claimedAt);
    return batch;
  }

  override async complete(batch: HistoryBatch, at: Date) {
    const done = await super.complete(batch, at);
    this.batchMs.push(performance.now() - this.#claimedAt);
    return done;
  }
}

/** The database's size, the history tables' (with their indexes and TOAST), and their rows. */
async function footprint(db: Kysely<Database>) {
  const { rows: sizes } = await sql<{ database: string; history: string }>`
    select pg_database_size(current_database())::text as database,
           (select sum(pg_total_relation_size(t::regclass)) from unnest(${[...HISTORY_TABLES]}::text[]) as t)::text as history`.execute(db);
  const rows = {} as Record<HistoryTable, number>;
  for (const table of HISTORY_TABLES) {
    rows[table] = (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)).rows[0]!.n;
  }
  return { databaseMB: round1(Number(sizes[0]!.database) / MB), historyTablesMB: round1(Number(sizes[0]!.history) / MB), rows };
}

const sum = (counts: Readonly<Record<string, number>>): number => Object.values(counts).reduce((n, c) => n + c, 0);
const perSecond = (n: number, ms: number): number => Math.round(n / (ms / 1000));

async function archiveFreshSeed(batch: number) {
  return withScope(async (scope) => {
    const { runtime, rows: seeded, seedMs } = await seedRunHistoryRuntime(scope, "history_archive", options);
    const db = runtime.database.db;
    const before = await footprint(db);
    const outputDir = await scope.tempDir("history-archive-objects");
    const logsDir = await scope.tempDir("history-archive-logs");
    const outputStore = new LocalDirOutputStore(outputDir);
    const store = new TimedArchiveStore(db);
    const task = new HistoryArchiveTask({
      store,
      outputStore,
      logsDir,
      retentionMs: RETENTION_DAYS * 86_400_000,
      graphs: runtime.graphs,
      batch,
      maxBatches: 1_000_000,
    });
    const archived = await timed(async () => {
      const total: Record<keyof ArchivePass, number> = { archives: 0, runs: 0, events: 0, rows: 0, logs: 0, bytes: 0 };
      for (let pass = await task.archive(now); pass.archives > 0; pass = await task.archive(now)) {
        for (const k of Object.keys(total) as (keyof ArchivePass)[]) total[k] += pass[k];
      }
      return total;
    });
    const { archives, runs, events, rows, logs, bytes } = archived.value;
    const afterPlain = await footprint(db);
    const vacuum = await timed(() => sql`vacuum full ${sql.join(HISTORY_TABLES.map((t) => sql.table(t)))}`.execute(db));
    const afterVacuumFull = await footprint(db);

    const archiveStore = new PgHistoryArchiveStore(db);
    const days = await archiveStore.days();
    const day = days[0]!.day;
    const restored = await timed(() => restoreHistory({ archives: archiveStore, outputStore, logsDir }, { day }, now));
    const restoredRows = sum(restored.value.rows);
    const result = {
      batch,
      seeded: { rows: seeded, seedS: round1(seedMs / 1000) },
      before,
      archive: {
        seconds: round1(archived.ms / 1000),
        archives,
        days: days.length,
        runs,
        events,
        rows,
        logs,
        bytes,
        rowsPerSecond: perSecond(rows, archived.ms),
        runsPerSecond: perSecond(runs, archived.ms),
        batchMs: p50p95max(store.batchMs),
        claimMs: p50p95max(store.claimMs),
      },
      after: { plain: afterPlain, vacuumFull: { ...afterVacuumFull, vacuumS: round1(vacuum.ms / 1000) } },
      restore: {
        day,
        archives: restored.value.archives,
        rows: restoredRows,
        ms: Math.round(restored.ms),
        rowsPerSecond: perSecond(restoredRows, restored.ms),
      },
    };
    process.stderr.write(`${JSON.stringify(result)}\n`);
    return result;
  });
}

const started = performance.now();
const configurations = [];
for (const batch of BATCHES) configurations.push(await archiveFreshSeed(batch));
printResult({
  bench: "history-archive",
  database: "postgres (local)",
  cpus: os.cpus().length,
  ...options,
  retentionDays: RETENTION_DAYS,
  configurations,
  wallS: round1((performance.now() - started) / 1000),
});

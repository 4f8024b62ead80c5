// The automation loop through Postgres: the same 10 000-asset graph as
// bench/automation-tick.ts (half daily, half hourly, ~5 deps, eager / onCron /
// onMissing), stored as real definitions, with recent history in
// partition_status (30 days of the daily assets, 72 hours of the hourly ones:
// ~510 000 rows). Measures AutomationTask ticks end to end (lease, event
// cursor, views, evaluation, run creation, commit): the first one (loads the
// partition states into memory), a steady full one, and an incremental one
// after 50 reported events, then the first tick of another reconciler taking
// the lease over (it reads the partition summaries the first one stored with
// the cursor, not partition_status). Prints one JSON object.
//
// With `--history year`, a year of history for every asset instead (45.6 M
// partition_status rows for 10 000 assets, seeded in SQL) and the summaries a
// previous holder of the lease would have stored with them: the first tick of
// a holder without automation state yet, then a takeover by another one.
//
//   npx tsx bench/automation-loop.ts [--assets 10000] [--history recent|year]
import { parseArgs } from "node:util";
import { sql, type Kysely } from "kysely";
import { storeBenchDefinitions } from "./_definitions.js";
import { printResult, sleep, timed, withScope } from "./_setup.js";
import { partitionSpace } from "../src/partitions/index.js";
import { AutomationTask } from "../src/reconciler/index.js";
import type { SnapshotAsset } from "../src/graph/index.js";
import { summaryDefinition } from "../src/reconciler/automation/automation-cache.js";
import { GraphCache, PgAutomationStore, PgEventStore, PgRunStore, toJson, type Database } from "../src/storage/index.js";
import { RUN_DECISIONS } from "../src/planner/index.js";

const { values } = parseArgs({ options: { assets: { type: "string", default: "10000" }, history: { type: "string", default: "recent" } } });
const N = Number(values.assets);
if (values.history !== "recent" && values.history !== "year")
  throw new Error(`--history must be recent or year, got ${JSON.stringify(values.history)}`);
const YEAR = values.history === "year";
const now = new Date("2026-01-01T00:30:00Z");

// Same shape as bench/automation-tick.ts: one definitions file, one export per asset.
function definitionsSource(): string {
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const lines = [
    `import { asset, daily, dep, eager, hourly, onCron, onMissing } from "tributary";`,
    `const days = daily({ start: "2025-01-01" });`,
    `const hours = hourly({ start: "2025-01-01T00:00" });`,
    `const noop = async () => null;`,
  ];
  const pools: [number[], number[]] = [[], []];
  for (let i = 0; i < N; i++) {
    const isHourly = i % 2 === 1;
    const pool = pools[isHourly ? 1 : 0];
    const deps: string[] = [];
    for (let d = 0; d < 5 && pool.length > 0; d++) deps.push(`d${d}: dep(a${pool[Math.floor(random() * pool.length)]})`);
    const r = random();
    const cron = isHourly ? `"5 * * * *"` : `"0 1 * * *"`;
    const automation = pool.length < 50 ? `onCron(${cron})` : r < 0.7 ? "eager()" : r < 0.9 ? `onCron(${cron})` : "onMissing()";
    lines.push(
      `export const a${i} = asset({ key: "bench/a${i}", partitions: ${isHourly ? "hours" : "days"}, automation: ${automation}, deps: { ${deps.join(", ")} } }, noop);`,
    );
    pool.push(i);
  }
  return lines.join("\n") + "\n";
}

async function main(): Promise<void> {
  await withScope(async (scope) => {
    const { db } = await scope.database("auto", 4);
    const dir = await scope.tempDir("auto");
    const { value: definitions, ms: loadMs } = await timed(() => storeBenchDefinitions(db, dir, definitionsSource(), 120_000));
    const graphs = new GraphCache(definitions, 0);
    const { graph } = await graphs.current();

    const seedStarted = performance.now();
    const seeded = YEAR ? await seedYear(db, graph.assets) : await seedRecent(db, graph.assets);
    await sql`analyze`.execute(db);
    const seedMs = performance.now() - seedStarted;

    const runs = new PgRunStore(db, RUN_DECISIONS);
    const task = new AutomationTask({
      store: new PgAutomationStore(db),
      runs,
      graphs,
      definitions,
      owner: "bench",
      minIntervalMs: 0,
    });
    const first = await task.tick(now);
    task.requestFullEvaluation();
    const steady = await task.tick(new Date(now.getTime() + 1_000));

    // 50 external events on random partitions of the recent history.
    let s = 7;
    const random = () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const events = [];
    for (let e = 0; e < 50; e++) {
      const a = graph.assets[Math.floor(random() * graph.assets.length)]!;
      const space = partitionSpace(a.partitions!);
      events.push({
        assetKey: a.key,
        partitionKey: space.keyAt(space.count(now) - 2 - Math.floor(random() * 10)),
        kind: "external" as const,
        metadata: {},
      });
    }
    await new PgEventStore(db).reportEvents(events, now);
    // Tick until the events are read.
    let incremental = await task.tick(new Date(now.getTime() + 2_000));
    for (let i = 1; i < 100 && (incremental?.events ?? 0) === 0; i++) {
      await sleep(20);
      incremental = await task.tick(new Date(now.getTime() + 2_000 + i));
    }

    // Another reconciler takes the lease over (the holder stops and gives it up): its first tick loads its cache.
    await task.stop();
    const successor = new AutomationTask({
      store: new PgAutomationStore(db),
      runs,
      graphs,
      definitions,
      owner: "bench-successor",
      minIntervalMs: 0,
    });
    const takeover = await successor.tick(new Date(now.getTime() + 3_000));
    if (!takeover) throw new Error("the successor did not take the automation lease");
    const runsCreated = Number((await sql<{ n: string }>`select count(*) as n from runs`.execute(db)).rows[0]!.n);
    const records = Number((await sql<{ n: string }>`select count(*) as n from automation_evaluations`.execute(db)).rows[0]!.n);
    printResult({
      bench: "automation-loop",
      database: "postgres (local)",
      assets: N,
      history: values.history,
      partitionStatusRows: seeded,
      loadDefinitionsMs: Math.round(loadMs),
      seedMs: Math.round(seedMs),
      firstTick: round(first),
      steadyFullTick: round(steady),
      incrementalAfter50Events: round(incremental),
      takeoverTick: round(takeover),
      runsCreated,
      evaluationRecords: records,
    });
  });
}

/** Recent history, as if the last month had been materialised (but each asset's newest partition). */
async function seedRecent(db: Kysely<Database>, assets: readonly SnapshotAsset[]): Promise<number> {
  let rows: { asset_key: string; partition_key: string; event_id: number }[] = [];
  let eventId = 1;
  let seeded = 0;
  const flush = async () => {
    if (rows.length === 0) return;
    await sql`insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, materialized_at, updated_at)
              select x.asset_key, x.partition_key, 'materialized', x.event_id, ${now}, ${now}
              from jsonb_to_recordset(${toJson(rows)}::jsonb) as x(asset_key text, partition_key text, event_id bigint)`.execute(db);
    seeded += rows.length;
    rows = [];
  };
  for (const a of assets) {
    const space = partitionSpace(a.partitions!);
    const count = space.count(now);
    const depth = space.describe().startsWith("hourly") ? 72 : 30;
    for (let i = Math.max(0, count - depth); i < count - 1; i++)
      rows.push({ asset_key: a.key, partition_key: space.keyAt(i), event_id: eventId++ });
    if (rows.length >= 20_000) await flush();
  }
  await flush();
  return seeded;
}

/**
 * A year of history (every partition but each asset's newest), generated in SQL 25 assets per statement, and the
 * partition summaries the holder of the automation lease stores with its cursor: one range per asset.
 */
async function seedYear(db: Kysely<Database>, assets: readonly SnapshotAsset[]): Promise<number> {
  let seeded = 0;
  const summaries: { asset_key: string; partitions: string; materialized: [string, string][]; failed: [] }[] = [];
  for (const hourly of [false, true]) {
    const group = assets.filter((a) => partitionSpace(a.partitions!).describe().startsWith("hourly") === hourly);
    if (group.length === 0) continue;
    const space = partitionSpace(group[0]!.partitions!);
    const first = space.keyAt(0);
    const last = space.keyAt(space.count(now) - 2);
    const [step, format] = hourly ? ["1 hour", "YYYY-MM-DD-HH24:MI"] : ["1 day", "YYYY-MM-DD"];
    const startOf = (key: string) => (hourly ? `${key.slice(0, 10)} ${key.slice(11)}` : key);
    for (let i = 0; i < group.length; i += 25) {
      const keys = group.slice(i, i + 25).map((a) => a.key);
      const { numAffectedRows } = await sql`
        insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, materialized_at, updated_at)
        select a.key, to_char(ts, ${format}), 'materialized', 1, ${now}, ${now}
        from unnest(${keys}::text[]) as a(key),
             generate_series(${startOf(first)}::timestamp, ${startOf(last)}::timestamp, ${step}::interval) as ts`.execute(db);
      seeded += Number(numAffectedRows ?? 0);
    }
    for (const a of group)
      summaries.push({ asset_key: a.key, partitions: summaryDefinition(a)!, materialized: [[first, last]], failed: [] });
  }
  await sql`insert into automation_partitions (asset_key, partitions, materialized, failed)
            select x.asset_key, x.partitions, x.materialized, x.failed
            from jsonb_to_recordset(${toJson(summaries)}::jsonb) as x(asset_key text, partitions text, materialized jsonb, failed jsonb)`.execute(
    db,
  );
  return seeded;
}

function round<T extends { ms: number } | undefined>(s: T): T {
  return (s ? { ...s, ms: Math.round(s.ms) } : s) as T;
}

await main();

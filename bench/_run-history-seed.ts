// Run history for the history-archive benchmark: hourly assets with a run per partition over a span of days, seeded
// with bulk SQL (a temporary table of the runs, then one insert per table), so that archival meets the rows an
// automation-driven deployment leaves behind.
import { sql, type Kysely } from "kysely";
import type { Runtime } from "../src/cli/index.js";
import { partitionSpace } from "../src/partitions/index.js";
import { GraphCache, PgDefinitionStore, type Database } from "../src/storage/index.js";
import { openBenchRuntime, storeBenchDefinitions } from "./_definitions.js";
import { hourlyStart, now } from "./_seed-history.js";
import type { BenchScope } from "./_setup.js";

export interface RunHistoryOptions {
  /** Assets, an even number: `bench/raw-<i>`, and `bench/clean-<i>` reading it with a check `clean_ok` (blocking for even i). */
  readonly assets: number;
  /** Hourly partitions over this many days, ending at `now`. */
  readonly days: number;
  /** The share of partitions (0 to 1) materialised again a day later by a second run. */
  readonly rerunShare: number;
}

/** Rows seeded, by table. */
export type RunHistoryRows = Record<
  "runs" | "steps" | "step_tries" | "events" | "event_inputs" | "check_results" | "partition_status",
  number
>;

/** The definitions of `options`' assets, all hourly with exactly `days` × 24 partitions at `now`. */
export function runHistoryDefinitions(options: Pick<RunHistoryOptions, "assets" | "days">): string {
  const lines = [
    `import { asset, check, hourly } from "tributary";`,
    `const hours = hourly({ start: "${hourlyStart(options.days * 24)}" });`,
  ];
  for (let i = 0; i < options.assets / 2; i++) {
    lines.push(
      `export const raw${i} = asset({ key: "bench/raw-${i}", partitions: hours }, async () => null);`,
      `export const clean${i} = asset({ key: "bench/clean-${i}", partitions: hours, deps: { raw: raw${i} } }, async () => null);`,
      `export const cleanOk${i} = check(clean${i}, { name: "clean_ok", blocking: ${i % 2 === 0} }, () => ({ passed: true }));`,
    );
  }
  return lines.join("\n");
}

/**
 * A bench runtime on a scratch database with the assets of runHistoryDefinitions stored, and their history seeded
 * (see seedRunHistory).
 */
export async function seedRunHistoryRuntime(
  scope: BenchScope,
  name: string,
  options: RunHistoryOptions,
): Promise<{ runtime: Runtime; rows: RunHistoryRows; seedMs: number }> {
  if (options.assets < 2 || options.assets % 2 !== 0) {
    throw new Error(`--assets must be an even number of at least 2, not ${options.assets}`);
  }
  const url = await scope.scratchDatabase(name);
  const dir = await scope.tempDir(name);
  const runtime = await openBenchRuntime(scope, url, dir);
  await storeBenchDefinitions(runtime.database.db, dir, runHistoryDefinitions(options), 300_000);
  const started = performance.now();
  const rows = await seedRunHistory(runtime.database.db, options);
  return { runtime, rows, seedMs: performance.now() - started };
}

/**
 * For every asset and every hour of the span, a run as automation launches it (success, one step, one try, a
 * `planned` and a `materialization` event) created in that hour: raw's at 5 past, clean's at 10 past. Clean's
 * materialisations read raw's of the same partition and run generation (event_inputs) and carry a passed check
 * result. `rerunShare` of the partitions of each raw/clean pair (all but the last day's) are run again a day later,
 * superseding the first run's events and check results. partition_status points at each partition's latest
 * materialisation. The stored definitions must be runHistoryDefinitions(options).
 */
export async function seedRunHistory(db: Kysely<Database>, options: RunHistoryOptions): Promise<RunHistoryRows> {
  const { graph, version } = await new GraphCache(new PgDefinitionStore(db)).current();
  const space = partitionSpace(graph.get("bench/raw-0")!.partitions!);
  const hours = space.count(now);
  if (hours !== options.days * 24) throw new Error(`the stored definitions have ${hours} partitions, not ${options.days * 24}`);
  const keys = Array.from({ length: hours }, (_, h) => space.keyAt(h));
  const start = new Date(now.getTime() - hours * 3_600_000);
  const rerunPerMille = Math.round(options.rerunShare * 1000);
  // One connection throughout: the temporary table is the session's.
  return db.connection().execute(async (c) => {
    // n orders the runs by creation: steps and tries take it as their id, events 2n - 1 (planned) and 2n.
    await sql`
      create temporary table seed_runs as
      select row_number() over (order by x.at, x.pair, x.kind desc)::bigint as n, gen_random_uuid() as run_id, x.*
      from (
        select p.pair, k.kind, 'bench/' || k.kind || '-' || p.pair as asset_key, h.key as partition_key, h.ord - 1 as h, g.gen,
               ${start}::timestamptz + make_interval(days => g.gen, hours => (h.ord - 1)::int, mins => k.minute) as at
        from generate_series(0, ${options.assets / 2 - 1}) as p(pair)
        cross join (values ('raw', 5), ('clean', 10)) as k(kind, minute)
        cross join unnest(${keys}::text[]) with ordinality as h(key, ord)
        cross join generate_series(0, 1) as g(gen)
        where g.gen = 0 or (h.ord <= ${hours - 24} and abs(hashint8(h.ord * 1000 + p.pair)) % 1000 < ${rerunPerMille})
      ) x`.execute(c);
    const insert = async (statement: ReturnType<typeof sql>) => Number((await statement.execute(c)).numAffectedRows ?? 0);
    const rows: RunHistoryRows = {
      runs: await insert(sql`
        insert into runs (id, status, origin, snapshot_version, plan, created_at, started_at, ended_at, updated_at, steps_total, steps_done)
        select run_id, 'success', 'automation', ${version}, '{}'::jsonb, at, at + interval '1 second', at + interval '31 seconds',
               at + interval '31 seconds', 1, 1
        from seed_runs`),
      steps: await insert(sql`
        insert into steps (id, run_id, asset_key, partition_key, state, try_number, executor, scheduled_at, queued_at, started_at, ended_at,
                           created_at, updated_at)
        select n, run_id, asset_key, partition_key, 'success', 1, 'local', at, at + interval '1 second', at + interval '1 second',
               at + interval '31 seconds', at, at + interval '31 seconds'
        from seed_runs`),
      step_tries: await insert(sql`
        insert into step_tries (id, step_id, run_id, try_number, state, executor, queued_at, started_at, ended_at, duration_ms, created_at)
        select n, n, run_id, 1, 'success', 'local', at + interval '1 second', at + interval '1 second', at + interval '31 seconds', 30000,
               at + interval '1 second'
        from seed_runs`),
      events: await insert(sql`
        insert into events (id, kind, asset_key, partition_key, run_id, step_id, try_number, created_at)
        select 2 * n - 1 + e.m, case e.m when 1 then 'materialization' else 'planned' end, asset_key, partition_key, run_id, n, 1,
               at + e.m * interval '30 seconds'
        from seed_runs cross join (values (0), (1)) as e(m)`),
      event_inputs: await insert(sql`
        insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
        select 2 * c.n, r.asset_key, r.partition_key, 2 * r.n
        from seed_runs c join seed_runs r on r.pair = c.pair and r.kind = 'raw' and r.h = c.h and r.gen = c.gen
        where c.kind = 'clean'`),
      check_results: await insert(sql`
        insert into check_results (id, asset_key, check_name, partition_key, run_id, step_id, event_id, passed, severity, blocking, created_at,
                                   try_number)
        select n, asset_key, 'clean_ok', partition_key, run_id, n, 2 * n, true, 'error', pair % 2 = 0, at + interval '31 seconds', 1
        from seed_runs where kind = 'clean'`),
      partition_status: await insert(sql`
        insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, last_run_id, last_step_id,
                                      materialized_at, updated_at)
        select distinct on (asset_key, partition_key) asset_key, partition_key, 'materialized', 2 * n, run_id, n,
               at + interval '30 seconds', at + interval '30 seconds'
        from seed_runs order by asset_key, partition_key, gen desc`),
    };
    await sql`
      select setval('steps_id_seq', max(n)), setval('step_tries_id_seq', max(n)), setval('events_id_seq', 2 * max(n)),
             setval('check_results_id_seq', max(n))
      from seed_runs`.execute(c);
    await sql`drop table seed_runs`.execute(c);
    await sql`analyze`.execute(c);
    return rows;
  });
}

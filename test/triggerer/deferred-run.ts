// A running run whose steps are `deferred`, as ctx.defer leaves them: the
// trigger and store tests wait on them.
import { sql, type Kysely } from "kysely";
import type { Database } from "../../src/storage/index.js";

export interface DeferredRun {
  readonly runId: string;
  /** Deferred steps of asset `src/wait`, partitions p00001…, in id order. */
  readonly steps: number[];
  /** With `downstream`: a pending step of `down/stream` reading the first deferred step. */
  readonly downstream: number | null;
}

export async function deferredRun(
  db: Kysely<Database>,
  count: number,
  options: { downstream?: boolean; now?: Date } = {},
): Promise<DeferredRun> {
  const now = options.now ?? new Date();
  const total = count + (options.downstream ? 1 : 0);
  const { rows: runs } = await sql<{ id: string }>`
    insert into runs (status, origin, snapshot_version, plan, steps_total, started_at)
    values ('running', 'manual', 1, '{}'::jsonb, ${total}, ${now}) returning id`.execute(db);
  const runId = runs[0]!.id;
  const { rows } = await sql<{ id: string }>`
    insert into steps (run_id, asset_key, partition_key, state, try_number)
    select ${runId}::uuid, 'src/wait', 'p' || lpad(g::text, 5, '0'), 'deferred', 1 from generate_series(1, ${count}::int) g
    order by g returning id`.execute(db);
  const steps = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  let downstream: number | null = null;
  if (options.downstream) {
    const { rows: d } = await sql<{ id: string }>`
      insert into steps (run_id, asset_key, partition_key, state, upstream_total)
      values (${runId}::uuid, 'down/stream', 'p00001', 'pending', 1) returning id`.execute(db);
    downstream = Number(d[0]!.id);
    await sql`insert into step_deps (step_id, upstream_step_id) values (${downstream}, ${steps[0]!})`.execute(db);
  }
  return { runId, steps, downstream };
}

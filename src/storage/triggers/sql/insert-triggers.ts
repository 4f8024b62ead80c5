import { sql } from "kysely";
import { toJson } from "../../json.js";
import type { TriggerWindow } from "../../trigger-store.js";
import type { Trx } from "../trigger-rows.js";

// Creation's statements: a batch travels as one jsonb_to_recordset parameter, and ON CONFLICT names the partial
// unique indexes of waiting triggers (one per step; one per source partition and kind), which the builder does not express.

/** One trigger to create, numbered by its place in the call (`i`). */
export interface TriggerInput {
  i: number;
  kind: string;
  args: Readonly<Record<string, unknown>>;
  step_id: number | null;
  asset_key: string | null;
  partition_key: string | null;
  next_check_at: string;
  timeout_at: string | null;
  partition_window: TriggerWindow | null;
  poll_interval_ms: number;
  soft_fail: boolean;
}

const COLUMNS = sql`x(i int, kind text, args jsonb, step_id bigint, asset_key text, partition_key text,
                     next_check_at timestamptz, timeout_at timestamptz, partition_window jsonb,
                     poll_interval_ms int, soft_fail boolean)`;

/** Deferred steps' triggers, taking asset, partition and try from the step; a step already waiting gets none. Returns the new ids. */
export async function insertStepTriggers(trx: Trx, steps: readonly TriggerInput[], now: Date): Promise<number[]> {
  const { rows } = await sql<{ id: string }>`
    insert into triggers (kind, args, step_id, asset_key, partition_key, next_check_at, timeout_at, partition_window,
                          poll_interval_ms, soft_fail, try_number, created_at, updated_at)
    select x.kind, x.args, x.step_id, s.asset_key, s.partition_key, x.next_check_at, x.timeout_at, x.partition_window,
           x.poll_interval_ms, x.soft_fail, nullif(s.try_number, 0), ${now}, ${now}
    from jsonb_to_recordset(${toJson(steps)}::jsonb) as ${COLUMNS}
    join steps s on s.id = x.step_id
    order by x.step_id
    on conflict (step_id) where status = 'waiting' and step_id is not null do nothing
    returning id`.execute(trx);
  return rows.map((r) => Number(r.id));
}

/** Source observations' triggers; a source partition already waiting on that kind gets none. Returns the new ids. */
export async function insertObservationTriggers(trx: Trx, observations: readonly TriggerInput[], now: Date): Promise<number[]> {
  const { rows } = await sql<{ id: string }>`
    insert into triggers (kind, args, asset_key, partition_key, next_check_at, timeout_at, partition_window,
                          poll_interval_ms, soft_fail, created_at, updated_at)
    select x.kind, x.args, x.asset_key, x.partition_key, x.next_check_at, x.timeout_at, x.partition_window,
           x.poll_interval_ms, x.soft_fail, ${now}, ${now}
    from jsonb_to_recordset(${toJson(observations)}::jsonb) as ${COLUMNS}
    order by x.asset_key, x.partition_key, x.kind
    on conflict (asset_key, (coalesce(partition_key, '')), kind)
      where status = 'waiting' and step_id is null and asset_key is not null do nothing
    returning id`.execute(trx);
  return rows.map((r) => Number(r.id));
}

/** The waiting trigger of every input row, new or already there: input row `i` → trigger id. */
export async function waitingTriggersOf(trx: Trx, input: readonly TriggerInput[]): Promise<Map<number, number>> {
  const { rows } = await sql<{ i: number; id: string }>`
    select x.i, t.id
    from jsonb_to_recordset(${toJson(input)}::jsonb) as ${COLUMNS}
    join triggers t on t.status = 'waiting' and (
      (x.step_id is not null and t.step_id = x.step_id)
      or (x.step_id is null and t.step_id is null and t.asset_key = x.asset_key
          and coalesce(t.partition_key, '') = coalesce(x.partition_key, '') and t.kind = x.kind))`.execute(trx);
  return new Map(rows.map((r) => [r.i, Number(r.id)]));
}

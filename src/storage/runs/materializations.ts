import { sql } from "kysely";
import type { StepState } from "../database.js";
import { toJson } from "../json.js";
import type { LineageInput, StepCompletion } from "../run-store.js";
import type { LockedStep, Trx } from "./step-rows.js";

export async function recordMaterializations(
  trx: Trx,
  applied: readonly { c: StepCompletion; step: LockedStep; state: StepState }[],
  now: Date,
): Promise<void> {
  const successes = applied.filter((a) => a.c.outcome === "success");
  if (successes.length === 0) return;
  const rows: MaterializationRow[] = [];
  const lineage: LineageRow[] = [];
  for (const { c, step } of successes) {
    if (c.outcome !== "success") continue;
    rows.push({
      step_id: step.id,
      run_id: step.run_id,
      try_number: c.tryNumber,
      asset_key: step.asset_key,
      partition_key: step.partition_key,
      map_index: step.map_index,
      data_version: c.dataVersion,
      code_version: c.codeVersion,
      size_bytes: c.output.sizeBytes,
      inline_value: "inline" in c.output ? c.output.inline : null,
      storage_ref: "ref" in c.output ? c.output.ref : null,
      content_type: "application/json",
      // A mapped step's output is one item of its partition's: the partition is materialised when they are gathered.
      output_only: step.map_index >= 0,
    });
    if (step.map_index >= 0) continue;
    for (const i of uniqueInputs(c.inputs)) {
      lineage.push({ step_id: step.id, asset_key: i.assetKey, partition_key: i.partitionKey, upstream_event_id: i.eventId });
    }
  }
  await insertMaterializations(trx, rows, lineage, now);
}

/** Two dependencies may read the same upstream partition: it is one input. */
export function uniqueInputs(inputs: readonly LineageInput[]): LineageInput[] {
  const seen = new Map<string, LineageInput>();
  for (const i of inputs) {
    const k = `${i.assetKey}\u0000${i.partitionKey}`;
    if (!seen.has(k)) seen.set(k, i);
  }
  return [...seen.values()];
}

export interface MaterializationRow {
  step_id: number;
  run_id: string;
  try_number: number;
  asset_key: string;
  partition_key: string;
  map_index: number;
  data_version: string;
  code_version: string | null;
  size_bytes: number;
  /** JSON text. */
  inline_value: string | null;
  storage_ref: string | null;
  content_type: string;
  /** Only the output is stored (a mapped step's): no event, no partition status. */
  output_only: boolean;
}

export interface LineageRow {
  step_id: number;
  asset_key: string;
  partition_key: string;
  upstream_event_id: number | null;
}

/**
 * Output, materialisation event, lineage and partition status in one statement: one round trip per batch
 * whatever its size. A gathered output is written again when its step gathers again (a mapped step was
 * cleared): its row says only how many items it gathers.
 */
export async function insertMaterializations(
  trx: Trx,
  rows: readonly MaterializationRow[],
  lineage: readonly LineageRow[],
  now: Date,
): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    with x as (
      select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, partition_key text, run_id uuid, step_id bigint, map_index int, try_number int,
             size_bytes bigint, inline_value text, storage_ref text, data_version text, code_version text,
             content_type text, output_only boolean)
    ), o as (
      insert into outputs (asset_key, partition_key, run_id, step_id, map_index, try_number, size_bytes, inline_value,
                           storage_ref, content_type, data_version, created_at)
      select asset_key, partition_key, run_id, step_id, map_index, try_number, size_bytes, inline_value::jsonb, storage_ref,
             content_type, data_version, ${now}
      from x
      on conflict (step_id, try_number) do update set
        size_bytes = excluded.size_bytes, inline_value = excluded.inline_value, data_version = excluded.data_version,
        created_at = excluded.created_at
    ), ev as (
      insert into events (kind, asset_key, partition_key, run_id, step_id, try_number, data_version, code_version, created_at)
      select 'materialization', asset_key, partition_key, run_id, step_id, try_number, data_version, code_version, ${now}
      from x where not x.output_only
      returning id, step_id
    ), l as (
      insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
      select ev.id, li.asset_key, li.partition_key, li.upstream_event_id
      from jsonb_to_recordset(${toJson(lineage)}::jsonb)
        as li(step_id bigint, asset_key text, partition_key text, upstream_event_id bigint)
      join ev on ev.step_id = li.step_id
    )
    insert into partition_status as ps (asset_key, partition_key, status, last_materialization_event_id, last_run_id,
                                        last_step_id, data_version, code_version, materialized_at, updated_at)
    -- One row per partition (ON CONFLICT cannot touch a row twice): the latest step wins.
    select distinct on (x.asset_key, x.partition_key)
           x.asset_key, x.partition_key, 'materialized', ev.id, x.run_id, x.step_id, x.data_version, x.code_version, ${now}, ${now}
    from x join ev on ev.step_id = x.step_id
    order by x.asset_key, x.partition_key, x.step_id desc
    on conflict (asset_key, partition_key) do update set
      status = excluded.status, last_materialization_event_id = excluded.last_materialization_event_id,
      last_step_id = excluded.last_step_id, last_run_id = excluded.last_run_id,
      data_version = excluded.data_version, code_version = excluded.code_version,
      materialized_at = excluded.materialized_at, updated_at = excluded.updated_at,
      failed_check = null`.execute(trx);
}

import { sql, type Kysely } from "kysely";
import type { Database } from "../database.js";
import type { GatheredItem, LineageInput } from "../run-store.js";
import { insertMaterializations, type LineageRow, type MaterializationRow } from "./materializations.js";
import { MAPPED_STEP_OF, type Trx } from "./step-rows.js";

/** What a gathered materialisation stores as its output: its value is its mapped steps' outputs, in item order. */
export const GATHERED_CONTENT_TYPE = "application/vnd.tributary.gathered+json";

/**
 * Expanded steps whose mapped steps all succeeded: the partition's materialisation, whose value is their
 * outputs in item order (read through the gathered output), whose data version digests theirs, and whose
 * lineage is what the expanding try read.
 */
export async function recordGathered(trx: Trx, stepIds: readonly number[], now: Date): Promise<void> {
  if (stepIds.length === 0) return;
  const { rows } = await sql<{
    id: number;
    run_id: string;
    try_number: number;
    asset_key: string;
    partition_key: string;
    map_count: number;
    map_inputs: { codeVersion: string | null; inputs: LineageInput[] } | null;
    size_bytes: number;
    digest: string;
  }>`
    select p.id, p.run_id, p.try_number, p.asset_key, p.partition_key, p.map_count, p.map_inputs,
           coalesce(sum(o.size_bytes), 0)::bigint as size_bytes,
           md5(string_agg(coalesce(o.data_version, ''), ',' order by c.map_index)) as digest
    from steps p
    join steps c on ${MAPPED_STEP_OF} and c.map_index < p.map_count
    left join lateral (select size_bytes, data_version from outputs where outputs.step_id = c.id order by try_number desc limit 1) o on true
    where p.id = any(${[...stepIds]}::bigint[])
    group by p.id`.execute(trx);
  const materializations: MaterializationRow[] = [];
  const lineage: LineageRow[] = [];
  for (const r of rows) {
    const id = Number(r.id);
    const codeVersion = r.map_inputs?.codeVersion ?? null;
    materializations.push({
      step_id: id,
      run_id: r.run_id,
      try_number: r.try_number,
      asset_key: r.asset_key,
      partition_key: r.partition_key,
      map_index: -1,
      data_version: `mapped:${r.map_count}:${codeVersion ?? ""}:${r.digest}`,
      code_version: codeVersion,
      size_bytes: Number(r.size_bytes),
      inline_value: JSON.stringify({ gathered: r.map_count }),
      storage_ref: null,
      content_type: GATHERED_CONTENT_TYPE,
      output_only: false,
    });
    for (const i of r.map_inputs?.inputs ?? []) {
      lineage.push({ step_id: id, asset_key: i.assetKey, partition_key: i.partitionKey, upstream_event_id: i.eventId });
    }
  }
  await insertMaterializations(trx, materializations, lineage, now);
}

/** Per expanded step: its mapped steps' latest outputs, in item order. */
export async function readGatheredOutputs(db: Kysely<Database>, stepIds: readonly number[]): Promise<Map<number, GatheredItem[]>> {
  const out = new Map<number, GatheredItem[]>();
  if (stepIds.length === 0) return out;
  const { rows } = await sql<{ parent: number; inline_value: unknown; storage_ref: string | null; has_output: boolean }>`
    select p.id as parent, o.inline_value, o.storage_ref, (o.id is not null) as has_output
    from steps p
    join steps c on ${MAPPED_STEP_OF} and c.map_index < p.map_count
    left join lateral (select id, inline_value, storage_ref from outputs where outputs.step_id = c.id order by try_number desc limit 1) o on true
    where p.id = any(${[...stepIds]}::bigint[])
    order by p.id, c.map_index`.execute(db);
  for (const r of rows) {
    const list = out.get(Number(r.parent)) ?? [];
    list.push({ inline: r.inline_value, ref: r.storage_ref, hasOutput: r.has_output });
    out.set(Number(r.parent), list);
  }
  return out;
}

import { sql, type Kysely } from "kysely";
import type { Database } from "../database.js";
import { toJson } from "../json.js";
import type { OutputRecord } from "../run-store.js";
import { GATHERED_CONTENT_TYPE, readGatheredOutputs } from "./gathered-outputs.js";

export async function latestOutputs(
  db: Kysely<Database>,
  partitions: readonly { assetKey: string; partitionKey: string }[],
): Promise<OutputRecord[]> {
  if (partitions.length === 0) return [];
  const input = toJson(partitions.map((p) => ({ asset_key: p.assetKey, partition_key: p.partitionKey })));
  const { rows } = await sql<{
    asset_key: string;
    partition_key: string;
    event_id: number | null;
    data_version: string | null;
    inline_value: unknown;
    storage_ref: string | null;
    has_output: boolean;
    gathered_from: number | null;
  }>`
    select ps.asset_key, ps.partition_key, ps.last_materialization_event_id as event_id, ps.data_version,
           coalesce(o.inline_value, obs.value) as inline_value, o.storage_ref, (o.id is not null or obs.value is not null) as has_output,
           case when o.content_type = ${GATHERED_CONTENT_TYPE} then ps.last_step_id end as gathered_from
    from jsonb_to_recordset(${input}::jsonb) as x(asset_key text, partition_key text)
    join partition_status ps on ps.asset_key = x.asset_key and ps.partition_key = x.partition_key
    left join lateral (
      select id, inline_value, storage_ref, content_type from outputs
      where outputs.step_id = ps.last_step_id order by try_number desc limit 1
    ) o on true
    -- A source partition's value is its latest observation: SourceObservation { observedAt, payload }.
    left join lateral (
      select jsonb_build_object('observedAt', to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                'payload', coalesce(e.metadata->'payload', 'null'::jsonb)) as value
      from events e where e.id = ps.last_materialization_event_id and e.kind = 'observation'
    ) obs on ps.last_step_id is null
    where ps.last_materialization_event_id is not null`.execute(db);
  const gathered = await readGatheredOutputs(
    db,
    rows.flatMap((r) => (r.gathered_from === null ? [] : [Number(r.gathered_from)])),
  );
  return rows.map((r) => ({
    assetKey: r.asset_key,
    partitionKey: r.partition_key,
    eventId: r.event_id === null ? null : Number(r.event_id),
    dataVersion: r.data_version,
    inline: r.inline_value,
    ref: r.storage_ref,
    hasOutput: r.has_output,
    ...(r.gathered_from === null ? {} : { gathered: gathered.get(Number(r.gathered_from)) ?? [] }),
  }));
}

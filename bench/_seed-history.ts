// Seeded asset history for benchmarks and UI tests: events, event_inputs (what
// each materialisation read) and partition_status written with bulk SQL, so
// that statuses, staleness and lineage are derived as in production. Split out
// of bench/api.ts so that other benchmarks and tests can seed the same way.
import { sql, type Kysely } from "kysely";
import { partitionSpace, type PartitionsSpec } from "../src/partitions/index.js";
import { toJson, type Database } from "../src/storage/index.js";

/** The API's clock: partition counts are exact at this instant. */
export const now = new Date("2026-01-01T00:00:00Z");
const HOUR = 3_600_000;

/** An hourly partitions definition with exactly `count` partitions at `now`. */
export function hourlyStart(count: number): string {
  return new Date(now.getTime() - count * HOUR).toISOString().slice(0, 16);
}

let seedState = 42;
export const random = () => (seedState = (seedState * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
/** Each scenario draws the same numbers whichever ran before it. */
export const resetRandom = () => void (seedState = 42);

export type SeedStatus = "materialized" | "stale" | "stale_code" | "failed" | "missing";

export interface SeedAsset {
  readonly key: string;
  readonly partitions: PartitionsSpec;
  /** Seed partitions [from, count(now)) of the asset. */
  readonly from: (count: number) => number;
  readonly status: (index: number) => SeedStatus;
  /** Read with the identity mapping (same partitions definition or a wider one with the same keys). */
  readonly upstreams: readonly string[];
  readonly codeVersion: string | null;
}

/**
 * Statuses in runs (lengths 1–400) of materialised (55 %), stale (15 %:
 * 2/3 upstream re-materialised, 1/3 code version), failed (10 %) and missing
 * (20 %), and 3 % of the partitions of materialised runs scattered to failed
 * or missing.
 */
export function mixedStatuses(count: number): SeedStatus[] {
  const out: SeedStatus[] = [];
  while (out.length < count) {
    const r = random();
    const run: SeedStatus = r < 0.55 ? "materialized" : r < 0.65 ? "stale" : r < 0.7 ? "stale_code" : r < 0.8 ? "failed" : "missing";
    const length = 1 + Math.floor(random() * 400);
    for (let i = 0; i < length && out.length < count; i++) {
      const s = random();
      out.push(run === "materialized" && s < 0.03 ? (s < 0.015 ? "failed" : "missing") : run);
    }
  }
  return out;
}

/**
 * Writes the seeded history: one materialisation event per materialised or
 * stale partition, its event_inputs (reading the upstream partition's latest
 * event at the time), its partition_status row; then, for partitions that
 * must be stale because an upstream changed, a newer event of that upstream
 * partition. Assets must come upstream first.
 */
export async function seedHistory(
  db: Kysely<Database>,
  assets: readonly SeedAsset[],
): Promise<{ events: number; inputs: number; statusRows: number }> {
  let id = 0;
  const latest = new Map<string, number>();
  const status = new Map<
    string,
    { asset_key: string; partition_key: string; status: string; event_id: number | null; code_version: string | null }
  >();
  const events: { id: number; asset_key: string; partition_key: string; code_version: string | null }[] = [];
  const inputs: { event_id: number; upstream_asset_key: string; upstream_partition_key: string; upstream_event_id: number | null }[] = [];
  const rerun = new Set<string>();
  const at = (asset: string, key: string) => `${asset}\u0000${key}`;
  for (const a of assets) {
    const space = partitionSpace(a.partitions);
    const count = space.count(now);
    for (let i = a.from(count); i < count; i++) {
      const s = a.status(i);
      if (s === "missing") continue;
      const key = space.keyAt(i);
      if (s === "failed") {
        status.set(at(a.key, key), { asset_key: a.key, partition_key: key, status: "failed", event_id: null, code_version: a.codeVersion });
        continue;
      }
      const eventId = ++id;
      const codeVersion = s === "stale_code" ? "old" : a.codeVersion;
      events.push({ id: eventId, asset_key: a.key, partition_key: key, code_version: codeVersion });
      for (const up of a.upstreams) {
        inputs.push({
          event_id: eventId,
          upstream_asset_key: up,
          upstream_partition_key: key,
          upstream_event_id: latest.get(at(up, key)) ?? null,
        });
        if (s === "stale") rerun.add(at(up, key));
      }
      latest.set(at(a.key, key), eventId);
      status.set(at(a.key, key), {
        asset_key: a.key,
        partition_key: key,
        status: "materialized",
        event_id: eventId,
        code_version: codeVersion,
      });
    }
  }
  for (const k of rerun) {
    const row = status.get(k);
    if (row?.event_id == null) continue; // a missing or failed upstream partition: nothing to re-materialise
    const eventId = ++id;
    events.push({ id: eventId, asset_key: row.asset_key, partition_key: row.partition_key, code_version: row.code_version });
    row.event_id = eventId;
    row.status = "materialized";
  }
  await inChunks(events, (rows) =>
    sql`insert into events (id, kind, asset_key, partition_key, code_version, created_at)
        select x.id, 'materialization', x.asset_key, x.partition_key, x.code_version, ${now}
        from jsonb_to_recordset(${toJson(rows)}::jsonb) as x(id bigint, asset_key text, partition_key text, code_version text)`.execute(db),
  );
  // The ids written are taken: the next event's is the one after (nothing written: the sequence is left as it is).
  if (id > 0) await sql`select setval('events_id_seq', ${id})`.execute(db);
  await inChunks(inputs, (rows) =>
    sql`insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
        select * from jsonb_to_recordset(${toJson(rows)}::jsonb)
          as x(event_id bigint, upstream_asset_key text, upstream_partition_key text, upstream_event_id bigint)`.execute(db),
  );
  await inChunks([...status.values()], (rows) =>
    sql`insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version, materialized_at, updated_at)
        select x.asset_key, x.partition_key, x.status, x.event_id, x.code_version, case when x.event_id is null then null else ${now}::timestamptz end, ${now}
        from jsonb_to_recordset(${toJson(rows)}::jsonb) as x(asset_key text, partition_key text, status text, event_id bigint, code_version text)`.execute(
      db,
    ),
  );
  await sql`analyze`.execute(db);
  return { events: events.length, inputs: inputs.length, statusRows: status.size };
}

async function inChunks<T>(rows: readonly T[], insert: (chunk: readonly T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += 20_000) await insert(rows.slice(i, i + 20_000));
}

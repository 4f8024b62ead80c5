import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Database, PartitionState } from "./database.js";
import { toJson } from "./json.js";
import {
  MAX_STALE_REASONS,
  type AssetCodeVersion,
  type KnownRecordedStatus,
  type RecordedStatusRead,
  type StoredPartitionState,
  type PartitionStatusRecord,
  type PartitionStatusStore,
  type RecordedPartitionState,
  type RecordedStatusCounts,
  type StaleReason,
} from "./partition-status-store.js";

/**
 * PartitionStatusStore in Postgres SQL (server Postgres and PGlite). Every
 * method is one statement whatever the number of assets or partitions; the
 * lookups it makes are index scans: partition_status and event_inputs by
 * primary key, unfinished steps by steps_asset_unfinished_idx.
 */
export class PgPartitionStatusStore implements PartitionStatusStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async staleKeys(assets: readonly AssetCodeVersion[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(assets.map((a) => [a.assetKey, []]));
    if (assets.length === 0) return out;
    const { rows } = await sql<{ asset_key: string; keys: string[] }>`
      with ${recorded(assets)}
      select asset_key, jsonb_agg(partition_key) as keys from rec where status = 'stale' group by asset_key`.execute(this.#db);
    for (const r of rows) out.set(r.asset_key, [...r.keys].sort(compare));
    return out;
  }

  async countByStatus(assets: readonly AssetCodeVersion[]): Promise<Map<string, RecordedStatusCounts>> {
    const out = new Map<string, RecordedStatusCounts>(assets.map((a) => [a.assetKey, emptyCounts()]));
    if (assets.length === 0) return out;
    const { rows } = await sql<{ asset_key: string; status: RecordedPartitionState; n: number }>`
      with ${classified(assets)}
      select asset_key, status, count(*)::int as n from classified where status <> 'missing' group by asset_key, status`.execute(this.#db);
    for (const r of rows) {
      const counts = out.get(r.asset_key);
      if (counts && r.status in counts) counts[r.status] = Number(r.n);
    }
    return out;
  }

  async keysByStatus(asset: AssetCodeVersion): Promise<Map<RecordedPartitionState, string[]>> {
    return (await this.keysByStatusOfMany([asset])).get(asset.assetKey)!;
  }

  async keysByStatusOfMany(assets: readonly AssetCodeVersion[]): Promise<Map<string, Map<RecordedPartitionState, string[]>>> {
    const out = new Map(assets.map((a) => [a.assetKey, new Map<RecordedPartitionState, string[]>()]));
    if (assets.length === 0) return out;
    const { rows } = await sql<{ asset_key: string; status: RecordedPartitionState; keys: string[] }>`
      with ${classified(assets)}
      select asset_key, status, jsonb_agg(partition_key) as keys from classified where status <> 'missing' group by asset_key, status`.execute(
      this.#db,
    );
    for (const r of rows) out.get(r.asset_key)?.set(r.status, r.keys);
    return out;
  }

  async recordedStatusOfMany(assets: readonly KnownRecordedStatus[]): Promise<Map<string, RecordedStatusRead>> {
    const out = new Map<string, RecordedStatusRead>();
    if (assets.length === 0) return out;
    const stale: KnownRecordedStatus[] = [];
    const known = assets.filter((a) => a.known !== undefined);
    if (known.length > 0) {
      // Still valid? Fingerprints of the assets and their upstreams, and the unfinished steps, in one statement.
      const fpKeys = [...new Set(known.flatMap((a) => [a.assetKey, ...a.known!.upstreamAssetKeys]))];
      const { rows } = await sql<{ kind: "fp" | "active"; asset_key: string; v: string }>`
        select 'fp' as kind, c.asset_key, ${changesFingerprint} as v
        from partition_status_changes c where c.asset_key = any(${fpKeys}::text[])
        group by c.asset_key
        union all
        select distinct 'active', s.asset_key, s.partition_key
        from steps s join runs r on r.id = s.run_id
        where s.asset_key = any(${known.map((a) => a.assetKey)}::text[]) and ${unfinishedStep} and r.status in ('queued', 'running')`.execute(
        this.#db,
      );
      const fps = new Map<string, string>();
      const active = new Map<string, string[]>(known.map((a) => [a.assetKey, []]));
      for (const r of rows) {
        if (r.kind === "fp") fps.set(r.asset_key, r.v);
        else active.get(r.asset_key)?.push(r.v);
      }
      for (const a of known) {
        const { upstreamAssetKeys, fingerprint } = a.known!;
        if (fingerprintOf(a.assetKey, upstreamAssetKeys, fps) === fingerprint)
          out.set(a.assetKey, { materializing: active.get(a.assetKey)! });
        else stale.push(a);
      }
    }
    const unknown = [...assets.filter((a) => a.known === undefined), ...stale];
    if (unknown.length === 0) return out;
    // Keys by recorded status, the upstream assets their latest events read, the fingerprints of both and the
    // unfinished steps: one statement, so the fingerprint versions exactly the snapshot the keys come from.
    const { rows } = await sql<{
      kind: "keys" | "up" | "fp" | "active";
      asset_key: string;
      v: string;
      keys: Record<StoredPartitionState, string[] | null> | null;
    }>`
      with ${recorded(unknown, { upstreams: true })}, ${activeSteps}, fpk as (
        select asset_key from t union select upstream_asset_key from ups
      )
      -- Grouped by asset alone, with one aggregate per status: a hash aggregate over few groups, where grouping by
      -- (asset, status) had the planner sort every row.
      select 'keys' as kind, asset_key, null as v,
             json_build_object(
               'materialized', json_agg(partition_key) filter (where status = 'materialized'),
               'failed', json_agg(partition_key) filter (where status = 'failed'),
               'stale', json_agg(partition_key) filter (where status = 'stale'),
               'timed_out', json_agg(partition_key) filter (where status = 'timed_out'),
               'erased', json_agg(partition_key) filter (where status = 'erased')
             ) as keys
      from rec where status <> 'missing' group by asset_key
      union all
      select 'up', asset_key, upstream_asset_key, null from ups
      union all
      -- An array, not a join: the join's estimate (every distinct input an upstream asset) cost millions of rows and
      -- had Postgres JIT-compile the statement (~0.1 s).
      select 'fp', c.asset_key, ${changesFingerprint}, null
      from partition_status_changes c where c.asset_key = any(array(select asset_key from fpk)) group by c.asset_key
      union all
      select 'active', asset_key, partition_key, null from active`.execute(this.#db);
    const keys = new Map(unknown.map((a) => [a.assetKey, new Map<StoredPartitionState, string[]>()]));
    const ups = new Map<string, string[]>(unknown.map((a) => [a.assetKey, []]));
    const fps = new Map<string, string>();
    const active = new Map<string, string[]>(unknown.map((a) => [a.assetKey, []]));
    for (const r of rows) {
      if (r.kind === "keys") {
        for (const [status, list] of Object.entries(r.keys ?? {}) as [StoredPartitionState, string[] | null][]) {
          if (list) keys.get(r.asset_key)?.set(status, list);
        }
      } else if (r.kind === "up") ups.get(r.asset_key)?.push(r.v);
      else if (r.kind === "fp") fps.set(r.asset_key, r.v);
      else active.get(r.asset_key)?.push(r.v);
    }
    for (const a of unknown) {
      const upstreamAssetKeys = ups.get(a.assetKey)!.sort(compare);
      out.set(a.assetKey, {
        materializing: active.get(a.assetKey)!,
        recorded: {
          version: { fingerprint: fingerprintOf(a.assetKey, upstreamAssetKeys, fps), upstreamAssetKeys },
          keys: keys.get(a.assetKey)!,
        },
      });
    }
    return out;
  }

  /** In the order of `partitionKeys`. */
  async partitionStates(asset: AssetCodeVersion, partitionKeys: readonly string[]): Promise<Map<string, PartitionStatusRecord>> {
    const out = new Map<string, PartitionStatusRecord>();
    if (partitionKeys.length === 0) return out;
    const { rows } = await sql<{
      partition_key: string;
      status: string | null;
      code_version: string | null;
      data_version: string | null;
      event_id: number | string | null;
      materialized_at: Date | null;
      last_run_id: string | null;
      active: boolean;
      ups: [string, string, number | null, number][] | null;
    }>`
      with k as (
        select key, ord from jsonb_array_elements_text(${toJson([...new Set(partitionKeys)])}::jsonb) with ordinality as k(key, ord)
      )
      select k.key as partition_key, ps.status, ps.code_version, ps.data_version, ps.last_materialization_event_id as event_id,
             ps.materialized_at, ps.last_run_id,
             exists (
               select 1 from steps s join runs r on r.id = s.run_id
               where s.asset_key = ${asset.assetKey} and s.partition_key = k.key and ${unfinishedStep} and r.status in ('queued', 'running')
             ) as active,
             u.ups
      from k
      left join partition_status ps on ps.asset_key = ${asset.assetKey} and ps.partition_key = k.key
      left join lateral (
        select jsonb_agg(jsonb_build_array(x.upstream_asset_key, x.upstream_partition_key, x.upstream_event_id, x.latest)
                         order by x.upstream_asset_key, x.upstream_partition_key) as ups
        from (
          select ei.upstream_asset_key, ei.upstream_partition_key, ei.upstream_event_id, up.last_materialization_event_id as latest
          from event_inputs ei
          join partition_status up on up.asset_key = ei.upstream_asset_key and up.partition_key = ei.upstream_partition_key
          where ei.event_id = ps.last_materialization_event_id and ${upstreamIsNewer}
          order by ei.upstream_asset_key, ei.upstream_partition_key
          limit ${MAX_STALE_REASONS + 1}
        ) x
      ) u on ps.status is not null
      order by k.ord
    `.execute(this.#db);
    for (const r of rows) {
      const eventId = r.event_id === null ? null : Number(r.event_id);
      const reasons: StaleReason[] = [];
      // An erased partition keeps its latest materialisation's record, but its data is gone: nothing to be stale.
      const materialized = r.status !== null && r.status !== "failed" && r.status !== "erased" && eventId !== null;
      if (materialized && r.code_version !== null && asset.codeVersion !== null && r.code_version !== asset.codeVersion) {
        reasons.push({ kind: "code_version_changed", materializedWith: r.code_version, current: asset.codeVersion });
      }
      const ups = materialized ? (r.ups ?? []) : [];
      for (const [a, p, read, latest] of ups.slice(0, MAX_STALE_REASONS)) {
        reasons.push({
          kind: "upstream_updated",
          upstreamAssetKey: a,
          upstreamPartitionKey: p,
          readEventId: read === null ? null : Number(read),
          latestEventId: Number(latest),
        });
      }
      let status: PartitionState;
      if (r.active) status = "materializing";
      else if (r.status === "failed" || r.status === "timed_out" || r.status === "erased") status = r.status;
      else if (!materialized) status = "missing";
      else status = reasons.length > 0 ? "stale" : "materialized";
      out.set(r.partition_key, {
        partitionKey: r.partition_key,
        status,
        staleReasons: reasons,
        moreStaleUpstreams: ups.length > MAX_STALE_REASONS,
        lastMaterializationEventId: eventId,
        dataVersion: r.data_version,
        materializedAt: r.materialized_at,
        lastRunId: r.last_run_id,
      });
    }
    return out;
  }
}

/**
 * Literal states, not a parameter: the planner uses the partial index
 * steps_asset_unfinished_idx only when it can prove the query's predicate
 * implies the index's (see migrations/0005_staleness.sql).
 */
/** A step that will still materialise its partition (a check's step materialises nothing). */
const unfinishedStep = sql`s.state in ('pending', 'scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule', 'deferred') and s.check_name is null`;

/** An upstream partition (`up`) has a newer event than the one the input (`ei`) read. */
const upstreamIsNewer = sql`up.last_materialization_event_id is not null
  and up.last_materialization_event_id is distinct from ei.upstream_event_id`;

/**
 * CTEs `t` (the assets), `ps` (their partition_status rows), `newer` (their
 * materialised partitions that read an upstream partition which has a newer
 * event since) and `rec`: each row's recorded status, staleness included.
 * Joins rather than a correlated EXISTS: the planner may then pick hash joins
 * over the asset's rows, and never hashes event_inputs of other assets.
 *
 * recordedStatusOfMany versions what this derives with `changesFingerprint`: a
 * status that comes to read another table must be versioned there too.
 */
function recorded(assets: readonly AssetCodeVersion[], options: { readonly upstreams?: boolean } = {}): RawBuilder<unknown> {
  // unnest of arrays, not a JSON record set: Postgres estimates unnest from the arrays' length (a record set is always
  // "100 rows"), so one asset is joined by index and ten thousand by hash, instead of the other way round.
  const keys = assets.map((a) => a.assetKey);
  const codes = assets.map((a) => a.codeVersion);
  // With `upstreams`, also `ups`: the upstream assets the latest events read. The inputs are then joined once
  // (a CTE read twice is computed once), not once for `newer` and again for `ups`.
  const newer = options.upstreams
    ? sql`inputs as (
      select ps.asset_key, ps.partition_key, ps.status, ei.upstream_asset_key, ei.upstream_partition_key, ei.upstream_event_id
      from ps join event_inputs ei on ei.event_id = ps.last_materialization_event_id
    ), ups as (
      select distinct asset_key, upstream_asset_key from inputs
    ), newer as (
      select distinct ei.asset_key, ei.partition_key
      from inputs ei
      join partition_status up on up.asset_key = ei.upstream_asset_key and up.partition_key = ei.upstream_partition_key
      where ei.status not in ('failed', 'erased') and ${upstreamIsNewer}
    )`
    : sql`newer as (
      select distinct ps.asset_key, ps.partition_key
      from ps
      join event_inputs ei on ei.event_id = ps.last_materialization_event_id
      join partition_status up on up.asset_key = ei.upstream_asset_key and up.partition_key = ei.upstream_partition_key
      where ps.status not in ('failed', 'erased') and ${upstreamIsNewer}
    )`;
  return sql`t as (
      select * from unnest(${keys}::text[], ${codes}::text[]) as t(asset_key, code_version)
    ), ps as (
      select ps.asset_key, ps.partition_key, ps.status, ps.code_version, ps.last_materialization_event_id, t.code_version as current_code
      from t join partition_status ps on ps.asset_key = t.asset_key
    ), ${newer}, rec as (
      select ps.asset_key, ps.partition_key,
             case
               when ps.status = 'failed' then 'failed'
               when ps.status = 'timed_out' then 'timed_out'
               when ps.status = 'erased' then 'erased'
               when ps.last_materialization_event_id is null then 'missing'
               when (ps.code_version is not null and ps.current_code is not null and ps.code_version <> ps.current_code)
                 or newer.partition_key is not null then 'stale'
               else 'materialized'
             end as status
      from ps left join newer on newer.asset_key = ps.asset_key and newer.partition_key = ps.partition_key
    )`;
}

/** Partitions of the assets `t` with an unfinished step. */
const activeSteps = sql`active as (
      select distinct s.asset_key, s.partition_key
      from t join steps s on s.asset_key = t.asset_key
      join runs r on r.id = s.run_id
      where ${unfinishedStep} and r.status in ('queued', 'running')
    )`;

/** {@link recorded} plus `active` (partitions with an unfinished step) and `classified`: the derived status of each. */
function classified(assets: readonly AssetCodeVersion[]): RawBuilder<unknown> {
  return sql`${recorded(assets)}, ${activeSteps}, classified as (
      select coalesce(rec.asset_key, active.asset_key) as asset_key,
             coalesce(rec.partition_key, active.partition_key) as partition_key,
             case when active.partition_key is not null then 'materializing' else rec.status end as status
      from rec full join active on active.asset_key = rec.asset_key and active.partition_key = rec.partition_key
    )`;
}

/**
 * Over the partition_status_changes rows `c` of one asset (grouped by asset_key): their number and the XOR of a
 * 64-bit hash of each row's id and transaction. The triggers on partition_status append a row for every statement
 * that writes an asset's statuses, so a new write, a write committed late (its row is new to the reader, whatever its
 * id) and a pruned row all change it, but for a hash collision (2^-64); transaction ids keep it apart from rows
 * numbered again after a reset of the sequences. The statuses derive from partition_status rows alone (the event
 * inputs a status reads are written with it), so this versions them.
 */
const changesFingerprint = sql<string>`count(*)::text || ':' || bit_xor(hashtextextended(c.id::text || ':' || c.tx_id::text, 0))::text`;

/** The fingerprint of an asset's recorded statuses: of its rows and its upstreams' (an asset without rows counts as 0). */
function fingerprintOf(assetKey: string, upstreamAssetKeys: readonly string[], fingerprints: ReadonlyMap<string, string>): string {
  return JSON.stringify([...new Set([assetKey, ...upstreamAssetKeys])].map((k) => [k, fingerprints.get(k) ?? "0"]));
}

function emptyCounts(): RecordedStatusCounts {
  return { materializing: 0, materialized: 0, failed: 0, stale: 0, timed_out: 0, erased: 0 };
}

/** Code-unit order, as partition keys are compared everywhere else. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Database, PartitionState } from "./database.js";
import { toJson } from "./json.js";
import { intArray, textArray } from "./pg-arrays.js";
import { withPlannerSettings } from "./planner-settings.js";
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
  type StoredStatusSummary,
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
    if (assets.length === 0) return new Map();
    // Without JIT: over thousands of assets the planner's estimates of the unnested arrays run high enough to compile
    // the statements, which cost 0.4 s on statements that run in a few milliseconds. With more memory for hashes and
    // CTEs than the default 4 MB: an asset of 100 000 partitions otherwise spills its inputs to disk (about 10 % slower).
    return withPlannerSettings(this.#db, { jit: "off", work_mem: "32MB" }, (trx) => recordedStatusIn(trx, assets));
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

  async storedSummaries(
    assets: readonly { readonly assetKey: string; readonly definition: string }[],
  ): Promise<Map<string, StoredStatusSummary>> {
    const out = new Map<string, StoredStatusSummary>();
    if (assets.length === 0) return out;
    const { rows } = await sql<{
      asset_key: string;
      definition: string;
      snapshot: string;
      upstream_asset_keys: string[];
      subsets: Record<string, string>;
      age_ms: number;
    }>`
      select s.asset_key, s.definition, s.snapshot, s.upstream_asset_keys, s.subsets,
             greatest(0, extract(epoch from now() - s.updated_at) * 1000)::float8 as age_ms
      from unnest(${assets.map((a) => a.assetKey)}::text[], ${assets.map((a) => a.definition)}::text[]) as k(asset_key, definition)
      join partition_status_summaries s on s.asset_key = k.asset_key and s.definition = k.definition
      -- A snapshot names transaction ids of one cluster: a copy restored into another does not hold, nor one whose
      -- snapshot is ahead of this database's transaction ids.
      where s.system_identifier = ${thisCluster}
        and pg_snapshot_xmax(s.snapshot::pg_snapshot) <= pg_snapshot_xmax(pg_current_snapshot())`.execute(this.#db);
    for (const r of rows) {
      out.set(r.asset_key, {
        assetKey: r.asset_key,
        definition: r.definition,
        version: { snapshot: r.snapshot, upstreamAssetKeys: r.upstream_asset_keys },
        subsets: r.subsets,
        ageMs: Number(r.age_ms),
      });
    }
    return out;
  }

  async storeSummaries(summaries: readonly StoredStatusSummary[]): Promise<void> {
    // The latest of each asset (ON CONFLICT cannot touch a row twice), in key order (two writers lock alike).
    const latest = [...new Map(summaries.map((s) => [s.assetKey, s])).values()].sort((a, b) => compare(a.assetKey, b.assetKey));
    if (latest.length === 0) return;
    const rows = latest.map((s) => ({
      asset_key: s.assetKey,
      definition: s.definition,
      snapshot: s.version.snapshot,
      upstream_asset_keys: s.version.upstreamAssetKeys,
      subsets: s.subsets,
    }));
    await sql`
      insert into partition_status_summaries as s (asset_key, definition, system_identifier, snapshot, upstream_asset_keys, subsets, updated_at)
      select x.asset_key, x.definition, ${thisCluster}, x.snapshot,
             array(select jsonb_array_elements_text(x.upstream_asset_keys)), x.subsets, now()
      from jsonb_to_recordset(${toJson(rows)}::jsonb)
        as x(asset_key text, definition text, snapshot text, upstream_asset_keys jsonb, subsets jsonb)
      on conflict (asset_key) do update set
        definition = excluded.definition,
        system_identifier = excluded.system_identifier,
        snapshot = excluded.snapshot,
        upstream_asset_keys = excluded.upstream_asset_keys,
        subsets = excluded.subsets,
        updated_at = excluded.updated_at`.execute(this.#db);
  }
}

/** The cluster's identifier, which the transaction ids of its snapshots belong to. */
const thisCluster = sql`(select system_identifier::text from pg_control_system())`;

/** Partitions of an asset derived again one by one after a change; more are read with the rest of the asset. */
const MAX_DERIVED = 10_000;

/** {@link PgPartitionStatusStore.recordedStatusOfMany} on `db`. */
async function recordedStatusIn(db: Kysely<Database>, assets: readonly KnownRecordedStatus[]): Promise<Map<string, RecordedStatusRead>> {
  const out = new Map<string, RecordedStatusRead>();
  const full = assets.filter((a) => a.known === undefined);
  const known = assets.filter((a) => a.known !== undefined);
  if (known.length > 0) {
    const since = await changesSince(db, known);
    // So many partitions to derive again (an unpartitioned upstream written again, say) that reading them all costs
    // less than naming each: read the asset in full.
    for (const [key, keys] of since.changes) if (keys.length > MAX_DERIVED) since.changes.delete(key);
    const touched = known.filter((a) => since.changes.get(a.assetKey)?.length);
    const derived = touched.length > 0 ? await derive(db, touched, since.changes) : undefined;
    for (const a of known) {
      const keys = since.changes.get(a.assetKey);
      if (!keys) {
        full.push(a);
        continue;
      }
      const statuses = derived?.statuses.get(a.assetKey);
      const upstreamAssetKeys = [...new Set([...a.known!.upstreamAssetKeys, ...(derived?.upstreams.get(a.assetKey) ?? [])])].sort(compare);
      out.set(a.assetKey, {
        materializing: since.active.get(a.assetKey)!,
        version: { snapshot: since.snapshot, upstreamAssetKeys },
        changed: new Map(keys.map((k) => [k, statuses?.get(k) ?? null])),
      });
    }
  }
  if (full.length === 0) return out;
  // Keys by recorded status, the upstream assets their latest events read, the snapshot and the unfinished steps:
  // one statement, so the snapshot versions exactly what the keys come from.
  const { rows } = await sql<{
    kind: "keys" | "up" | "snapshot" | "active";
    asset_key: string;
    v: string;
    keys: Record<StoredPartitionState, string[] | null> | null;
  }>`
    with ${recorded(full, { upstreams: true })}, ${activeSteps}
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
    select 'snapshot', null, pg_current_snapshot()::text, null
    union all
    select 'active', asset_key, partition_key, null from active`.execute(db);
  const keys = new Map(full.map((a) => [a.assetKey, new Map<StoredPartitionState, string[]>()]));
  const ups = new Map<string, string[]>(full.map((a) => [a.assetKey, []]));
  const active = new Map<string, string[]>(full.map((a) => [a.assetKey, []]));
  let snapshot = "";
  for (const r of rows) {
    if (r.kind === "keys") {
      for (const [status, list] of Object.entries(r.keys ?? {}) as [StoredPartitionState, string[] | null][]) {
        if (list) keys.get(r.asset_key)?.set(status, list);
      }
    } else if (r.kind === "up") ups.get(r.asset_key)?.push(r.v);
    else if (r.kind === "snapshot") snapshot = r.v;
    else active.get(r.asset_key)?.push(r.v);
  }
  for (const a of full) {
    out.set(a.assetKey, {
      materializing: active.get(a.assetKey)!,
      version: { snapshot, upstreamAssetKeys: ups.get(a.assetKey)!.sort(compare) },
      recorded: { keys: keys.get(a.assetKey)! },
    });
  }
  return out;
}

/**
 * What changed since each asset's known version: per asset whose changes can all be found, the partitions to
 * derive again (its own partitions that change rows committed after the version's snapshot name, and those whose
 * latest event read an upstream partition they name); none for an asset that must be read in full (a change row
 * without keys, or pruning deleted rows of the asset or of a watched upstream from a transaction the snapshot may not
 * have seen). Also the unfinished steps
 * and this statement's snapshot, the assets' new version.
 */
async function changesSince(
  db: Kysely<Database>,
  assets: readonly KnownRecordedStatus[],
): Promise<{
  changes: Map<string, string[]>;
  active: Map<string, string[]>;
  snapshot: string;
}> {
  // Compact parameters (thousands of assets cost tens of milliseconds to send as text): the distinct snapshots, each
  // asset with its snapshot's number, each watched asset with its reader's number.
  const snapshots = [...new Set(assets.map((a) => a.known!.snapshot))];
  const snapshotNumber = new Map(snapshots.map((s, i) => [s, i + 1]));
  const assetKeys = assets.map((a) => a.assetKey);
  const owners: number[] = [];
  const watched: string[] = [];
  assets.forEach((a, i) => {
    for (const w of new Set([a.assetKey, ...a.known!.upstreamAssetKeys])) {
      owners.push(i + 1);
      watched.push(w);
    }
  });
  // Built once: the watched pairs are unnested twice.
  const watchedOwners = intArray(owners);
  const watchedKeys = textArray(watched);
  const { rows } = await sql<{ kind: "lost" | "touched" | "active" | "snapshot"; asset_key: string; v: string }>`
    with s as (
      select i, snap::pg_snapshot as snap from unnest(${textArray(snapshots)}::text[]) with ordinality as s(snap, i)
    ), k as (
      select k.i, k.asset_key, s.snap
      from unnest(${textArray(assetKeys)}::text[], ${intArray(assets.map((a) => snapshotNumber.get(a.known!.snapshot)!))}::int[])
        with ordinality as k(asset_key, s, i)
      join s on s.i = k.s
    ), news as (
      select k.asset_key as owner, w.watched, c.partition_keys
      from unnest(${watchedOwners}::int[], ${watchedKeys}::text[]) as w(o, watched)
      join k on k.i = w.o
      join partition_status_changes c on c.asset_key = w.watched
      where not pg_visible_in_snapshot(c.tx_id, k.snap)
    ), lost as (
      -- Change rows of the asset or of an upstream it read pruned after the snapshot: what they named is unknown.
      select k.asset_key
      from unnest(${watchedOwners}::int[], ${watchedKeys}::text[]) as w(o, watched)
      join k on k.i = w.o
      join partition_status_changes_pruned_assets p on p.asset_key = w.watched
      where p.through_tx >= pg_snapshot_xmin(k.snap)::text::bigint
      union
      select owner from news where partition_keys is null
    ), written as (
      select distinct n.owner, n.watched, p.key
      from news n cross join unnest(n.partition_keys) as p(key)
      where n.owner not in (select asset_key from lost)
    ), touched as (
      select owner as asset_key, key as partition_key from written where watched = owner
      union
      select w.owner, ps.partition_key
      from written w
      join event_inputs ei on ei.upstream_asset_key = w.watched and ei.upstream_partition_key = w.key
      join partition_status ps on ps.last_materialization_event_id = ei.event_id and ps.asset_key = w.owner
    ), t as (
      select asset_key from k
    ), ${activeSteps}
    select 'lost' as kind, asset_key, null as v from lost
    union all
    select 'touched', asset_key, partition_key from touched
    union all
    select 'active', asset_key, partition_key from active
    union all
    select 'snapshot', null, pg_current_snapshot()::text`.execute(db);
  const changes = new Map<string, string[]>(assetKeys.map((k) => [k, []]));
  const active = new Map<string, string[]>(assetKeys.map((k) => [k, []]));
  let snapshot = "";
  for (const r of rows) {
    if (r.kind === "touched") changes.get(r.asset_key)?.push(r.v);
    else if (r.kind === "active") active.get(r.asset_key)?.push(r.v);
    else if (r.kind === "snapshot") snapshot = r.v;
  }
  for (const r of rows) if (r.kind === "lost") changes.delete(r.asset_key);
  return { changes, active, snapshot };
}

/**
 * The recorded status of the given partitions (null: no record) and the upstream assets their latest events read.
 * Read after the snapshot that found them changed: a later write they show is found again from that snapshot.
 */
async function derive(
  db: Kysely<Database>,
  assets: readonly AssetCodeVersion[],
  partitions: ReadonlyMap<string, readonly string[]>,
): Promise<{ statuses: Map<string, Map<string, StoredPartitionState | null>>; upstreams: Map<string, string[]> }> {
  const pairs = assets.flatMap((a) => (partitions.get(a.assetKey) ?? []).map((k) => [a.assetKey, k] as const));
  const { rows } = await sql<{ kind: "status" | "up"; asset_key: string; v: string; status: StoredPartitionState | "missing" | null }>`
    with ${recorded(assets, { upstreams: true, only: pairs })}
    select 'status' as kind, asset_key, partition_key as v, status from rec
    union all
    select 'up', asset_key, upstream_asset_key, null from ups`.execute(db);
  const statuses = new Map(assets.map((a) => [a.assetKey, new Map<string, StoredPartitionState | null>()]));
  const upstreams = new Map<string, string[]>(assets.map((a) => [a.assetKey, []]));
  for (const r of rows) {
    if (r.kind === "up") upstreams.get(r.asset_key)?.push(r.v);
    else statuses.get(r.asset_key)?.set(r.v, r.status === "missing" ? null : r.status);
  }
  return { statuses, upstreams };
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
 * recordedStatusOfMany versions what this derives by the partition_status
 * change rows of the asset and of the upstreams it read: a status that comes
 * to read another table must be versioned there too.
 */
function recorded(
  assets: readonly AssetCodeVersion[],
  options: { readonly upstreams?: boolean; readonly only?: readonly (readonly [assetKey: string, partitionKey: string])[] } = {},
): RawBuilder<unknown> {
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
      -- Only the upstreams' rows: a hash join over partition_status otherwise hashes every asset's rows.
      where up.asset_key = any(array(select upstream_asset_key from ups)) and ei.status not in ('failed', 'erased') and ${upstreamIsNewer}
    )`
    : sql`newer as (
      select distinct ps.asset_key, ps.partition_key
      from ps
      join event_inputs ei on ei.event_id = ps.last_materialization_event_id
      join partition_status up on up.asset_key = ei.upstream_asset_key and up.partition_key = ei.upstream_partition_key
      where ps.status not in ('failed', 'erased') and ${upstreamIsNewer}
    )`;
  // With `only`, those partitions of the assets, recorded or not (a partition without a row derives as missing).
  const ps = options.only
    ? sql`select o.asset_key, o.partition_key, ps.status, ps.code_version, ps.last_materialization_event_id, t.code_version as current_code
      from unnest(${textArray(options.only.map((o) => o[0]))}::text[], ${textArray(options.only.map((o) => o[1]))}::text[])
        as o(asset_key, partition_key)
      join t on t.asset_key = o.asset_key
      left join partition_status ps on ps.asset_key = o.asset_key and ps.partition_key = o.partition_key`
    : sql`select ps.asset_key, ps.partition_key, ps.status, ps.code_version, ps.last_materialization_event_id, t.code_version as current_code
      from t join partition_status ps on ps.asset_key = t.asset_key`;
  return sql`t as (
      select * from unnest(${textArray(keys)}::text[], ${textArray(codes)}::text[]) as t(asset_key, code_version)
    ), ps as (
      ${ps}
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

function emptyCounts(): RecordedStatusCounts {
  return { materializing: 0, materialized: 0, failed: 0, stale: 0, timed_out: 0, erased: 0 };
}

/** Code-unit order, as partition keys are compared everywhere else. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

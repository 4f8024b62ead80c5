import { createHash } from "node:crypto";
import type { SnapshotAsset } from "../graph/index.js";
import {
  dynamicNames,
  loadPartitionContext,
  loadPartitionSpace,
  partitionSpace,
  PartitionSubset,
  type PartitionSpace,
} from "../partitions/index.js";
import type {
  PartitionState,
  PartitionStatusStore,
  RecordedPartitionState,
  RecordedStatusCounts,
  StoredStatusSummary,
} from "../storage/index.js";
export type PartitionStatusCounts = Record<PartitionState, number> & { total: number };

/** Consecutive partitions (in the partition space's order) with one status. */
export interface PartitionStatusRange {
  readonly status: PartitionState;
  /** First and last key, both included ('' for an unpartitioned asset). */
  readonly from: string;
  readonly to: string;
  readonly count: number;
}

export interface PartitionStatusSummary {
  readonly counts: PartitionStatusCounts;
  /** Present when asked for: covers every existing partition, oldest first. */
  readonly ranges?: readonly PartitionStatusRange[];
}

const RECORDED: readonly RecordedPartitionState[] = ["materializing", "materialized", "failed", "stale", "timed_out", "erased"];

/** The store's types for callers that cache (see PartitionStatusStore.recordedStatusOfMany). */
type RecordedStatusOfMany = PartitionStatusStore["recordedStatusOfMany"];
export type KnownRecordedStatus = Parameters<RecordedStatusOfMany>[0][number];
export type RecordedStatusVersion = NonNullable<KnownRecordedStatus["known"]>;
export type RecordedStatusRead = Awaited<ReturnType<RecordedStatusOfMany>> extends ReadonlyMap<string, infer R> ? R : never;
type StoredPartitionState = Exclude<RecordedPartitionState, "materializing">;
const STORED: readonly StoredPartitionState[] = ["materialized", "failed", "stale", "timed_out", "erased"];

/** Recorded statuses of an asset folded into its partition space's indices, and what they were derived from. */
interface CachedStatuses {
  readonly version: RecordedStatusVersion;
  /** Indices of every key of the space (existing yet or not): the partitions that exist are clamped per answer. */
  readonly subsets: ReadonlyMap<StoredPartitionState, PartitionSubset>;
  /** The subsets' ranges, counted against the cache's budget. */
  readonly ranges: number;
  /** When the database's copy of these statuses was written (`Date.now()`), if this server knows of one. */
  readonly storedAt?: number | undefined;
}

/** Assets with at least this many partitions have their folded statuses kept in the database too. */
export const STORED_SUMMARY_MIN_PARTITIONS = 1_000;

/** The database's copy of an asset's statuses is written again after a change when it is older than this. */
export const STORED_SUMMARY_REFRESH_MS = 30_000;

function rangesOf(subsets: ReadonlyMap<StoredPartitionState, PartitionSubset>): number {
  let n = 1;
  for (const subset of subsets.values()) n += subset.rangeCount;
  return n;
}

/**
 * The asset page's partition bar asks for the ranges of an asset with up to
 * 100 000 partitions on every visit; deriving them (staleness joins, then a
 * fold of every recorded key) costs about a quarter of a second. This keeps the
 * folded recorded statuses per asset, code version and partition space, with
 * the version they were read at (see RecordedStatusVersion). An answer then
 * costs one statement that finds the changes since (in the change rows that
 * writers of the asset's and its upstreams' statuses append) and the
 * unfinished steps; when partitions changed, one more that derives those
 * partitions again, whose statuses replace theirs in the fold. An asset whose
 * changes cannot all be found (a write of more than 1 000 partitions at once,
 * or a version older than the change rows kept), or with more than 10 000
 * partitions to derive again, is read and folded again in full.
 *
 * What is never cached: `materializing` (unfinished steps, read every time) and
 * which partitions exist (a time space grows with `now`: cached subsets hold
 * indices of keys existing yet or not, and each answer clamps them).
 *
 * An asset of {@link STORED_SUMMARY_MIN_PARTITIONS} partitions or more also
 * has its fold kept in the database (PartitionStatusStore.storeSummaries),
 * written after a full read and, after changes, at most every
 * {@link STORED_SUMMARY_REFRESH_MS}. A server that has not read the asset yet
 * starts from that copy, validated and brought up to date like its own.
 *
 * One per server (per database): entries of one database never answer for another.
 */
export class PartitionStatusCache {
  readonly #entries = new Map<string, CachedStatuses>();
  readonly #maxEntries: number;
  readonly #maxRanges: number;
  /** Ranges held by all entries: what the cache's memory grows with. */
  #ranges = 0;

  /**
   * @param options.maxEntries the least recently used asset is dropped beyond it (50 000: the counts of every asset of
   *   a large catalog stay answerable by a version check).
   * @param options.maxRanges likewise beyond this many ranges over all entries (1 000 000, some 16 MB): an asset of
   *   100 000 partitions in mixed statuses holds a few thousand.
   */
  constructor(options: { readonly maxEntries?: number; readonly maxRanges?: number } = {}) {
    this.#maxEntries = options.maxEntries ?? 50_000;
    this.#maxRanges = options.maxRanges ?? 1_000_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `key`, now the most recently used. */
  lookup(key: string): CachedStatuses | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry;
  }

  /** Keeps what was just read for `key` (`storedAt`: when the database's copy was written, if it was). */
  fill(key: string, version: RecordedStatusVersion, subsets: ReadonlyMap<StoredPartitionState, PartitionSubset>, storedAt?: number): void {
    const previous = this.#entries.get(key);
    const entry = {
      version,
      subsets,
      ranges: previous?.subsets === subsets ? previous.ranges : rangesOf(subsets),
      storedAt: storedAt ?? previous?.storedAt,
    };
    // Replaced in place (a lookup made it the most recently used): deleting and adding every answered entry would
    // leave the map's front full of deleted slots, which each eviction scan then walks.
    this.#entries.set(key, entry);
    this.#ranges += entry.ranges - (previous?.ranges ?? 0);
    if (this.#entries.size <= this.#maxEntries && this.#ranges <= this.#maxRanges) return;
    for (const [oldest, old] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#ranges <= this.#maxRanges) break;
      if (oldest !== key) this.#drop(oldest, old);
    }
  }

  #drop(key: string, entry: CachedStatuses): void {
    this.#entries.delete(key);
    this.#ranges -= entry.ranges;
  }
}

interface SummaryOptions {
  readonly withRanges: boolean;
  readonly now: Date;
  readonly dynamicKeys: (name: string) => Promise<readonly string[]>;
}

/**
 * Counts (and, when asked, ranges) of an asset's existing partitions by status.
 *
 * With a `cache` (what the API uses), the recorded statuses of the asset are
 * folded into index subsets once and kept while their version holds (see
 * {@link PartitionStatusCache}); counts and ranges both come from that fold and
 * are exact, and an unchanged asset costs a version check, not a count: the
 * `assets { partitionStatus { counts } }` of thousands of assets reads no
 * partition rows on a repeated request. `store.recordedStatusOfMany` is called
 * with this asset alone (a caller batches).
 *
 * Without a cache, counts alone come from one SQL aggregate (`counts`); they
 * count every recorded partition of the asset, so after its partitions
 * definition shrank, records of keys that left it are counted until they are
 * cleared. Ranges read the recorded keys of the asset (one query, one short
 * string per recorded partition; nothing per missing partition) and fold them.
 */
export async function partitionStatusSummary(
  asset: SnapshotAsset,
  options: SummaryOptions &
    (
      | {
          readonly store: Pick<PartitionStatusStore, "keysByStatus">;
          readonly cache?: undefined;
          /** The recorded counts of this asset (see PartitionStatusStore.countByStatus). */
          readonly counts: () => Promise<RecordedStatusCounts>;
        }
      | { readonly store: CachingStore; readonly cache: PartitionStatusCache }
    ),
): Promise<PartitionStatusSummary> {
  if (!options.cache) {
    const space = asset.partitions ? await loadPartitionSpace(asset.partitions, options.dynamicKeys) : undefined;
    const total = space ? space.count(options.now) : 1;
    if (options.withRanges) {
      const keys = await options.store.keysByStatus({ assetKey: asset.key, codeVersion: asset.codeVersion });
      const stored = new Map(STORED.map((status) => [status, toSubset(keys.get(status) ?? [], space)]));
      return summaryOf(stored, toSubset(keys.get("materializing") ?? [], space), space, total, true);
    }
    const recorded = await options.counts();
    const known = RECORDED.reduce((n, s) => n + recorded[s], 0);
    return { counts: { ...recorded, missing: Math.max(0, total - known), total } };
  }
  return (await partitionStatusSummaries([asset], { ...options, cache: options.cache, store: options.store })).get(asset)!;
}

/**
 * {@link partitionStatusSummary} of many assets at once, with a cache: the dynamic partition keys they use are read
 * once, `store.recordedStatusOfMany` is called once for all of them, and the rest is a loop without awaits (thousands
 * of assets of an `assets { partitionStatus { counts } }` cost one statement and no await each). Counts and ranges
 * come from the same fold, so an unchanged asset costs a version check, not a count.
 */
export async function partitionStatusSummaries(
  assets: readonly SnapshotAsset[],
  options: SummaryOptions & { readonly store: CachingStore; readonly cache: PartitionStatusCache },
): Promise<Map<SnapshotAsset, PartitionStatusSummary>> {
  const { cache } = options;
  const ctx = await loadPartitionContext(
    assets.map((a) => a.partitions ?? null),
    (name) => options.dynamicKeys(name),
  );
  const prepared = assets.map((asset) => {
    const space = asset.partitions ? partitionSpace(asset.partitions, ctx) : undefined;
    const dynamic = asset.partitions
      ? dynamicNames(asset.partitions).flatMap((name) => [name, String(ctx.dynamicKeys(name).length), ...ctx.dynamicKeys(name)])
      : [];
    const cacheKey = cacheKeyOf(asset, dynamic);
    const large = (space ? space.count(options.now) : 1) >= STORED_SUMMARY_MIN_PARTITIONS;
    return { asset, space, cacheKey, large, cached: cache.lookup(cacheKey) };
  });
  // Large assets this server holds no fold of: the database's copy, when one holds for this definition.
  const unread = prepared.filter((p) => p.large && !p.cached);
  if (unread.length > 0) {
    const copies = await options.store.storedSummaries(unread.map((p) => ({ assetKey: p.asset.key, definition: digest(p.cacheKey) })));
    const readAt = Date.now();
    for (const p of unread) {
      const copy = copies.get(p.asset.key);
      const subsets = copy && parsedSubsets(copy.subsets);
      // A copy that does not parse (written by hand, say) is no copy: the asset is read in full and kept again.
      if (!copy || !subsets) continue;
      p.cached = { version: copy.version, subsets, ranges: rangesOf(subsets), storedAt: readAt - (copy.ageMs ?? 0) };
    }
  }
  const reads = await options.store.recordedStatusOfMany(
    prepared.map(({ asset, cached }) => ({
      assetKey: asset.key,
      codeVersion: asset.codeVersion,
      ...(cached ? { known: cached.version } : {}),
    })),
  );
  const out = new Map<SnapshotAsset, PartitionStatusSummary>();
  const toStore: StoredStatusSummary[] = [];
  const now = Date.now();
  for (const { asset, space, cacheKey, cached, large } of prepared) {
    const read = reads.get(asset.key)!;
    let stored: ReadonlyMap<StoredPartitionState, PartitionSubset>;
    if (read.recorded) {
      const subsets = new Map<StoredPartitionState, PartitionSubset>();
      for (const status of STORED) subsets.set(status, toSubset(read.recorded.keys.get(status) ?? [], space));
      stored = subsets;
    } else {
      stored = read.changed!.size > 0 ? patched(cached!.subsets, read.changed!, space) : cached!.subsets;
    }
    // Kept in the database after a full read, and after changes once the copy there has aged.
    const keep = large && (read.recorded || (read.changed!.size > 0 && now - (cached?.storedAt ?? 0) >= STORED_SUMMARY_REFRESH_MS));
    if (keep) {
      const subsets: Partial<Record<StoredPartitionState, string>> = {};
      for (const [status, subset] of stored) if (!subset.isEmpty()) subsets[status] = subset.serialize();
      toStore.push({ assetKey: asset.key, definition: digest(cacheKey), version: read.version, subsets });
    }
    cache.fill(cacheKey, read.version, stored, keep ? now : cached?.storedAt);
    const total = space ? space.count(options.now) : 1;
    out.set(asset, summaryOf(stored, toSubset(read.materializing, space), space, total, options.withRanges));
  }
  await options.store.storeSummaries(toStore);
  return out;
}

/** The subsets of a stored copy, or undefined when one of them is not a serialized subset. */
function parsedSubsets(serialized: StoredStatusSummary["subsets"]): Map<StoredPartitionState, PartitionSubset> | undefined {
  try {
    return new Map(STORED.map((status) => [status, PartitionSubset.parse(serialized[status] ?? "")]));
  } catch {
    return undefined;
  }
}

/** What a caching caller reads and keeps through the store. */
type CachingStore = Pick<PartitionStatusStore, "recordedStatusOfMany" | "storedSummaries" | "storeSummaries">;

/** The stored copy's `definition`: a digest of the cache key (asset, code version, partition space). */
function digest(cacheKey: string): string {
  return createHash("sha256").update(cacheKey).digest("base64url");
}

/** `subsets` with the partitions of `changed` moved to their status now (out of every subset when missing). */
function patched(
  subsets: ReadonlyMap<StoredPartitionState, PartitionSubset>,
  changed: ReadonlyMap<string, StoredPartitionState | null>,
  space: PartitionSpace | undefined,
): Map<StoredPartitionState, PartitionSubset> {
  // Each key looked up once: its index leaves every subset, and joins its new status's.
  const moved: number[] = [];
  const byStatus = new Map<StoredPartitionState, number[]>(STORED.map((status) => [status, []]));
  for (const [key, status] of changed) {
    const i = indexIn(space, key);
    if (i === undefined) continue;
    moved.push(i);
    if (status !== null) byStatus.get(status)!.push(i);
  }
  const movedSubset = PartitionSubset.fromIndices(moved);
  const out = new Map<StoredPartitionState, PartitionSubset>();
  for (const status of STORED) {
    const kept = (subsets.get(status) ?? PartitionSubset.empty()).difference(movedSubset);
    const added = byStatus.get(status)!;
    out.set(status, added.length > 0 ? kept.union(PartitionSubset.fromIndices(added)) : kept);
  }
  return out;
}

/** Asset, code version and partition space (a dynamic set's keys included: they decide indices). */
function cacheKeyOf(asset: SnapshotAsset, dynamic: readonly string[]): string {
  let key = staticCacheKeys.get(asset);
  if (key === undefined) {
    const space = asset.partitions === null || asset.partitions === undefined ? "" : JSON.stringify(asset.partitions);
    key = JSON.stringify([asset.key, asset.codeVersion, space]);
    staticCacheKeys.set(asset, key);
  }
  return dynamic.length === 0 ? key : `${key}${createHash("sha256").update(dynamic.join("\0")).digest("base64")}`;
}

/** The key of an asset's definition (a graph's assets are immutable and outlive requests: computed once each). */
const staticCacheKeys = new WeakMap<SnapshotAsset, string>();

/**
 * Statuses of the partitions existing now ([0, total)): materializing over the recorded statuses, missing the rest.
 * Linear in the number of ranges, not of partitions.
 */
function summaryOf(
  stored: ReadonlyMap<StoredPartitionState, PartitionSubset>,
  materializingAll: PartitionSubset,
  space: PartitionSpace | undefined,
  total: number,
  withRanges: boolean,
): PartitionStatusSummary {
  const materializing = materializingAll.clamp(0, total);
  const subsets = new Map<PartitionState, PartitionSubset>([["materializing", materializing]]);
  let recordedAll = materializing;
  for (const status of STORED) {
    const subset = (stored.get(status) ?? PartitionSubset.empty()).clamp(0, total).difference(materializing);
    subsets.set(status, subset);
    recordedAll = recordedAll.union(subset);
  }
  subsets.set("missing", PartitionSubset.range(0, total).difference(recordedAll));

  const count = (s: PartitionState) => subsets.get(s)?.count() ?? 0;
  const counts = {
    missing: count("missing"),
    materializing: count("materializing"),
    materialized: count("materialized"),
    failed: count("failed"),
    stale: count("stale"),
    timed_out: count("timed_out"),
    erased: count("erased"),
    total,
  };
  if (!withRanges) return { counts };
  const ranges: { start: number; end: number; status: PartitionState }[] = [];
  for (const [status, subset] of subsets) for (const [start, end] of subset.ranges()) ranges.push({ start, end, status });
  ranges.sort((a, b) => a.start - b.start);
  const keyAt = (i: number) => (space ? space.keyAt(i) : "");
  return {
    counts,
    ranges: ranges.map((r) => ({ status: r.status, from: keyAt(r.start), to: keyAt(r.end - 1), count: r.end - r.start })),
  };
}

/**
 * Indices of the keys of the space, existing yet or not (callers clamp to the existing ones); records of keys
 * outside the space (a changed definition) are left out. One lookup per key.
 */
function toSubset(keys: readonly string[], space: PartitionSpace | undefined): PartitionSubset {
  const indices: number[] = [];
  for (const key of keys) {
    const i = indexIn(space, key);
    if (i !== undefined) indices.push(i);
  }
  return PartitionSubset.fromIndices(indices);
}

/** A key's index in the space (an unpartitioned asset's one key is ""), or undefined when the space has no such key. */
function indexIn(space: PartitionSpace | undefined, key: string): number | undefined {
  if (!space) return key === "" ? 0 : undefined;
  try {
    return space.indexOf(key);
  } catch {
    return undefined;
  }
}

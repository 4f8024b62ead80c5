import { createHash } from "node:crypto";
import type { SnapshotAsset } from "../graph/index.js";
import { loadPartitionSpace, PartitionSubset, type PartitionSpace } from "../partitions/index.js";
import type { PartitionState, PartitionStatusStore, RecordedPartitionState, RecordedStatusCounts } from "../storage/index.js";
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

const RECORDED: readonly RecordedPartitionState[] = ["materializing", "materialized", "failed", "stale", "timed_out"];

/** The store's types for callers that cache (see PartitionStatusStore.recordedStatusOfMany). */
type RecordedStatusOfMany = PartitionStatusStore["recordedStatusOfMany"];
export type KnownRecordedStatus = Parameters<RecordedStatusOfMany>[0][number];
export type RecordedStatusVersion = NonNullable<KnownRecordedStatus["known"]>;
export type RecordedStatusRead = Awaited<ReturnType<RecordedStatusOfMany>> extends ReadonlyMap<string, infer R> ? R : never;
type StoredPartitionState = Exclude<RecordedPartitionState, "materializing">;
const STORED: readonly StoredPartitionState[] = ["materialized", "failed", "stale", "timed_out"];

/** Recorded statuses of an asset folded into its partition space's indices, and what they were derived from. */
interface CachedStatuses {
  readonly version: RecordedStatusVersion;
  /** Indices of every key of the space (existing yet or not): the partitions that exist are clamped per answer. */
  readonly subsets: ReadonlyMap<StoredPartitionState, PartitionSubset>;
  /** When (Date.now()) a read found the version changed, if one did: the asset is being written to. */
  readonly changedAt?: number;
}

/**
 * The asset page's partition bar asks for the ranges of an asset with up to
 * 100 000 partitions on every visit; deriving them (staleness joins, then a
 * fold of every recorded key) costs about half a second. This keeps the folded
 * recorded statuses per asset, code version and partition space, with the
 * version they were read at (see RecordedStatusVersion): an answer then costs
 * one statement that reads the fingerprint (from the few change rows that
 * writers of the asset's and its upstreams' statuses append) and the unfinished
 * steps, plus a fold of ranges. A changed fingerprint reads and folds
 * everything again.
 *
 * What is never cached: `materializing` (unfinished steps, read every time) and
 * which partitions exist (a time space grows with `now`: cached subsets hold
 * indices of keys existing yet or not, and each answer clamps them).
 *
 * One per server (per database): entries of one database never answer for another.
 */
export class PartitionStatusCache {
  readonly #entries = new Map<string, CachedStatuses>();
  readonly #maxEntries: number;
  readonly #skipValidationMs: number;

  /**
   * @param options.maxEntries the least recently used asset is dropped beyond it (256).
   * @param options.skipValidationMs after a failed validation, answers read the keys straight away for this long
   *   (10 s): the statement that reads the keys reads the fingerprint anyway, so while an asset is being written to
   *   (a backfill, a sensor) validating first only adds a round trip that finds it changed.
   */
  constructor(options: { readonly maxEntries?: number; readonly skipValidationMs?: number } = {}) {
    this.#maxEntries = options.maxEntries ?? 256;
    this.#skipValidationMs = options.skipValidationMs ?? 10_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `key`, and whether to validate it (else read the keys again). */
  lookup(key: string, now = Date.now()): { readonly entry: CachedStatuses; readonly validate: boolean } | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return { entry, validate: entry.changedAt === undefined || now - entry.changedAt >= this.#skipValidationMs };
  }

  /** Keeps what was just read for `key`. */
  fill(key: string, version: RecordedStatusVersion, subsets: ReadonlyMap<StoredPartitionState, PartitionSubset>, now = Date.now()): void {
    const previous = this.#entries.get(key);
    const changedAt = previous && previous.version.fingerprint !== version.fingerprint ? now : previous?.changedAt;
    this.#entries.delete(key);
    this.#entries.set(key, { version, subsets, ...(changedAt !== undefined ? { changedAt } : {}) });
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

interface SummaryOptions {
  /** The recorded counts of this asset (see PartitionStatusStore.countByStatus). */
  readonly counts: () => Promise<RecordedStatusCounts>;
  readonly withRanges: boolean;
  readonly now: Date;
  readonly dynamicKeys: (name: string) => Promise<readonly string[]>;
}

/**
 * Counts (and, when asked, ranges) of an asset's existing partitions by status.
 *
 * Counts alone come from one SQL aggregate (`counts`, e.g. batched over many
 * assets); partitions without a record are the missing ones. They count every
 * recorded partition of the asset, so after its partitions definition shrank,
 * records of keys that left it are counted until they are cleared.
 *
 * Ranges need each recorded key's place in the partition space, so they read
 * the recorded keys of the asset (one query, one short string per recorded
 * partition; nothing per missing partition) and fold them into index ranges;
 * the counts then come from the same fold and are exact. With a `cache`, the
 * folded recorded statuses are kept while their version holds (see
 * {@link PartitionStatusCache}); `store.recordedStatusOfMany` is then called
 * with this asset alone (a caller batches).
 */
export async function partitionStatusSummary(
  asset: SnapshotAsset,
  options: SummaryOptions &
    (
      | { readonly store: Pick<PartitionStatusStore, "keysByStatus">; readonly cache?: undefined }
      | { readonly store: Pick<PartitionStatusStore, "recordedStatusOfMany">; readonly cache: PartitionStatusCache }
    ),
): Promise<PartitionStatusSummary> {
  const dynamic: string[] = [];
  const space = asset.partitions
    ? await loadPartitionSpace(asset.partitions, async (name) => {
        const keys = await options.dynamicKeys(name);
        dynamic.push(name, String(keys.length), ...keys);
        return keys;
      })
    : undefined;
  const total = space ? space.count(options.now) : 1;
  if (!options.withRanges) {
    const recorded = await options.counts();
    const known = RECORDED.reduce((n, s) => n + recorded[s], 0);
    return { counts: { ...recorded, missing: Math.max(0, total - known), total } };
  }
  let stored: ReadonlyMap<StoredPartitionState, PartitionSubset>;
  let materializing: PartitionSubset;
  if (options.cache) {
    const cache = options.cache;
    const cacheKey = cacheKeyOf(asset, dynamic);
    const cached = cache.lookup(cacheKey);
    const known = cached?.validate ? { known: cached.entry.version } : {};
    const read = (await options.store.recordedStatusOfMany([{ assetKey: asset.key, codeVersion: asset.codeVersion, ...known }])).get(
      asset.key,
    )!;
    if (read.recorded) {
      const subsets = new Map<StoredPartitionState, PartitionSubset>();
      for (const status of STORED) subsets.set(status, toSubset(read.recorded.keys.get(status) ?? [], space));
      cache.fill(cacheKey, read.recorded.version, subsets);
      stored = subsets;
    } else {
      stored = cached!.entry.subsets;
    }
    materializing = toSubset(read.materializing, space);
  } else {
    const keys = await options.store.keysByStatus({ assetKey: asset.key, codeVersion: asset.codeVersion });
    stored = new Map(STORED.map((status) => [status, toSubset(keys.get(status) ?? [], space)]));
    materializing = toSubset(keys.get("materializing") ?? [], space);
  }
  return summaryOf(stored, materializing, space, total);
}

/** Asset, code version and partition space (a dynamic set's keys included: they decide indices). */
function cacheKeyOf(asset: SnapshotAsset, dynamic: readonly string[]): string {
  const space = asset.partitions === null || asset.partitions === undefined ? "" : JSON.stringify(asset.partitions);
  const keys = dynamic.length === 0 ? "" : createHash("sha256").update(dynamic.join("\0")).digest("base64");
  return JSON.stringify([asset.key, asset.codeVersion, space, keys]);
}

/**
 * Statuses of the partitions existing now ([0, total)): materializing over the recorded statuses, missing the rest.
 * Linear in the number of ranges, not of partitions.
 */
function summaryOf(
  stored: ReadonlyMap<StoredPartitionState, PartitionSubset>,
  materializingAll: PartitionSubset,
  space: PartitionSpace | undefined,
  total: number,
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

  const ranges: { start: number; end: number; status: PartitionState }[] = [];
  for (const [status, subset] of subsets) for (const [start, end] of subset.ranges()) ranges.push({ start, end, status });
  ranges.sort((a, b) => a.start - b.start);
  const keyAt = (i: number) => (space ? space.keyAt(i) : "");
  const count = (s: PartitionState) => subsets.get(s)?.count() ?? 0;
  return {
    counts: {
      missing: count("missing"),
      materializing: count("materializing"),
      materialized: count("materialized"),
      failed: count("failed"),
      stale: count("stale"),
      timed_out: count("timed_out"),
      total,
    },
    ranges: ranges.map((r) => ({ status: r.status, from: keyAt(r.start), to: keyAt(r.end - 1), count: r.end - r.start })),
  };
}

/**
 * Indices of the keys of the space, existing yet or not (callers clamp to the existing ones); records of keys
 * outside the space (a changed definition) are left out. One lookup per key.
 */
function toSubset(keys: readonly string[], space: PartitionSpace | undefined): PartitionSubset {
  if (!space) return keys.includes("") ? PartitionSubset.range(0, 1) : PartitionSubset.empty();
  const indices: number[] = [];
  for (const key of keys) {
    let i: number;
    try {
      i = space.indexOf(key);
    } catch {
      continue;
    }
    indices.push(i);
  }
  return PartitionSubset.fromIndices(indices);
}

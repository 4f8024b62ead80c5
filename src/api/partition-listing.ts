import type { SnapshotAsset } from "../graph/index.js";
import { InputError, PartitionError } from "../errors/index.js";
import { loadPartitionContext, partitionSpace, PartitionSubset } from "../partitions/index.js";
import { dimensionSliceKeys, type DimensionSlice } from "../planner/index.js";
import type { PartitionStatusRecord, StaleReason } from "../storage/index.js";

export interface PartitionRow {
  key: string;
  start: Date | undefined;
  end: Date | undefined;
}

/** A listed partition whose status is read on first use, for the whole page at once. */
export interface PartitionStatusRow extends PartitionRow {
  state(): Promise<PartitionStatusRecord | undefined>;
}

export interface PartitionListing {
  totalCount: number;
  nodes: PartitionRow[];
  endCursor: string | null;
  hasNextPage: boolean;
}

/**
 * Rows worked on between two turns of the event loop: a page of 10 000
 * partitions is listed, and completed by GraphQL, in chunks, so health checks
 * and other requests are answered in between.
 */
export const LISTING_CHUNK = 500;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One page of an asset's existing partitions (optionally within [from, to],
 * and for a multi-partitioned asset within a selection per dimension).
 * `last` pages from the end instead: the latest `last` of them (oldest
 * first, no next page). Works on index ranges, so the cost is the page
 * size, not the partition count (a dimension selection costs its keys).
 */
export async function listPartitions(
  asset: SnapshotAsset,
  options: {
    from?: string | undefined;
    to?: string | undefined;
    first: number;
    after?: string | undefined;
    /** The latest this many instead of a page from the start (not with `after`). */
    last?: number | undefined;
    dimensions?: readonly DimensionSlice[] | undefined;
    now: Date;
    dynamicKeys: (name: string) => Promise<readonly string[]>;
  },
): Promise<PartitionListing> {
  if (options.last !== undefined && options.after !== undefined) {
    throw new InputError("last pages from the end: leave out after", { location: { field: "last" } });
  }
  if (!asset.partitions) {
    if (options.dimensions !== undefined) dimensionSliceKeys(asset, options.dimensions, undefined, options.now);
    const nodes = options.after ? [] : [{ key: "", start: undefined, end: undefined }];
    return { totalCount: 1, nodes: nodes.slice(0, options.last ?? options.first), endCursor: null, hasNextPage: false };
  }
  const ctx = await loadPartitionContext([asset.partitions], options.dynamicKeys);
  const space = partitionSpace(asset.partitions, ctx);
  const existing = space.all(options.now);
  let subset = existing;
  if (options.from !== undefined || options.to !== undefined) {
    const count = space.count(options.now);
    if (count === 0) return { totalCount: 0, nodes: [], endCursor: null, hasNextPage: false };
    const from = options.from ?? space.keyAt(0);
    const to = options.to ?? space.keyAt(count - 1);
    try {
      subset = space.range(from, to).intersection(existing);
    } catch (err) {
      if (!(err instanceof PartitionError)) throw err;
      throw new PartitionError(`asset "${asset.key}": ${err.message}`, {
        code: err.code,
        cause: err,
        location: { ...err.location, assetKey: asset.key },
      });
    }
  }
  if (options.dimensions !== undefined)
    subset = subset.intersection(space.subset(dimensionSliceKeys(asset, options.dimensions, ctx, options.now)));
  const totalCount = subset.count();
  if (options.last !== undefined) subset = lastOf(subset, options.last);
  let startAfter = -1;
  if (options.after !== undefined) {
    startAfter = Number(options.after);
    if (!Number.isInteger(startAfter) || startAfter < -1) {
      throw new InputError(`after: "${options.after}" is not a cursor returned by this field`);
    }
  }
  const nodes: PartitionRow[] = [];
  let lastIndex = -1;
  let hasNextPage = false;
  for (const index of subset.indicesFrom(startAfter + 1)) {
    if (nodes.length === (options.last ?? options.first)) {
      hasNextPage = true;
      break;
    }
    if (nodes.length > 0 && nodes.length % LISTING_CHUNK === 0) await nextTurn();
    const key = space.keyAt(index);
    const window = space.window(key);
    nodes.push({ key, start: window?.start, end: window?.end });
    lastIndex = index;
  }
  return {
    totalCount,
    nodes,
    endCursor: lastIndex >= 0 ? String(lastIndex) : null,
    hasNextPage,
  };
}

/**
 * A page's rows for GraphQL to complete (a list of promises, which it
 * awaits), released LISTING_CHUNK at a time, each chunk a turn of the event
 * loop after the one before, the first once `ready` settles (the page's
 * statuses, when they are asked for: then every chunk finds them loaded).
 */
export function releasedInChunks<T>(rows: readonly T[], ready?: Promise<unknown>): Promise<T>[] {
  const out: Promise<T>[] = [];
  let turn: Promise<unknown> = ready ? ready.then(undefined, () => undefined) : Promise.resolve();
  for (let i = 0; i < rows.length; i += LISTING_CHUNK) {
    const released = (turn = turn.then(nextTurn));
    for (const row of rows.slice(i, i + LISTING_CHUNK)) out.push(released.then(() => row));
  }
  return out;
}

/**
 * Gives each row of a page its status, loaded once for the whole page on the
 * first call (one query per page, none when no status is asked for).
 */
export function withStates(
  nodes: readonly PartitionRow[],
  load: (keys: string[]) => Promise<ReadonlyMap<string, PartitionStatusRecord>>,
): PartitionStatusRow[] {
  let page: Promise<ReadonlyMap<string, PartitionStatusRecord>> | undefined;
  const states = () => (page ??= load(nodes.map((n) => n.key)));
  return nodes.map((n) => ({ ...n, state: async () => (await states()).get(n.key) }));
}

/** The last `n` partitions of a subset. */
function lastOf(subset: PartitionSubset, n: number): PartitionSubset {
  const kept: [number, number][] = [];
  let left = n;
  for (const [start, end] of [...subset.ranges()].reverse()) {
    if (left <= 0) break;
    const from = Math.max(start, end - left);
    kept.push([from, end]);
    left -= end - from;
  }
  return PartitionSubset.fromRanges(kept.reverse());
}

/** Why a partition is stale, in one sentence (GraphQL's StaleReason.message, the CLI's partition listing). */
export function staleReasonMessage(r: StaleReason): string {
  if (r.kind === "code_version_changed") {
    return `materialised with code version "${r.materializedWith}"; the asset's code version is now "${r.current}"`;
  }
  const p = r.upstreamPartitionKey === "" ? "" : ` partition "${r.upstreamPartitionKey}"`;
  return (
    `upstream "${r.upstreamAssetKey}"${p} was materialised again (event ${r.latestEventId}) after ` +
    (r.readEventId === null ? "this partition read it before it had any event" : `this partition read event ${r.readEventId}`)
  );
}

/** A stale reason with GraphQL's StaleReason field names (event ids as strings), for JSON output. */
export type StaleReasonView =
  | { kind: "code_version_changed"; message: string; materializedCodeVersion: string; currentCodeVersion: string }
  | {
      kind: "upstream_updated";
      message: string;
      upstreamAssetKey: string;
      upstreamPartitionKey: string;
      readEventId: string | null;
      latestEventId: string;
    };

export function staleReasonView(r: StaleReason): StaleReasonView {
  const message = staleReasonMessage(r);
  if (r.kind === "code_version_changed")
    return { kind: r.kind, message, materializedCodeVersion: r.materializedWith, currentCodeVersion: r.current };
  return {
    kind: r.kind,
    message,
    upstreamAssetKey: r.upstreamAssetKey,
    upstreamPartitionKey: r.upstreamPartitionKey,
    readEventId: r.readEventId === null ? null : String(r.readEventId),
    latestEventId: String(r.latestEventId),
  };
}

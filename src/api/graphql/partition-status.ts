// Partition status of assets: Asset.partitionStatus (counts and ranges by
// status) and the status and stale reasons of each listed partition.
import type { FieldNode, GraphQLResolveInfo } from "graphql";
import type { SnapshotAsset } from "../../graph/index.js";
import type { PartitionStatusRecord, StaleReason } from "../../storage/index.js";
import { staleReasonMessage, type PartitionStatusRow } from "../partition-listing.js";
import {
  PartitionStatusCache,
  partitionStatusSummaries,
  type PartitionStatusCounts,
  type PartitionStatusRange,
  type PartitionStatusSummary,
} from "../partition-status-summary.js";
import { batched, perContext } from "./batch.js";
import { builder } from "./builder.js";
import { fieldsNamed, readAhead, readAheadOf, selectedOnItems } from "./read-ahead.js";
import type { ApiServices, AssetsApi } from "../services.js";
import { asGraphQLError } from "./errors.js";

export const PartitionStatusEnum = builder.enumType("PartitionStatus", {
  description: "Status of one partition of an asset",
  values: {
    MISSING: { value: "missing", description: "Never materialised (or cleared)" },
    MATERIALIZING: { value: "materializing", description: "A step for it is unfinished in a queued or running run" },
    MATERIALIZED: { value: "materialized", description: "Materialised and up to date" },
    FAILED: { value: "failed", description: "Its latest step failed for good" },
    STALE: {
      value: "stale",
      description: "Materialised, but an upstream partition it read was materialised again since, or the asset's code version changed",
    },
    TIMED_OUT: { value: "timed_out", description: "A source partition whose observation timed out before it appeared" },
    ERASED: {
      value: "erased",
      description: "Its data was removed by an erasure request; it waits to be materialised again from the cleaned source",
    },
  } as const,
});

const StaleReasonKindEnum = builder.enumType("StaleReasonKind", {
  values: {
    CODE_VERSION_CHANGED: { value: "code_version_changed" },
    UPSTREAM_UPDATED: { value: "upstream_updated" },
  } as const,
});

export const StaleReasonRef = builder.objectRef<StaleReason>("StaleReason").implement({
  description: "Why a materialised partition is stale",
  fields: (t) => ({
    kind: t.field({ type: StaleReasonKindEnum, resolve: (r) => r.kind }),
    message: t.string({ resolve: staleReasonMessage }),
    materializedCodeVersion: t.string({ nullable: true, resolve: (r) => (r.kind === "code_version_changed" ? r.materializedWith : null) }),
    currentCodeVersion: t.string({ nullable: true, resolve: (r) => (r.kind === "code_version_changed" ? r.current : null) }),
    upstreamAssetKey: t.string({ nullable: true, resolve: (r) => (r.kind === "upstream_updated" ? r.upstreamAssetKey : null) }),
    upstreamPartitionKey: t.string({ nullable: true, resolve: (r) => (r.kind === "upstream_updated" ? r.upstreamPartitionKey : null) }),
    readEventId: t.string({
      nullable: true,
      description: "The upstream event the materialisation read",
      resolve: (r) => (r.kind === "upstream_updated" && r.readEventId !== null ? String(r.readEventId) : null),
    }),
    latestEventId: t.string({
      nullable: true,
      description: "The upstream partition's latest event",
      resolve: (r) => (r.kind === "upstream_updated" ? String(r.latestEventId) : null),
    }),
  }),
});

const PartitionStatusCountsRef = builder.objectRef<PartitionStatusCounts>("PartitionStatusCounts").implement({
  description: "Existing partitions of an asset by status",
  fields: (t) => ({
    missing: t.exposeInt("missing"),
    materializing: t.exposeInt("materializing"),
    materialized: t.exposeInt("materialized"),
    failed: t.exposeInt("failed"),
    stale: t.exposeInt("stale"),
    timedOut: t.exposeInt("timed_out", { description: "Source partitions whose observation timed out" }),
    erased: t.exposeInt("erased", { description: "Partitions whose data an erasure request removed, waiting to be materialised again" }),
    total: t.exposeInt("total", { description: "Partitions that exist now (1 for an unpartitioned asset)" }),
  }),
});

const PartitionStatusRangeRef = builder.objectRef<PartitionStatusRange>("PartitionStatusRange").implement({
  description: "Consecutive partitions (in the partitions definition's order) with the same status",
  fields: (t) => ({
    status: t.field({ type: PartitionStatusEnum, resolve: (r) => r.status }),
    from: t.exposeString("from", { description: "First key of the range ('' for an unpartitioned asset)" }),
    to: t.exposeString("to", { description: "Last key of the range, included" }),
    count: t.exposeInt("count"),
  }),
});

export const AssetPartitionStatusRef = builder.objectRef<PartitionStatusSummary>("AssetPartitionStatus").implement({
  fields: (t) => ({
    counts: t.field({ type: PartitionStatusCountsRef, resolve: (s) => s.counts }),
    ranges: t.field({
      type: [PartitionStatusRangeRef],
      description: "Every existing partition, oldest first, folded into ranges of one status",
      resolve: (s) => s.ranges ?? [],
    }),
  }),
});

/**
 * Folded recorded statuses per server: keyed by its catalog, which a server builds once for its database,
 * whereas it builds a context (and its stores) per request.
 */
const caches = new WeakMap<AssetsApi["catalog"], PartitionStatusCache>();
function cacheOf(ctx: Pick<ApiServices, "assets">): PartitionStatusCache {
  let cache = caches.get(ctx.assets.catalog);
  if (!cache) caches.set(ctx.assets.catalog, (cache = new PartitionStatusCache()));
  return cache;
}

function summariesOf(ctx: Pick<ApiServices, "assets" | "now">, assets: readonly SnapshotAsset[], withRanges: boolean) {
  return partitionStatusSummaries(assets, {
    cache: cacheOf(ctx),
    store: ctx.assets.partitionStatus,
    withRanges,
    now: ctx.now(),
    dynamicKeys: (name) => ctx.assets.catalog.dynamicKeys(name),
  });
}

/**
 * Summaries of every asset resolved at one GraphQL level, computed together (`asset { upstream { partitionStatus } }`):
 * one statement validating the cached ones and reading the others, then a loop (see partitionStatusSummaries). One
 * loader with ranges and one without, since a level asks for the same fields of each asset.
 */
const summaryLoaders = perContext((ctx: Pick<ApiServices, "assets" | "now">) => ({
  counts: batched((assets: SnapshotAsset[]) => summariesOf(ctx, assets, false)),
  ranges: batched((assets: SnapshotAsset[]) => summariesOf(ctx, assets, true)),
}));

/**
 * Reads the partition status of a list of assets with the list when the query asks for it on them
 * (`assets { partitionStatus { counts } }`): with ranges when any of those fields asks for them.
 */
export async function readStatusAhead(
  assets: readonly SnapshotAsset[],
  ctx: Pick<ApiServices, "assets" | "now">,
  info: GraphQLResolveInfo,
): Promise<void> {
  const fields = selectedOnItems(info, "partitionStatus");
  if (fields.length === 0) return;
  const withRanges = asksForRanges(fields, info);
  await readAhead(ctx, withRanges ? RANGES_AHEAD : COUNTS_AHEAD, assets, () => summariesOf(ctx, assets, withRanges));
}

/** The summary read with the list for this asset, when it answers this field (ranges when the field asks for them). */
export function statusReadAhead(asset: SnapshotAsset, ctx: object, info: GraphQLResolveInfo): PartitionStatusSummary | undefined {
  const withRanges = readAheadOf<PartitionStatusSummary>(ctx, RANGES_AHEAD, asset);
  if (withRanges) return withRanges.value;
  return asksForRanges(info.fieldNodes, info) ? undefined : readAheadOf<PartitionStatusSummary>(ctx, COUNTS_AHEAD, asset)?.value;
}

/** What readStatusAhead keeps: summaries with their ranges (which answer counts too), or counts alone. */
const RANGES_AHEAD = "partitionStatus with ranges";
const COUNTS_AHEAD = "partitionStatus counts";

/** Resolver of Asset.partitionStatus. */
export async function resolvePartitionStatus(
  asset: SnapshotAsset,
  ctx: Pick<ApiServices, "assets" | "now">,
  info: GraphQLResolveInfo,
): Promise<PartitionStatusSummary> {
  try {
    const loaders = summaryLoaders(ctx);
    const withRanges = asksForRanges(info.fieldNodes, info);
    const summary = await (withRanges ? loaders.ranges : loaders.counts)(asset);
    if (!summary) throw new Error(`no partition status for asset "${asset.key}"`);
    return summary;
  } catch (err) {
    throw asGraphQLError(err);
  }
}

/** Status of a listed partition (the page's statuses load on first use). */
export async function partitionStateOf(row: PartitionStatusRow): Promise<PartitionStatusRecord["status"]> {
  return (await row.state())?.status ?? "missing";
}

export async function staleReasonsOf(row: PartitionStatusRow): Promise<readonly StaleReason[]> {
  return (await row.state())?.staleReasons ?? [];
}

/** Whether these `partitionStatus` selections ask for `ranges`. */
function asksForRanges(fields: readonly FieldNode[], info: GraphQLResolveInfo): boolean {
  return fields.some((n) => fieldsNamed(n.selectionSet, "ranges", info.fragments).length > 0);
}

// Asset.materializations and Asset.latestMaterialization: an asset's
// materialisation history, newest first, read for every asset of a GraphQL
// level in one statement.
import type { GraphQLResolveInfo } from "graphql";
import { z } from "zod";
import type { SnapshotAsset } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace } from "../../partitions/index.js";
import { PartitionError, TributaryError } from "../../errors/index.js";
import { MATERIALIZATION_KINDS, type MaterializationQuery, type MaterializationView, type ReadPage } from "../../storage/index.js";
import { batched, perContext } from "./batch.js";
import { builder } from "./builder.js";
import type { ApiServices } from "../services.js";
import { asGraphQLError, codeError, parseInput } from "./errors.js";
import { readAhead, readAheadOf, selectedOnItems } from "./read-ahead.js";
import { checkFirst } from "./runs.js";

const MaterializationKindEnum = builder.enumType("MaterializationKind", {
  values: {
    MATERIALIZATION: { value: "materialization", description: "A step of a run wrote the partition" },
    EXTERNAL: { value: "external", description: "A producer outside Tributary reported writing it" },
    OBSERVATION: { value: "observation", description: "It was observed to exist or change" },
  } as const satisfies Record<string, { value: (typeof MATERIALIZATION_KINDS)[number]; description: string }>,
});

export const MaterializationRef = builder.objectRef<MaterializationView>("Materialization").implement({
  description: "One materialisation, external report or observation of an asset partition",
  fields: (t) => ({
    eventId: t.string({ resolve: (m) => String(m.id) }),
    kind: t.field({ type: MaterializationKindEnum, resolve: (m) => m.kind }),
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.string({
      nullable: true,
      description: "Null for an unpartitioned asset",
      resolve: (m) => (m.partitionKey === "" ? null : m.partitionKey),
    }),
    runId: t.exposeString("runId", { nullable: true, description: "The run that wrote it; null for reported events" }),
    stepId: t.string({ nullable: true, resolve: (m) => (m.stepId === null ? null : String(m.stepId)) }),
    dataVersion: t.exposeString("dataVersion", { nullable: true }),
    codeVersion: t.exposeString("codeVersion", { nullable: true }),
    metadata: t.field({ type: "JSON", resolve: (m) => m.metadata }),
    createdAt: t.field({ type: "DateTime", resolve: (m) => m.createdAt }),
  }),
});

export const MaterializationConnectionRef = builder.objectRef<ReadPage<MaterializationView>>("MaterializationConnection").implement({
  description: "A page of materialisations, newest first",
  fields: (t) => ({
    nodes: t.field({ type: [MaterializationRef], resolve: (p) => [...p.nodes] }),
    endCursor: t.exposeString("endCursor", { nullable: true, description: "Pass as `after` for the next page" }),
    hasNextPage: t.exposeBoolean("hasNextPage"),
  }),
});

const materializationArgs = z.strictObject({
  partition: z.string().optional(),
  first: z.number(),
  after: z.string().min(1, "must not be empty").optional(),
});

/** One statement per GraphQL level, whatever the number of assets asking. */
const pageLoader = perContext((ctx: Pick<ApiServices, "runs">) => {
  const load = batched(async (keys: string[]) => {
    const pages = await ctx.runs.reads.materializations(keys.map((k) => JSON.parse(k) as MaterializationQuery));
    return new Map(keys.map((k, i) => [k, pages[i]!]));
  });
  return async (query: MaterializationQuery) => (await load(JSON.stringify(query)))!;
});

/** Resolver of Asset.materializations(partition, first, after). */
export async function resolveMaterializations(
  asset: SnapshotAsset,
  rawArgs: Record<string, unknown>,
  ctx: Pick<ApiServices, "assets" | "runs">,
): Promise<ReadPage<MaterializationView>> {
  const field = `asset("${asset.key}").materializations`;
  const args = parseInput(materializationArgs, rawArgs, field, "");
  checkFirst(field, args.first);
  try {
    const partitionKey = await checkedPartition(asset, args.partition, ctx);
    return await pageLoader(ctx)({ assetKey: asset.key, partitionKey, first: args.first, after: args.after });
  } catch (err) {
    throw asGraphQLError(err);
  }
}

/**
 * Reads the latest materialisation of each asset of a list with the list when the query asks for
 * `latestMaterialization` (of any partition) on them.
 */
export async function readLatestAhead(
  assets: readonly SnapshotAsset[],
  ctx: Pick<ApiServices, "runs">,
  info: GraphQLResolveInfo,
): Promise<void> {
  if (!selectedOnItems(info, "latestMaterialization").some((f) => (f.arguments?.length ?? 0) === 0)) return;
  await readAhead(ctx, "latestMaterialization", assets, async () => {
    const pages = await ctx.runs.reads.materializations(assets.map((a) => ({ assetKey: a.key, first: 1 })));
    return new Map(assets.map((a, i) => [a, pages[i]?.nodes[0] ?? null]));
  });
}

/** Resolver of Asset.latestMaterialization(partition). */
export function resolveLatestMaterialization(
  asset: SnapshotAsset,
  partition: string | null | undefined,
  ctx: Pick<ApiServices, "assets" | "runs">,
): MaterializationView | null | Promise<MaterializationView | null> {
  const ahead = partition == null ? readAheadOf<MaterializationView | null>(ctx, "latestMaterialization", asset) : undefined;
  return ahead ? ahead.value : latestOf(asset, partition, ctx);
}

async function latestOf(
  asset: SnapshotAsset,
  partition: string | null | undefined,
  ctx: Pick<ApiServices, "assets" | "runs">,
): Promise<MaterializationView | null> {
  try {
    const partitionKey = await checkedPartition(asset, partition ?? undefined, ctx);
    return (await pageLoader(ctx)({ assetKey: asset.key, partitionKey, first: 1 })).nodes[0] ?? null;
  } catch (err) {
    throw asGraphQLError(err);
  }
}

/**
 * The partition to filter on: undefined for all of them. A key must belong to
 * the asset's partitions definition (its code says why not); an unpartitioned
 * asset takes none.
 */
async function checkedPartition(
  asset: SnapshotAsset,
  partition: string | undefined,
  ctx: Pick<ApiServices, "assets">,
): Promise<string | undefined> {
  if (partition === undefined) return undefined;
  const key = await assetPartitionKey(asset, partition, ctx);
  return asset.partitions ? key : undefined;
}

/**
 * `partition` if it is a key of the asset's partitions (a PartitionError with
 * the partitions' own code says why not); an unpartitioned asset takes only
 * "" (PARTITION_UNEXPECTED otherwise).
 */
export async function assetPartitionKey(asset: SnapshotAsset, partition: string, ctx: Pick<ApiServices, "assets">): Promise<string> {
  if (!asset.partitions) {
    if (partition === "") return "";
    throw codeError("PARTITION_UNEXPECTED", `asset "${asset.key}" is not partitioned: leave out the partition (got "${partition}")`);
  }
  const space = partitionSpace(
    asset.partitions,
    await loadPartitionContext([asset.partitions], (name) => ctx.assets.catalog.dynamicKeys(name)),
  );
  try {
    space.indexOf(partition);
  } catch (err) {
    if (!(err instanceof TributaryError)) throw err;
    throw new PartitionError(`asset "${asset.key}": ${err.message}`, {
      code: err.code,
      location: { assetKey: asset.key, partitionKey: partition },
      cause: err,
    });
  }
  return partition;
}

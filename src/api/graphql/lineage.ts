// Lineage: the static asset graph and the run-level graph around a partition,
// and "where did the data of these partitions go?" for erasure requests.
import type { ImpactedPartition, LineageEdge, LineageEvent } from "../../storage/index.js";
import type { ErasureImpact, ErasureImpactAsset, AssetPartitionKeys } from "../lineage/erasure-impact.js";
import type { Lineage, LineageAsset, LineageDependency } from "../lineage/lineage.js";
import { builder } from "./builder.js";
import { asGraphQLError } from "./errors.js";

const idOf = (n: number | null): string | null => (n === null ? null : String(n));

const LineageDirectionEnum = builder.enumType("LineageDirection", {
  values: { UPSTREAM: { value: "upstream" }, DOWNSTREAM: { value: "downstream" } } as const,
});

const LineageAssetRef = builder.objectRef<LineageAsset>("LineageAsset").implement({
  description: "An asset of the static lineage graph",
  fields: (t) => ({
    key: t.exposeString("key"),
    kind: t.exposeString("kind"),
    depth: t.exposeInt("depth", { description: "Fewest dependency levels from the asset asked about" }),
    partitions: t.exposeString("partitions", { nullable: true, description: "Its partitions, described; null when unpartitioned" }),
    pii: t.field({
      type: "JSON",
      nullable: true,
      description: "metadata.pii: the columns holding personal data (or true)",
      resolve: (a) => a.pii,
    }),
  }),
});

const LineageDependencyRef = builder.objectRef<LineageDependency>("LineageDependency").implement({
  description: "A dependency of the static lineage graph, with its partition mapping",
  fields: (t) => ({
    upstreamKey: t.exposeString("upstreamKey"),
    downstreamKey: t.exposeString("downstreamKey"),
    name: t.exposeString("name"),
    mapping: t.field({ type: "JSON", nullable: true, description: "null: the default mapping", resolve: (d) => d.mapping }),
    mappingDescription: t.exposeString("mappingDescription"),
  }),
});

const LineageEventRef = builder.objectRef<LineageEvent>("LineageMaterialization").implement({
  description: "A materialisation (or external report, or observation) of the run-level lineage graph",
  fields: (t) => ({
    eventId: t.string({ resolve: (e) => String(e.eventId) }),
    kind: t.exposeString("kind"),
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey"),
    runId: t.exposeString("runId", { nullable: true }),
    stepId: t.string({ nullable: true, resolve: (e) => idOf(e.stepId) }),
    tryNumber: t.exposeInt("tryNumber", { nullable: true }),
    dataVersion: t.exposeString("dataVersion", { nullable: true }),
    codeVersion: t.exposeString("codeVersion", { nullable: true }),
    createdAt: t.field({ type: "DateTime", resolve: (e) => e.createdAt }),
    depth: t.exposeInt("depth", { description: "Fewest hops from the start" }),
  }),
});

const LineageInputRef = builder.objectRef<LineageEdge>("LineageInput").implement({
  description: "A materialisation read an upstream partition: which event of it (null when none was recorded)",
  fields: (t) => ({
    eventId: t.string({ resolve: (e) => String(e.eventId) }),
    upstreamAssetKey: t.exposeString("upstreamAssetKey"),
    upstreamPartitionKey: t.exposeString("upstreamPartitionKey"),
    upstreamEventId: t.string({ nullable: true, resolve: (e) => idOf(e.upstreamEventId) }),
  }),
});

const LineageRef = builder.objectRef<Lineage>("Lineage").implement({
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey", {
      nullable: true,
      description: "null: a partitioned asset asked about without a partition",
    }),
    direction: t.field({ type: LineageDirectionEnum, resolve: (l) => l.direction }),
    depth: t.exposeInt("depth"),
    assets: t.field({ type: [LineageAssetRef], description: "Static lineage: the asset itself first", resolve: (l) => [...l.assets] }),
    dependencies: t.field({ type: [LineageDependencyRef], resolve: (l) => [...l.dependencies] }),
    start: t.field({
      type: LineageEventRef,
      nullable: true,
      description: "The partition's latest materialisation; null when it has none",
      resolve: (l) => l.start,
    }),
    materializations: t.field({
      type: [LineageEventRef],
      description: "Run-level lineage: every materialisation reached",
      resolve: (l) => [...l.materializations],
    }),
    inputs: t.field({
      type: [LineageInputRef],
      description: "Which upstream partition each materialisation read",
      resolve: (l) => [...l.inputs],
    }),
  }),
});

const OutputLocationRef = builder.objectRef<NonNullable<ImpactedPartition["output"]>>("OutputLocation").implement({
  fields: (t) => ({
    storageRef: t.exposeString("storageRef", { nullable: true, description: "Reference into the output store; null when inline" }),
    inline: t.exposeBoolean("inline", { description: "Kept in the metadata database (outputs.inline_value)" }),
    sizeBytes: t.exposeInt("sizeBytes"),
  }),
});

const ImpactedPartitionRef = builder.objectRef<ImpactedPartition>("ImpactedPartition").implement({
  description: "An asset partition holding data, with the materialisation and run that wrote it and where it is stored",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey"),
    eventId: t.string({ nullable: true, resolve: (p) => idOf(p.eventId) }),
    eventKind: t.exposeString("eventKind", { nullable: true }),
    runId: t.exposeString("runId", { nullable: true }),
    runStatus: t.exposeString("runStatus", { nullable: true }),
    stepId: t.string({ nullable: true, resolve: (p) => idOf(p.stepId) }),
    tryNumber: t.exposeInt("tryNumber", { nullable: true }),
    dataVersion: t.exposeString("dataVersion", { nullable: true }),
    materializedAt: t.field({ type: "DateTime", nullable: true, resolve: (p) => p.materializedAt }),
    output: t.field({ type: OutputLocationRef, nullable: true, resolve: (p) => p.output }),
  }),
});

const ErasureAssetRef = builder.objectRef<ErasureImpactAsset>("ErasureImpactAsset").implement({
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    pii: t.field({
      type: "JSON",
      nullable: true,
      description: "metadata.pii: the columns holding personal data (or true)",
      resolve: (a) => a.pii,
    }),
    hasPii: t.boolean({ resolve: (a) => a.pii !== null }),
    defined: t.exposeBoolean("defined", { description: "false: no longer in the definitions (listed, but not re-materialisable)" }),
    partitionCount: t.exposeInt("partitionCount"),
  }),
});

const AssetPartitionKeysRef = builder.objectRef<AssetPartitionKeys>("AssetPartitionKeys").implement({
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partitionKeys: t.stringList({ resolve: (g) => [...g.partitionKeys] }),
  }),
});

const ErasureBackfillRef = builder.objectRef<ErasureImpact["backfill"]>("ErasureBackfillSelection").implement({
  description: "Pass both fields to launchBackfill to re-materialise the derived partitions after the source is purged",
  fields: (t) => ({
    assetKeys: t.stringList({ resolve: (b) => [...b.assetKeys] }),
    assetPartitions: t.field({ type: [AssetPartitionKeysRef], resolve: (b) => [...b.assetPartitions] }),
  }),
});

const ErasureImpactRef = builder.objectRef<ErasureImpact>("ErasureImpact").implement({
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    sources: t.field({ type: [ImpactedPartitionRef], resolve: (e) => [...e.sources] }),
    partitions: t.field({
      type: [ImpactedPartitionRef],
      description: "Every derived partition, upstream assets first",
      resolve: (e) => [...e.partitions],
    }),
    assets: t.field({
      type: [ErasureAssetRef],
      description: "The source asset first, then each derived asset",
      resolve: (e) => [...e.assets],
    }),
    backfill: t.field({ type: ErasureBackfillRef, resolve: (e) => e.backfill }),
  }),
});

builder.queryFields((t) => ({
  lineage: t.field({
    type: LineageRef,
    description: "Static and run-level lineage around an asset partition, upstream or downstream",
    args: {
      assetKey: t.arg.string({ required: true }),
      partitionKey: t.arg.string({ description: "Required for run-level lineage of a partitioned asset" }),
      direction: t.arg({ type: LineageDirectionEnum, defaultValue: "upstream" }),
      depth: t.arg.int({ defaultValue: 3, description: "1 to 20" }),
    },
    resolve: (_root, args, ctx) =>
      answer(() =>
        ctx.lineage.around({
          assetKey: args.assetKey,
          partitionKey: args.partitionKey ?? undefined,
          direction: args.direction ?? undefined,
          depth: args.depth ?? undefined,
        }),
      ),
  }),
  erasureImpact: t.field({
    type: ErasureImpactRef,
    description: "Every derived asset partition holding data read from these partitions, transitively, and where it is stored",
    args: {
      assetKey: t.arg.string({ required: true }),
      partitionKeys: t.arg.stringList({ required: true }),
    },
    resolve: (_root, args, ctx) =>
      answer(() => ctx.lineage.erasureImpact({ assetKey: args.assetKey, partitionKeys: args.partitionKeys }, ctx.guard)),
  }),
}));

async function answer<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asGraphQLError(err);
  }
}

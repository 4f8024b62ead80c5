// Backfills: launch, follow, cancel, resume, and re-run the failures of
// "materialise these partitions of these assets" as a paced series of runs.
import { z } from "zod";
import { loadPartitionContext } from "../../partitions/index.js";
import type { BackfillRecord, BackfillStatus, RunDetail, RunSummary } from "../../storage/index.js";
import { failedPartitionRanges, previewBackfill, type BackfillPreview } from "../commands/launch-backfill.js";
import { batched, perContext } from "./batch.js";
import { builder } from "./builder.js";
import type { ApiServices } from "../services.js";
import { asGraphQLError, codeError, parseInput } from "./errors.js";
import { dimensionsInput, PartitionDimensionInput } from "./dimension-input.js";

const BACKFILL_STATUSES = [
  "requested",
  "running",
  "completed",
  "failed",
  "canceling",
  "canceled",
] as const satisfies readonly BackfillStatus[];
const BackfillStatusEnum = builder.enumType("BackfillStatus", { values: BACKFILL_STATUSES });

/** The `Run` object type is defined in runs.ts; referenced here by name. */
const RUN_TYPE = "Run" as unknown as ReturnType<typeof builder.objectRef<RunSummary & Partial<Pick<RunDetail, "steps">>>>;

const PartitionRangeRef = builder.objectRef<{ from: string; to: string }>("PartitionKeyRange").implement({
  description: "Partition keys from–to, both included ('' for an unpartitioned asset)",
  fields: (t) => ({ from: t.exposeString("from"), to: t.exposeString("to") }),
});

const FailedPartitionsRef = builder
  .objectRef<{ assetKey: string; count: number; ranges: { from: string; to: string }[] }>("BackfillFailedPartitions")
  .implement({
    fields: (t) => ({
      assetKey: t.exposeString("assetKey"),
      count: t.exposeInt("count"),
      ranges: t.field({ type: [PartitionRangeRef], resolve: (f) => f.ranges }),
    }),
  });

const BackfillRef = builder.objectRef<BackfillRecord>("Backfill").implement({
  description:
    "Materialise these partitions of these assets: a paced series of runs, oldest partitions first. Counts are asset partitions: " +
    "requested = done + failed + inProgress + not started yet",
  fields: (t) => ({
    id: t.exposeString("id"),
    status: t.field({ type: BackfillStatusEnum, resolve: (b) => b.status }),
    assetKeys: t.stringList({ resolve: (b) => [...b.selection.assetKeys] }),
    from: t.string({ nullable: true, resolve: (b) => b.selection.from ?? null }),
    to: t.string({ nullable: true, resolve: (b) => b.selection.to ?? null }),
    partitions: t.stringList({ nullable: true, resolve: (b) => (b.selection.partitions ? [...b.selection.partitions] : null) }),
    allPartitions: t.boolean({ resolve: (b) => b.selection.allPartitions ?? false }),
    dimensions: t.field({
      type: "JSON",
      nullable: true,
      description: "The selection per dimension ([{ name, keys } or { name, from, to }]), when it was launched with one",
      resolve: (b) => (b.selection.dimensions ? b.selection.dimensions.map((d) => ({ ...d })) : null),
    }),
    includeUpstream: t.boolean({ resolve: (b) => b.selection.includeUpstream }),
    retryOf: t.string({
      nullable: true,
      description: "The backfill whose failed partitions this one re-runs",
      resolve: (b) => b.selection.retryOf ?? null,
    }),
    maxConcurrentRuns: t.exposeInt("maxConcurrentRuns"),
    maxPartitionsPerRun: t.exposeInt("maxPartitionsPerRun"),
    priority: t.exposeInt("priority"),
    tags: t.field({ type: "JSON", resolve: (b) => b.tags }),
    requested: t.exposeInt("requested", { description: "Asset partitions to materialise" }),
    done: t.exposeInt("done", { description: "Materialised (or skipped by a trigger rule), including covered ones" }),
    failed: t.exposeInt("failed", { description: "Failed, or blocked by a failed upstream partition" }),
    inProgress: t.exposeInt("inProgress", { description: "In runs that have not ended" }),
    covered: t.int({ description: "Materialised by another run after the launch, so not run again", resolve: (b) => b.cursor.covered }),
    chunks: t.int({
      description: "Runs it is cut into (chunks that turn out empty or covered take none)",
      resolve: (b) => b.cursor.chunks,
    }),
    chunksStarted: t.int({ resolve: (b) => b.cursor.next }),
    runsCreated: t.int({ resolve: (b) => b.cursor.runsCreated }),
    waiting: t.string({ nullable: true, description: "Why the next run is not created yet", resolve: (b) => b.cursor.waiting }),
    error: t.field({ type: "JSON", nullable: true, resolve: (b) => b.error }),
    createdAt: t.field({ type: "DateTime", resolve: (b) => b.createdAt }),
    updatedAt: t.field({ type: "DateTime", resolve: (b) => b.updatedAt }),
    canceledAt: t.field({ type: "DateTime", nullable: true, resolve: (b) => b.canceledAt }),
    completedAt: t.field({ type: "DateTime", nullable: true, resolve: (b) => b.completedAt }),
    failedPartitions: t.field({
      type: [FailedPartitionsRef],
      description: "What retryBackfillFailures would re-run",
      resolve: async (b, _args, ctx) => {
        const { graph } = await ctx.assets.catalog.current();
        const specs = Object.keys(b.cursor.failedPartitions).map((k) => graph.get(k)?.partitions ?? null);
        const partitionCtx = await loadPartitionContext(specs, (name) => ctx.assets.catalog.dynamicKeys(name));
        return failedPartitionRanges(b, graph, partitionCtx);
      },
    }),
    runs: t.field({
      type: [RUN_TYPE],
      description: "Its runs, newest first",
      args: { first: t.arg.int({ defaultValue: 100 }) },
      resolve: async (b, args, ctx) => {
        const first = args.first ?? 100;
        if (first < 1 || first > 1000) throw codeError("INPUT_INVALID", `runs(first: ${first}): first must be between 1 and 1000`);
        return ctx.runs.store.listRuns({ limit: first, backfillId: b.id });
      },
    }),
  }),
});

builder.queryFields((t) => ({
  backfills: t.field({
    type: [BackfillRef],
    description: "Backfills, newest first",
    args: { status: t.arg({ type: BackfillStatusEnum }), first: t.arg.int({ defaultValue: 50 }) },
    resolve: async (_root, args, ctx) => {
      const first = args.first ?? 50;
      if (first < 1 || first > 1000) throw codeError("INPUT_INVALID", `backfills(first: ${first}): first must be between 1 and 1000`);
      return ctx.backfills.store.list({ limit: first, ...(args.status ? { status: args.status } : {}) });
    },
  }),
  backfill: t.field({
    type: BackfillRef,
    nullable: true,
    args: { id: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => (await ctx.backfills.store.get(args.id)) ?? null,
  }),
}));

const launchInput = z
  .strictObject({
    assetKeys: z.array(z.string().min(1, "asset keys must not be empty")).min(1, "name at least one asset"),
    from: z.string().min(1).optional(),
    to: z.string().min(1).optional(),
    partitions: z.array(z.string().min(1)).min(1, "list at least one partition key, or give a range").optional(),
    allPartitions: z.boolean().optional(),
    dimensions: dimensionsInput,
    assetPartitions: z
      .array(z.strictObject({ assetKey: z.string().min(1, "asset keys must not be empty"), partitionKeys: z.array(z.string()) }))
      .min(1, "give the partitions of at least one asset")
      .optional(),
    includeUpstream: z.boolean().optional(),
    maxConcurrentRuns: z.number().int().min(1).max(1000).optional(),
    maxPartitionsPerRun: z.number().int().min(1).optional(),
    priority: z.number().int().optional(),
    tags: z.record(z.string(), z.string()).optional(),
  })
  .refine(
    (v) =>
      [
        v.partitions !== undefined,
        v.from !== undefined || v.to !== undefined,
        v.allPartitions === true,
        v.assetPartitions !== undefined,
        v.dimensions !== undefined,
      ].filter(Boolean).length <= 1,
    {
      message: "give one of: a range (from/to), a list of partitions, allPartitions, dimensions, or assetPartitions",
      path: ["partitions"],
    },
  );

const AssetPartitionKeysInput = builder.inputType("AssetPartitionKeysInput", {
  description: 'Partition keys of one asset, in its own partitions definition ([""] for an unpartitioned asset)',
  fields: (t) => ({
    assetKey: t.string({ required: true }),
    partitionKeys: t.stringList({ required: true }),
  }),
});

const LaunchBackfillInput = builder.inputType("LaunchBackfillInput", {
  fields: (t) => ({
    assetKeys: t.stringList({ required: true }),
    from: t.string({ description: "First partition key (inclusive), in the selection roots' partitions" }),
    to: t.string({ description: "Last partition key (inclusive)" }),
    partitions: t.stringList({ description: "Partition keys, instead of a range" }),
    allPartitions: t.boolean({ description: "Every existing partition" }),
    dimensions: t.field({
      type: [PartitionDimensionInput],
      description: "For a multi-partitioned asset: keys or a range per dimension (their cross product), instead of a range or a list",
    }),
    assetPartitions: t.field({
      type: [AssetPartitionKeysInput],
      description: "Explicit partitions per asset (each asset of assetKeys once), e.g. erasureImpact's backfill selection",
    }),
    includeUpstream: t.boolean({ description: "Also materialise the upstream partitions it reads that are not materialised" }),
    maxConcurrentRuns: t.int({ description: "Runs in flight at once (default 1)" }),
    maxPartitionsPerRun: t.int({ description: "Partitions per run (default 1)" }),
    priority: t.int({ description: "Step priority offset (default -10: below scheduled work)" }),
    tags: t.field({ type: "JSON" }),
  }),
});

const BackfillPreviewAssetRef = builder.objectRef<BackfillPreview["perAsset"][number]>("BackfillPreviewAsset").implement({
  description: "The partitions of one asset a backfill would materialise",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partitions: t.exposeInt("partitions"),
    firstKey: t.exposeString("firstKey", { description: "Its first partition key ('' when unpartitioned)" }),
    lastKey: t.exposeString("lastKey", { description: "Its last partition key ('' when unpartitioned)" }),
  }),
});

const BackfillPreviewRef = builder.objectRef<BackfillPreview>("BackfillPreview").implement({
  description: "What launchBackfill would create for the same input; nothing is stored",
  fields: (t) => ({
    partitions: t.exposeInt("partitions", { description: "Asset partitions to materialise (with includeUpstream, the upstream ones too)" }),
    runs: t.exposeInt("runs", { description: "Runs it would be cut into" }),
    perAsset: t.field({ type: [BackfillPreviewAssetRef], description: "Per asset, in dependency order", resolve: (p) => [...p.perAsset] }),
    maxPartitionsPerRun: t.exposeInt("maxPartitionsPerRun"),
    maxConcurrentRuns: t.exposeInt("maxConcurrentRuns"),
    priority: t.exposeInt("priority"),
    definitionsVersion: t.exposeInt("definitionsVersion", { description: "The definitions version it was planned against" }),
  }),
});

/** The services previewBackfill reads, from the request's context (it writes nothing, so needs no backfill store). */
function previewServices(ctx: Pick<ApiServices, "assets" | "runs">): Parameters<typeof previewBackfill>[0] {
  return {
    graphs: { current: () => ctx.assets.catalog.current() },
    runs: ctx.runs.store,
    definitions: { listDynamicPartitions: (name) => ctx.assets.catalog.dynamicKeys(name) },
  };
}

builder.queryFields((t) => ({
  backfillPreview: t.field({
    type: BackfillPreviewRef,
    description:
      "How many partitions and runs launchBackfill would create for this input, checked exactly as launchBackfill checks it " +
      "(the same errors: unknown asset, range outside the definition, reversed range, missing upstream…); stores nothing",
    args: { input: t.arg({ type: LaunchBackfillInput, required: true }) },
    resolve: async (_root, args, ctx) => {
      const input = parseInput(launchInput, args.input, "backfillPreview");
      try {
        return await previewBackfill(previewServices(ctx), input, ctx.now());
      } catch (err) {
        throw asGraphQLError(err);
      }
    },
  }),
}));

/** The backfills of a list's runs, each read once however many of the runs it created. */
const backfillLoader = perContext((ctx: Pick<ApiServices, "backfills">) =>
  batched(async (ids: string[]) => new Map(await Promise.all(ids.map(async (id) => [id, await ctx.backfills.store.get(id)] as const)))),
);

builder.objectFields(RUN_TYPE, (t) => ({
  backfillId: t.string({ nullable: true, description: "The backfill that created this run, if any", resolve: (r) => r.backfillId }),
  backfill: t.field({
    type: BackfillRef,
    nullable: true,
    description: "The backfill that created this run, if any",
    resolve: async (r, _args, ctx) => (r.backfillId ? ((await backfillLoader(ctx)(r.backfillId)) ?? null) : null),
  }),
}));

builder.mutationFields((t) => ({
  launchBackfill: t.field({
    type: BackfillRef,
    description: "Starts a backfill; the reconcilers run it as a paced series of runs, oldest partitions first",
    args: { input: t.arg({ type: LaunchBackfillInput, required: true }) },
    resolve: async (_root, args, ctx) => {
      const input = parseInput(launchInput, args.input, "launchBackfill");
      try {
        return await ctx.backfills.launch(input, ctx.guard);
      } catch (err) {
        throw asGraphQLError(err);
      }
    },
  }),
  cancelBackfill: t.field({
    type: BackfillRef,
    description: "Stops creating runs and cancels the backfill's runs in flight",
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => command(() => ctx.backfills.cancel(args.id, ctx.guard)),
  }),
  resumeBackfill: t.field({
    type: BackfillRef,
    description: "Continues a canceled backfill where it stopped",
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => command(() => ctx.backfills.resume(args.id, ctx.guard)),
  }),
  retryBackfillFailures: t.field({
    type: BackfillRef,
    description: "Re-runs only the failed partitions of an ended backfill, as a new backfill",
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => command(() => ctx.backfills.retryFailures(args.id, ctx.guard)),
  }),
}));

async function command(fn: () => Promise<BackfillRecord>): Promise<BackfillRecord> {
  try {
    return await fn();
  } catch (err) {
    throw asGraphQLError(err);
  }
}

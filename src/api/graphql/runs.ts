import { z } from "zod";
import {
  MAX_READ_PAGE,
  type ReadPage,
  type RunAssetSummary,
  type RunDetail,
  type RunSummary,
  type StepRecord,
  type StepTryRecord,
} from "../../storage/index.js";
import { batched, perContext } from "./batch.js";
import { builder } from "./builder.js";
import type { ApiServices } from "../services.js";
import { asGraphQLError, codeError, parseInput } from "./errors.js";
import { currentTriggerOf, TriggerRef } from "./triggers.js";
import { dimensionsInput, PartitionDimensionInput } from "./dimension-input.js";

const RUN_STATUSES = ["queued", "running", "success", "failed", "canceled"] as const;
const RunStatusEnum = builder.enumType("RunStatus", { values: RUN_STATUSES });

const FailureClassEnum = builder.enumType("FailureClass", {
  description: "Whose fault a failed try was; only user failures count against an asset's retries",
  values: {
    USER: {
      value: "user",
      description: "The asset's code threw, ran past its own timeout, returned something that cannot be stored, or a check failed",
    },
    INFRASTRUCTURE: {
      value: "infrastructure",
      description:
        "The try ended for a reason outside the asset's code (its worker was lost, stopped or killed from outside; the execution API, " +
        "the database or the output store could not be reached; the job was lost before it started): it is re-run on the " +
        "infrastructure retry budget (TRIBUTARY_INFRASTRUCTURE_RETRIES)",
    },
  } as const,
});

const StepTryRef = builder.objectRef<StepTryRecord>("StepTry").implement({
  description: "One try of a step; every try is kept",
  fields: (t) => ({
    tryNumber: t.exposeInt("tryNumber"),
    state: t.exposeString("state"),
    workerId: t.exposeString("workerId", { nullable: true }),
    hostname: t.exposeString("hostname", { nullable: true }),
    pid: t.exposeInt("pid", { nullable: true }),
    queuedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.queuedAt }),
    startedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.startedAt }),
    endedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.endedAt }),
    durationMs: t.float({ nullable: true, resolve: (r) => r.durationMs }),
    error: t.field({ type: "JSON", nullable: true, resolve: (r) => r.error }),
    failureClass: t.field({
      type: FailureClassEnum,
      nullable: true,
      description: "Whose fault the try's failure was; null for a try that did not fail",
      resolve: (r) => r.failureClass,
    }),
    logRef: t.exposeString("logRef", { nullable: true }),
  }),
});

const StepRef = builder.objectRef<StepRecord>("Step").implement({
  description: "One (asset, partition) of a run: Airflow's task instance",
  fields: (t) => ({
    id: t.string({ resolve: (s) => String(s.id) }),
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey"),
    mapIndex: t.exposeInt("mapIndex", { description: "-1 for a step of its own; 0… for a mapped step, its item's position" }),
    mapLabel: t.exposeString("mapLabel", { nullable: true, description: "A mapped step's readable label, when the asset gives one" }),
    mapCount: t.exposeInt("mapCount", {
      nullable: true,
      description: "A step that fanned out: how many mapped steps it expanded into (it gathers their outputs); null otherwise",
    }),
    checkName: t.exposeString("checkName", {
      nullable: true,
      description: "The asset check this step runs; null for the asset's own step",
    }),
    state: t.exposeString("state"),
    tryNumber: t.exposeInt("tryNumber"),
    maxTries: t.exposeInt("maxTries"),
    pool: t.exposeString("pool"),
    priority: t.exposeInt("priority"),
    scheduledAt: t.field({ type: "DateTime", nullable: true, resolve: (s) => s.scheduledAt }),
    queuedAt: t.field({ type: "DateTime", nullable: true, resolve: (s) => s.queuedAt }),
    startedAt: t.field({ type: "DateTime", nullable: true, resolve: (s) => s.startedAt }),
    endedAt: t.field({ type: "DateTime", nullable: true, resolve: (s) => s.endedAt }),
    nextRetryAt: t.field({ type: "DateTime", nullable: true, resolve: (s) => s.nextRetryAt }),
    workerId: t.exposeString("workerId", { nullable: true }),
    skipReason: t.exposeString("skipReason", { nullable: true }),
    error: t.field({ type: "JSON", nullable: true, resolve: (s) => s.error }),
    upstreamStepIds: t.stringList({ resolve: (s) => s.upstream.map(String) }),
    tries: t.field({ type: [StepTryRef], resolve: (s) => [...s.tries] }),
    waitingFor: t.field({
      type: TriggerRef,
      nullable: true,
      description:
        "The step's current trigger: what a deferred step waits for, or (once resumed or timed out) the wait it ended; null when it never deferred",
      resolve: async (s, _args, ctx) => (await currentTriggerOf(ctx)(s.id)) ?? null,
    }),
  }),
});

const RunAssetRef = builder.objectRef<RunAssetSummary>("RunAsset").implement({
  description: "One asset's share of a run",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    steps: t.exposeInt("steps", { description: "Its steps in the run: one per partition (and per mapped item)" }),
    minPartition: t.exposeString("minPartition", { description: 'The smallest partition key in text order ("" when unpartitioned)' }),
    maxPartition: t.exposeString("maxPartition", { description: "The largest partition key in text order" }),
  }),
});

/** One statement for every run of a list asking for its assets. */
const runAssetsLoader = perContext((ctx: Pick<ApiServices, "runs">) => batched((ids: string[]) => ctx.runs.reads.runAssets(ids)));

/** The steps of every run of a list asking for them, read at once (a run page has them already). */
const runStepsLoader = perContext((ctx: Pick<ApiServices, "runs">) => batched((ids: string[]) => ctx.runs.store.stepsOfRuns(ids)));

/** A run's steps: those it came with (a run page), or those of its list's runs, read together. */
export async function stepsOfRun(
  r: Pick<RunSummary, "id"> & Partial<Pick<RunDetail, "steps">>,
  ctx: Pick<ApiServices, "runs">,
): Promise<readonly StepRecord[]> {
  return r.steps ?? (await runStepsLoader(ctx)(r.id)) ?? [];
}

const RunRef = builder.objectRef<RunSummary & Partial<Pick<RunDetail, "steps">>>("Run").implement({
  fields: (t) => ({
    id: t.exposeString("id"),
    status: t.field({ type: RunStatusEnum, resolve: (r) => r.status }),
    origin: t.exposeString("origin"),
    definitionsVersion: t.exposeInt("snapshotVersion"),
    jobName: t.exposeString("jobName", { nullable: true }),
    priority: t.exposeInt("priority"),
    tags: t.field({ type: "JSON", resolve: (r) => r.tags }),
    stepsTotal: t.exposeInt("stepsTotal"),
    stepsDone: t.exposeInt("stepsDone"),
    stepsFailed: t.exposeInt("stepsFailed"),
    stepsActive: t.exposeInt("stepsActive"),
    createdAt: t.field({ type: "DateTime", resolve: (r) => r.createdAt }),
    startedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.startedAt }),
    endedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.endedAt }),
    cancelRequestedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.cancelRequestedAt }),
    planVersion: t.exposeInt("planVersion", {
      description: "1 as planned; bumped each time steps join the run (a fan-out) or are cleared inside it",
    }),
    steps: t.field({
      type: [StepRef],
      description: "Every step with its tries; over a list, the steps of all its runs are read at once",
      resolve: async (r, _args, ctx) => [...(await stepsOfRun(r, ctx))],
    }),
    assets: t.field({
      type: [RunAssetRef],
      description: "The assets the run materialises, by key, with how many partitions of each and their key range (batched over a list)",
      resolve: async (r, _args, ctx) => [...((await runAssetsLoader(ctx)(r.id)) ?? [])],
    }),
  }),
});

const RUN_ORIGINS = ["manual", "schedule", "automation", "backfill", "rerun"] as const;
const RunOriginEnum = builder.enumType("RunOrigin", { values: RUN_ORIGINS });

const RunFilterInput = builder.inputType("RunFilter", {
  description: "Which runs to list; fields left out do not filter",
  fields: (t) => ({
    status: t.field({ type: RunStatusEnum }),
    assetKey: t.string({ description: "Runs with a step of this asset" }),
    backfillId: t.string(),
    origin: t.field({ type: RunOriginEnum }),
    createdAfter: t.field({ type: "DateTime", description: "Created at or after this instant" }),
    createdBefore: t.field({ type: "DateTime", description: "Created before this instant" }),
  }),
});

const RunConnectionRef = builder.objectRef<ReadPage<RunSummary>>("RunConnection").implement({
  description: "A page of runs, newest first",
  fields: (t) => ({
    nodes: t.field({ type: [RunRef], resolve: (p) => [...p.nodes] }),
    endCursor: t.exposeString("endCursor", { nullable: true, description: "Pass as `after` for the next page" }),
    hasNextPage: t.exposeBoolean("hasNextPage"),
  }),
});

const runFilter = z
  .strictObject({
    status: z.enum(RUN_STATUSES).optional(),
    assetKey: z.string().min(1, "must not be empty").optional(),
    backfillId: z.uuid("must be a backfill id (a UUID)").optional(),
    origin: z.enum(RUN_ORIGINS).optional(),
    createdAfter: z.date().optional(),
    createdBefore: z.date().optional(),
  })
  .refine((f) => !f.createdAfter || !f.createdBefore || f.createdAfter < f.createdBefore, {
    message: "createdAfter must be before createdBefore",
    path: ["createdAfter"],
  });

const runsArgs = z.strictObject({
  filter: runFilter.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  first: z.number(),
  after: z.string().min(1, "must not be empty").optional(),
});

/** Resolves `runs` and `runsConnection`: validates the arguments, checks the asset exists, reads one page. */
async function runPage(
  field: string,
  rawArgs: Record<string, unknown>,
  ctx: Pick<ApiServices, "assets" | "runs">,
): Promise<ReadPage<RunSummary>> {
  const args = parseInput(runsArgs, { ...rawArgs, filter: rawArgs.filter ? withoutNulls(rawArgs.filter) : undefined }, field, "");
  checkFirst(field, args.first);
  try {
    const filter = { ...args.filter, ...(args.status ? { status: args.status } : {}) };
    if (filter.assetKey !== undefined) (await ctx.assets.catalog.current()).graph.require(filter.assetKey);
    return await ctx.runs.reads.runPage({ ...filter, first: args.first, after: args.after });
  } catch (err) {
    throw asGraphQLError(err);
  }
}

/** INPUT_INVALID unless 1 ≤ first ≤ MAX_READ_PAGE (message kept as clients already match it). */
export function checkFirst(field: string, first: number): void {
  if (!Number.isInteger(first) || first < 1 || first > MAX_READ_PAGE) {
    throw codeError("INPUT_INVALID", `${field}(first: ${first}): first must be between 1 and ${MAX_READ_PAGE}`);
  }
}

/** An input object without its null fields (GraphQL sends null for fields set to null; zod takes them as absent). */
export function withoutNulls(input: unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined));
}

builder.queryFields((t) => ({
  runs: t.field({
    type: [RunRef],
    description: "Runs, newest first: the nodes of runsConnection, for clients that need no cursor",
    args: {
      filter: t.arg({ type: RunFilterInput }),
      status: t.arg({ type: RunStatusEnum, description: "Same as filter.status (kept for older clients)" }),
      first: t.arg.int({ defaultValue: 50 }),
      after: t.arg.string({ description: "endCursor of a runsConnection page" }),
    },
    resolve: async (_root, args, ctx) => [...(await runPage("runs", args, ctx)).nodes],
  }),
  runsConnection: t.field({
    type: RunConnectionRef,
    description: "Runs matching the filter, newest first, a page at a time",
    args: {
      filter: t.arg({ type: RunFilterInput }),
      first: t.arg.int({ defaultValue: 50 }),
      after: t.arg.string({ description: "endCursor of the previous page" }),
    },
    resolve: (_root, args, ctx) => runPage("runsConnection", args, ctx),
  }),
  run: t.field({
    type: RunRef,
    nullable: true,
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => ctx.runs.store.getRun(args.id).then((r) => r ?? null),
  }),
}));

const launchInput = z.strictObject({
  assetKeys: z.array(z.string().min(1)).min(1, "name at least one asset"),
  partition: z.string().optional(),
  from: z.string().optional(),
  to: z.string().optional(),
  allPartitions: z.boolean().optional(),
  dimensions: dimensionsInput,
  includeUpstream: z.boolean().optional(),
  maxActiveSteps: z.number().int().min(1).optional(),
  tags: z.record(z.string(), z.string()).optional(),
});

const LaunchRunInput = builder.inputType("LaunchRunInput", {
  fields: (t) => ({
    assetKeys: t.stringList({ required: true }),
    partition: t.string(),
    from: t.string(),
    to: t.string(),
    allPartitions: t.boolean(),
    dimensions: t.field({
      type: [PartitionDimensionInput],
      description: "For a multi-partitioned asset: keys or a range per dimension, instead of partition, from/to or allPartitions",
    }),
    includeUpstream: t.boolean(),
    maxActiveSteps: t.int(),
    tags: t.field({ type: "JSON" }),
  }),
});

const clearMappedStepInput = z.strictObject({
  runId: z.string().min(1, "must not be empty"),
  assetKey: z.string().min(1, "must not be empty"),
  partition: z.string().optional(),
  mapIndex: z.number().int("must be a whole number").min(0, "must be 0 or more"),
});

const ClearMappedStepInput = builder.inputType("ClearMappedStepInput", {
  description: "One mapped step: the run, the asset and partition that fanned out, and the item's map index",
  fields: (t) => ({
    runId: t.string({ required: true }),
    assetKey: t.string({ required: true }),
    partition: t.string({ description: "Omit for an unpartitioned asset" }),
    mapIndex: t.int({ required: true }),
  }),
});

builder.mutationType({
  fields: (t) => ({
    launchRun: t.field({
      type: RunRef,
      description: "Plans and starts a run materialising the selected partitions of the selected assets",
      args: { input: t.arg({ type: LaunchRunInput, required: true }) },
      resolve: async (_root, args, ctx) => {
        const input = parseInput(launchInput, args.input, "launchRun");
        try {
          const launched = await ctx.runs.launch(input, ctx.guard);
          const run = await ctx.runs.store.getRun(launched.runId);
          if (!run) throw codeError("INTERNAL", `run ${launched.runId} vanished after being created`);
          return run;
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
    clearMappedStep: t.field({
      type: RunRef,
      description:
        "Runs one mapped step of a run again, inside that run: its expanded step gathers again and the steps after it " +
        "wait for it; the run reopens. Refused (nothing written) while a step concerned is active, or when a later run " +
        "superseded the run for one of those partitions (CLEAR_SUPERSEDED: clear the partition instead)",
      args: { input: t.arg({ type: ClearMappedStepInput, required: true }) },
      resolve: async (_root, args, ctx) => {
        const input = parseInput(clearMappedStepInput, withoutNulls(args.input), "clearMappedStep");
        try {
          const cleared = await ctx.runs.clearMappedStep(
            { runId: input.runId, assetKey: input.assetKey, partitionKey: input.partition ?? "", mapIndex: input.mapIndex },
            ctx.guard,
          );
          return cleared.run;
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
    cancelRun: t.field({
      type: RunRef,
      args: { id: t.arg.string({ required: true }) },
      resolve: async (_root, args, ctx) => {
        try {
          return await ctx.runs.cancel(args.id, ctx.guard);
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
  }),
});

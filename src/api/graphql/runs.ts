import { z } from "zod";
import type { RunDetail, RunSummary, StepRecord, StepTryRecord } from "../../storage/index.js";
import { builder } from "./builder.js";
import { asGraphQLError, codeError } from "./errors.js";

const RUN_STATUSES = ["queued", "running", "success", "failed", "canceled"] as const;
const RunStatusEnum = builder.enumType("RunStatus", { values: RUN_STATUSES });

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
    logRef: t.exposeString("logRef", { nullable: true }),
  }),
});

const StepRef = builder.objectRef<StepRecord>("Step").implement({
  description: "One (asset, partition) of a run: Airflow's task instance",
  fields: (t) => ({
    id: t.string({ resolve: (s) => String(s.id) }),
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey"),
    mapIndex: t.exposeInt("mapIndex"),
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
  }),
});

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
    steps: t.field({
      type: [StepRef],
      resolve: async (r, _args, ctx) => [...(r.steps ?? (await ctx.runs.getRun(r.id))?.steps ?? [])],
    }),
  }),
});

builder.queryFields((t) => ({
  runs: t.field({
    type: [RunRef],
    args: {
      status: t.arg({ type: RunStatusEnum }),
      first: t.arg.int({ defaultValue: 50 }),
    },
    resolve: async (_root, args, ctx) => {
      const first = args.first ?? 50;
      if (first < 1 || first > 1000) throw codeError("INPUT_INVALID", `runs(first: ${first}): first must be between 1 and 1000`);
      return ctx.runs.listRuns({ limit: first, ...(args.status ? { status: args.status } : {}) });
    },
  }),
  run: t.field({
    type: RunRef,
    nullable: true,
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => ctx.runs.getRun(args.id).then((r) => r ?? null),
  }),
}));

const launchInput = z.strictObject({
  assetKeys: z.array(z.string().min(1)).min(1, "name at least one asset"),
  partition: z.string().optional(),
  from: z.string().optional(),
  to: z.string().optional(),
  allPartitions: z.boolean().optional(),
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
    includeUpstream: t.boolean(),
    maxActiveSteps: t.int(),
    tags: t.field({ type: "JSON" }),
  }),
});

builder.mutationType({
  fields: (t) => ({
    launchRun: t.field({
      type: RunRef,
      description: "Plans and starts a run materialising the selected partitions of the selected assets",
      args: { input: t.arg({ type: LaunchRunInput, required: true }) },
      resolve: async (_root, args, ctx) => {
        const parsed = launchInput.safeParse(stripNulls(args.input));
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw codeError("INPUT_INVALID", `launchRun: input.${issue?.path.join(".") || ""}: ${issue?.message}`);
        }
        try {
          const launched = await ctx.launchRun(parsed.data);
          const run = await ctx.runs.getRun(launched.runId);
          if (!run) throw codeError("INTERNAL", `run ${launched.runId} vanished after being created`);
          return run;
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
          return await ctx.runs.requestCancel(args.id, ctx.now());
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
  }),
});

function stripNulls(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined));
}

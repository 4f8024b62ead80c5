// Triggers: what deferred steps and source assets wait for, and how the
// triggerer's checks of them went. Read only.
import { z } from "zod";
import { MAX_TRIGGER_PAGE, TRIGGER_STATUSES, type TriggerCounts, type TriggerPage, type TriggerView } from "../../storage/index.js";
import { batched, perContext } from "./batch.js";
import { builder } from "./builder.js";
import type { ApiServices } from "../services.js";
import { asGraphQLError, parseInput } from "./errors.js";

const DEFAULT_PAGE = 50;

const TriggerStatusEnum = builder.enumType("TriggerStatus", {
  description:
    "waiting: checked by a triggerer until it fires or times out; fired: the awaited thing appeared (payload holds what was found); " +
    "timed_out: its timeout passed first; canceled: its step's run was canceled; failed: given up",
  values: TRIGGER_STATUSES,
});

/** A Trigger object, for fields of other types (Step.waitingFor). */
export const TriggerRef = builder.objectRef<TriggerView>("Trigger").implement({
  description: "An async check a triggerer runs: a deferred step's wait, or the observation of a source asset's partition",
  fields: (t) => ({
    id: t.string({ resolve: (x) => String(x.id) }),
    kind: t.exposeString("kind", {
      description: "at, fileExists, s3ObjectExists, httpOk, sqlReturnsRows, assetMaterialized, or a custom kind",
    }),
    args: t.field({
      type: "JSON",
      description: "The trigger's arguments; templates ({partition}, {start}, {end}) unrendered",
      resolve: (x) => x.args,
    }),
    status: t.field({ type: TriggerStatusEnum, resolve: (x) => x.status }),
    stepId: t.string({
      nullable: true,
      description: "The deferred step waiting on it; null for a source observation",
      resolve: (x) => idOrNull(x.stepId),
    }),
    runId: t.exposeString("runId", { nullable: true }),
    assetKey: t.exposeString("assetKey", { nullable: true, description: "The observed source asset, or the deferred step's asset" }),
    partitionKey: t.exposeString("partitionKey", { nullable: true }),
    partitionWindow: t.field({
      type: "JSON",
      nullable: true,
      description: "The partition's time window {start, end} (ISO), for {start}/{end} templates; null when untimed",
      resolve: (x) => x.partitionWindow,
    }),
    attempts: t.exposeInt("attempts", { description: "Checks run so far, failed ones included" }),
    pollIntervalMs: t.exposeInt("pollIntervalMs"),
    softFail: t.exposeBoolean("softFail", { description: "A timeout skips the step instead of failing it" }),
    nextCheckAt: t.field({ type: "DateTime", nullable: true, description: "Null once it ended", resolve: (x) => x.nextCheckAt }),
    timeoutAt: t.field({ type: "DateTime", nullable: true, resolve: (x) => x.timeoutAt }),
    lastCheckedAt: t.field({ type: "DateTime", nullable: true, resolve: (x) => x.lastCheckedAt }),
    lastResult: t.field({
      type: "JSON",
      nullable: true,
      description: "What the last check saw (or its error message)",
      resolve: (x) => x.lastResult,
    }),
    payload: t.field({
      type: "JSON",
      nullable: true,
      description: "What it fired with; the deferred step resumes with it",
      resolve: (x) => x.payload,
    }),
    error: t.field({
      type: "JSON",
      nullable: true,
      description: "The last failed check, with consecutiveFailures",
      resolve: (x) => x.error,
    }),
    leaseOwner: t.exposeString("leaseOwner", { nullable: true, description: "The triggerer checking it now" }),
    leaseExpiresAt: t.field({ type: "DateTime", nullable: true, resolve: (x) => x.leaseExpiresAt }),
    createdAt: t.field({ type: "DateTime", resolve: (x) => x.createdAt }),
    endedAt: t.field({ type: "DateTime", nullable: true, resolve: (x) => x.endedAt }),
  }),
});

const TriggerConnection = builder.objectRef<TriggerPage>("TriggerConnection").implement({
  fields: (t) => ({
    nodes: t.field({ type: [TriggerRef], resolve: (p) => [...p.nodes] }),
    endCursor: t.exposeString("endCursor", { nullable: true, description: "Pass as `after` for the next page" }),
    hasNextPage: t.exposeBoolean("hasNextPage"),
  }),
});

const TriggerCountsRef = builder.objectRef<TriggerCounts>("TriggerCounts").implement({
  fields: (t) => ({
    waiting: t.exposeInt("waiting"),
    fired: t.exposeInt("fired"),
    failed: t.exposeInt("failed"),
    timedOut: t.exposeInt("timed_out"),
    canceled: t.exposeInt("canceled"),
  }),
});

const statusSchema = z.enum(TRIGGER_STATUSES, {
  error: (issue) => `${JSON.stringify(issue.input)} is not a trigger status; use one of ${TRIGGER_STATUSES.join(", ")}`,
});
const nonEmpty = z.string().min(1, "must not be empty; leave it out to see all");

const listArgs = z.strictObject({
  status: statusSchema.optional(),
  assetKey: nonEmpty.optional(),
  kind: nonEmpty.optional(),
  first: z.number().int().min(1).max(MAX_TRIGGER_PAGE, `at most ${MAX_TRIGGER_PAGE} per page`).default(DEFAULT_PAGE),
  after: nonEmpty.optional(),
});

const countArgs = listArgs.pick({ assetKey: true, kind: true });
const idArgs = z.object({
  id: z
    .string()
    .regex(/^[1-9]\d{0,17}$/, "must be a trigger id (a positive whole number)")
    .transform(Number),
});

/** Step.waitingFor: the current triggers of all steps a response shows, in one query. */
export const currentTriggerOf = perContext((ctx: Pick<ApiServices, "triggers">) =>
  batched((stepIds: number[]) => ctx.triggers.currentTriggersOfSteps(stepIds)),
);

builder.queryFields((t) => ({
  triggers: t.field({
    type: TriggerConnection,
    description: "Triggers, waiting ones first, then ended ones; newest first within each",
    args: {
      status: t.arg.string({ description: `One of ${TRIGGER_STATUSES.join(", ")}` }),
      assetKey: t.arg.string({ description: "The observed source asset or the deferred step's asset" }),
      kind: t.arg.string(),
      first: t.arg.int({ defaultValue: DEFAULT_PAGE, description: `1 to ${MAX_TRIGGER_PAGE}` }),
      after: t.arg.string({ description: "endCursor of the previous page" }),
    },
    resolve: async (_root, args, ctx) => {
      const { first, ...filter } = parseInput(listArgs, args, "triggers", "");
      try {
        return await ctx.triggers.listTriggers({ ...filter, limit: first });
      } catch (err) {
        throw asGraphQLError(err);
      }
    },
  }),
  trigger: t.field({
    type: TriggerRef,
    nullable: true,
    args: { id: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const { id } = parseInput(idArgs, args, "trigger", "");
      return (await ctx.triggers.triggersById([id])).get(id) ?? null;
    },
  }),
  triggerCounts: t.field({
    type: TriggerCountsRef,
    description: "Triggers by status",
    args: { assetKey: t.arg.string(), kind: t.arg.string() },
    resolve: (_root, args, ctx) => ctx.triggers.countTriggers(parseInput(countArgs, args, "triggerCounts", "")),
  }),
}));

function idOrNull(id: number | null): string | null {
  return id === null ? null : String(id);
}

// automationEvaluations: "why did / didn't this asset (partition) run?"
import { InputError } from "../../errors/index.js";
import {
  DEFAULT_EVALUATIONS_LIMIT,
  MAX_EVALUATIONS_LIMIT,
  type AutomationEvaluations,
  type AutomationEvaluationView,
  type EvaluationReasonView,
} from "../commands/automation-evaluations.js";
import { builder } from "./builder.js";

const DecisionEnum = builder.enumType("AutomationDecision", {
  description:
    "requested: runs were created; declined: something wanted a run but it could not or should not start; skipped: nothing was evaluated (paused, nothing to do, a bad cron)",
  values: ["requested", "declined", "skipped"] as const,
});

const ReasonRef = builder.objectRef<EvaluationReasonView>("EvaluationReason").implement({
  description: "One reason behind an automation decision",
  fields: (t) => ({
    operand: t.exposeString("operand", {
      description:
        "cron_tick, upstream_updated, is_missing, code_version_changed, failed, upstreams_not_ready, in_progress, paused, " +
        "request_limit, condition_false, no_candidates, cron_problem, plan_failed or runs",
    }),
    detail: t.exposeString("detail", { description: "The reason in words" }),
    partitions: t.field({
      type: t.listRef(t.listRef("String")),
      nullable: true,
      description: "The partitions of the decision it applies to, as inclusive [from, to] key ranges (at most a few); null: all of them",
      resolve: (r) => r.partitions?.map((x) => [...x]) ?? null,
    }),
    upstream: t.exposeString("upstream", { nullable: true, description: "The upstream asset it is about" }),
    eventId: t.string({
      nullable: true,
      description: "The upstream event behind it",
      resolve: (r) => (r.eventId === null ? null : String(r.eventId)),
    }),
    tick: t.field({
      type: "DateTime",
      nullable: true,
      description: "The cron tick behind a cron_tick reason",
      resolve: (r) => {
        const d = r.tick === null ? null : new Date(r.tick);
        return d && !Number.isNaN(d.getTime()) ? d : null;
      },
    }),
    runIds: t.stringList({
      nullable: true,
      description: "The runs a request became, when more than one",
      resolve: (r) => (r.runIds ? [...r.runIds] : null),
    }),
  }),
});

const EvaluationRef = builder.objectRef<AutomationEvaluationView>("AutomationEvaluation").implement({
  description: "An automation decision about an asset, stored when it differed from the previous one",
  fields: (t) => ({
    id: t.string({ resolve: (e) => String(e.id) }),
    tick: t.float({
      description: "The automation tick that decided it (a dense sequence; Float because it outgrows a 32-bit Int)",
      resolve: (e) => e.tick,
    }),
    evaluatedAt: t.field({ type: "DateTime", resolve: (e) => e.evaluatedAt }),
    decision: t.field({ type: DecisionEnum, resolve: (e) => e.decision }),
    partitions: t.field({
      type: t.listRef(t.listRef("String")),
      description:
        'Partitions decided on, as inclusive [from, to] key ranges; [] when about no particular partition; [["", ""]] for an unpartitioned asset',
      resolve: (e) => e.partitions.map((x) => [...x]),
    }),
    count: t.int({
      nullable: true,
      description: "Partitions the ranges hold in the current definition; null when some of their keys left it",
      resolve: (e) => e.count,
    }),
    condition: t.exposeString("condition", { description: "The condition at the time, as the SDK call that built it" }),
    runId: t.exposeString("runId", { nullable: true, description: "The run a request became (the first, when it became several)" }),
    reasons: t.field({
      type: [ReasonRef],
      description: "Why; with a partition asked for, the reasons that concern it",
      resolve: (e) => [...e.reasons],
    }),
  }),
});

const EvaluationsRef = builder.objectRef<AutomationEvaluations>("AutomationEvaluations").implement({
  description: "Why an asset (or one partition of it) did or did not run: its automation condition and the latest decisions",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partition: t.exposeString("partition", { nullable: true }),
    condition: t.exposeString("condition", {
      nullable: true,
      description: "The current condition as the SDK call that builds it; null when it has none",
    }),
    paused: t.exposeBoolean("paused", { description: "Automation is paused for the asset now" }),
    summary: t.exposeString("summary", { description: "The latest decision in one line" }),
    records: t.field({ type: [EvaluationRef], description: "Newest first", resolve: (e) => [...e.records] }),
  }),
});

builder.queryFields((t) => ({
  automationEvaluations: t.field({
    type: EvaluationsRef,
    description:
      "The latest automation decisions about an asset, newest first; with `partition`, those that concern that partition " +
      "(records about no particular partition — paused, nothing to do — concern every partition)",
    args: {
      assetKey: t.arg.string({ required: true }),
      partition: t.arg.string(),
      first: t.arg.int({ description: `How many records, 1–${MAX_EVALUATIONS_LIMIT} (default ${DEFAULT_EVALUATIONS_LIMIT})` }),
    },
    // TributaryErrors reach the client with their code (see maskError in app.ts).
    resolve: (_root, args, ctx) => {
      const first = args.first ?? DEFAULT_EVALUATIONS_LIMIT;
      if (first < 1 || first > MAX_EVALUATIONS_LIMIT) {
        throw new InputError(`automationEvaluations(first: ${first}): first must be between 1 and ${MAX_EVALUATIONS_LIMIT}`, {
          code: "INPUT_INVALID",
          location: { assetKey: args.assetKey, field: "first" },
        });
      }
      return ctx.automation.evaluations({ assetKey: args.assetKey, partition: args.partition ?? undefined, limit: first });
    },
  }),
}));

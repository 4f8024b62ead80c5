import type { AlertRecord } from "../../storage/index.js";
import { builder } from "./builder.js";
import { codeError } from "./errors.js";

const ALERT_STATUSES = ["pending", "sent", "failed"] as const;
const MAX_ALERTS = 1_000;

const AlertStatusEnum = builder.enumType("AlertStatus", {
  description:
    "pending: not delivered yet (or being retried); sent: every routed sink accepted it; failed: given up after the last attempt",
  values: ALERT_STATUSES,
});

const AlertRef = builder.objectRef<AlertRecord>("Alert").implement({
  description:
    "A notification Tributary stored and sent (at most once per cause): a step that failed for good, a missed deadline, a definitions file that stopped loading",
  fields: (t) => ({
    id: t.string({ resolve: (a) => String(a.id) }),
    kind: t.exposeString("kind", { description: "step_failed, check_failed, deadline_missed, load_error or observation_timed_out" }),
    causeKey: t.exposeString("causeKey", { description: "What it is about; unique: one alert per cause" }),
    assetKey: t.exposeString("assetKey", { nullable: true }),
    partitionKey: t.exposeString("partitionKey", { nullable: true }),
    runId: t.exposeString("runId", { nullable: true }),
    owner: t.exposeString("owner", { nullable: true, description: "The owner it was routed by" }),
    payload: t.field({ type: "JSON", resolve: (a) => a.payload }),
    status: t.field({ type: AlertStatusEnum, resolve: (a) => a.status }),
    attempts: t.exposeInt("attempts"),
    sentTo: t.stringList({ description: "Sinks that accepted it", resolve: (a) => [...a.sentTo] }),
    nextAttemptAt: t.field({ type: "DateTime", nullable: true, resolve: (a) => (a.status === "pending" ? a.nextAttemptAt : null) }),
    lastError: t.field({ type: "JSON", nullable: true, resolve: (a) => a.lastError }),
    sentAt: t.field({ type: "DateTime", nullable: true, resolve: (a) => a.sentAt }),
    createdAt: t.field({ type: "DateTime", resolve: (a) => a.createdAt }),
  }),
});

builder.queryFields((t) => ({
  alerts: t.field({
    type: [AlertRef],
    description: "Stored alerts, newest first",
    args: {
      assetKey: t.arg.string(),
      status: t.arg({ type: AlertStatusEnum }),
      first: t.arg.int({ defaultValue: 50 }),
    },
    resolve: async (_root, args, ctx) => {
      const first = args.first ?? 50;
      if (first < 0 || first > MAX_ALERTS)
        throw codeError("INPUT_INVALID", `alerts(first: ${first}): first must be between 0 and ${MAX_ALERTS}`);
      return ctx.alerts.list({
        first,
        ...(args.assetKey ? { assetKey: args.assetKey } : {}),
        ...(args.status ? { status: args.status } : {}),
      });
    },
  }),
}));

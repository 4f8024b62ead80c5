import { z } from "zod";
import type { ReportedAssetEvent } from "../commands/report-event.js";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";

const ReportedAssetEventRef = builder.objectRef<ReportedAssetEvent>("ReportedAssetEvent").implement({
  description: "An event a producer outside Tributary reported; the partition now counts as materialised",
  fields: (t) => ({
    eventId: t.string({ resolve: (e) => String(e.eventId) }),
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.string({ nullable: true, resolve: (e) => (e.partitionKey === "" ? null : e.partitionKey) }),
    kind: t.exposeString("kind"),
    createdAt: t.field({ type: "DateTime", resolve: (e) => e.createdAt }),
  }),
});

const ReportAssetEventInput = builder.inputType("ReportAssetEventInput", {
  fields: (t) => ({
    assetKey: t.string({ required: true }),
    partition: t.string({ description: "Required for a partitioned asset" }),
    metadata: t.field({ type: "JSON", description: "A JSON object, at most 64 KB" }),
    dataVersion: t.string(),
    kind: t.string({ description: '"external" (default) or "observation"' }),
  }),
});

const reportInput = z.strictObject({
  assetKey: z.string().min(1, "must not be empty"),
  partition: z.string().min(1, "must not be empty").optional(),
  metadata: z.unknown().optional(),
  dataVersion: z.string().min(1, "must not be empty").max(256, "at most 256 characters").optional(),
  kind: z.enum(["external", "observation"]).optional(),
});

builder.mutationFields((t) => ({
  reportAssetEvent: t.field({
    type: ReportedAssetEventRef,
    description: "Records that a producer outside Tributary wrote (or observed) a partition of an asset",
    args: { input: t.arg({ type: ReportAssetEventInput, required: true }) },
    resolve: async (_root, args, ctx) => {
      const input = parseInput(reportInput, args.input, "reportAssetEvent");
      // TributaryErrors reach the client with their code (see maskError in app.ts).
      return ctx.assets.reportEvent(input, ctx.guard);
    },
  }),
}));

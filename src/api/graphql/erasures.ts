// Erasure requests: "erase the data of these partitions of an asset and everything derived from it, and prove it".
// Recording one answers its plan; the reconcilers carry it out; its report is the proof.
import { z } from "zod";
import { MAX_ERASURE_SOURCE_PARTITIONS } from "../lineage/erasure-impact.js";
import { MAX_ERASURE_REASON_LENGTH, type ErasurePlan, type ErasurePlanAsset } from "../commands/request-erasure.js";
import {
  ERASURE_STATES,
  type ErasureDeletionKind,
  type ErasureDeletionRecord,
  type ErasureHookCallRecord,
  type ErasureItemRecord,
  type ErasureReport,
  type ErasureRequestRecord,
} from "../../storage/index.js";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";

const idOf = (n: number | null): string | null => (n === null ? null : String(n));

const erasureInput = z.strictObject({
  assetKey: z.string().min(1, "name the asset that held the data"),
  partitionKeys: z
    .array(z.string())
    .max(MAX_ERASURE_SOURCE_PARTITIONS, `at most ${MAX_ERASURE_SOURCE_PARTITIONS} partitions at once`)
    .optional(),
  reason: z.string().max(MAX_ERASURE_REASON_LENGTH, `at most ${MAX_ERASURE_REASON_LENGTH} characters`).optional(),
  dryRun: z.boolean().optional(),
});

const RequestErasureInput = builder.inputType("RequestErasureInput", {
  fields: (t) => ({
    assetKey: t.string({ required: true, description: "The asset that held the data (a source asset, or one Tributary materialises)" }),
    partitionKeys: t.stringList({
      description: `Its partitions that held the data, at most ${MAX_ERASURE_SOURCE_PARTITIONS} (none, or [""], for an unpartitioned asset)`,
    }),
    reason: t.string({ description: "Why: kept with the request, passed to the erase hooks and recorded in the audit trail" }),
    dryRun: t.boolean({ description: "Say what would be erased, and record nothing" }),
  }),
});

const ErasureStateEnum = builder.enumType("ErasureState", {
  description: "planned → erasing → rematerialising → done; failed until retried",
  values: ERASURE_STATES,
});

const ERASURE_DELETION_KINDS = ["output", "object", "log"] as const satisfies readonly ErasureDeletionKind[];
const ErasureDeletionKindEnum = builder.enumType("ErasureDeletionKind", { values: ERASURE_DELETION_KINDS });

const HOOK_CALL_STATES = ["running", "success", "failed"] as const satisfies readonly ErasureHookCallRecord["state"][];
const ErasureHookCallStateEnum = builder.enumType("ErasureHookCallState", { values: HOOK_CALL_STATES });

const ErasureRequestRef = builder.objectRef<ErasureRequestRecord>("ErasureRequest").implement({
  description: "A request to erase the data of partitions of an asset and of everything derived from them",
  fields: (t) => ({
    id: t.exposeID("id"),
    state: t.field({ type: ErasureStateEnum, resolve: (r) => r.state }),
    assetKey: t.exposeString("assetKey", { description: "The source asset whose data is erased" }),
    partitionKeys: t.stringList({ description: 'Its partitions ([""] for an unpartitioned asset)', resolve: (r) => [...r.partitionKeys] }),
    reason: t.exposeString("reason", { nullable: true }),
    requestedBy: t.exposeString("requestedBy", { nullable: true }),
    backfillId: t.exposeString("backfillId", {
      nullable: true,
      description: "The backfill re-materialising the erased partitions, once launched",
    }),
    message: t.exposeString("message", { nullable: true, description: "Why it failed, or what it waits for" }),
    attempts: t.exposeInt("attempts"),
    createdAt: t.field({ type: "DateTime", resolve: (r) => r.createdAt }),
    updatedAt: t.field({ type: "DateTime", resolve: (r) => r.updatedAt }),
    finishedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.finishedAt }),
    itemCount: t.exposeInt("itemCount", { description: "Partitions it erases: the source's (when materialised) and every derived one" }),
    erasedCount: t.exposeInt("erasedCount", { description: "Of them, erased so far" }),
  }),
});

const ErasureReplacementRef = builder
  .objectRef<{ eventId: number; runId: string | null; at: Date | null }>("ErasureReplacement")
  .implement({
    description: "The materialisation that re-created an erased partition from the cleaned source",
    fields: (t) => ({
      eventId: t.string({ resolve: (r) => String(r.eventId) }),
      runId: t.exposeString("runId", { nullable: true }),
      materializedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.at }),
    }),
  });

const ErasureItemRef = builder.objectRef<ErasureItemRecord>("ErasureItem").implement({
  description: "A partition a request erases, with the materialisation that held the data and the one that replaced it",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey"),
    eventId: t.string({
      nullable: true,
      description: "The materialisation that held the data (null when the partition had none)",
      resolve: (i) => idOf(i.eventId),
    }),
    runId: t.exposeString("runId", { nullable: true }),
    stepId: t.string({ nullable: true, resolve: (i) => idOf(i.stepId) }),
    erasedAt: t.field({ type: "DateTime", nullable: true, resolve: (i) => i.erasedAt }),
    replacement: t.field({
      type: ErasureReplacementRef,
      nullable: true,
      description: "Null until a new materialisation replaces it (or when it is not re-materialised: see skippedReason)",
      resolve: (i) => (i.replacedByEventId === null ? null : { eventId: i.replacedByEventId, runId: i.replacedByRunId, at: i.replacedAt }),
    }),
    skippedReason: t.exposeString("skippedReason", { nullable: true, description: "Why it is not re-materialised" }),
  }),
});

const ErasureDeletionRef = builder.objectRef<ErasureDeletionRecord>("ErasureDeletion").implement({
  description: "Something a request deleted: a stored output, its object in the output store, or a try's log",
  fields: (t) => ({
    kind: t.field({ type: ErasureDeletionKindEnum, resolve: (d) => d.kind }),
    assetKey: t.exposeString("assetKey"),
    partitionKey: t.exposeString("partitionKey"),
    runId: t.exposeString("runId", { nullable: true }),
    stepId: t.string({ nullable: true, resolve: (d) => idOf(d.stepId) }),
    tryNumber: t.exposeInt("tryNumber", { nullable: true }),
    ref: t.exposeString("ref", {
      nullable: true,
      description: "The object's storage reference, inline:<output id> for an inline output, <run>/<step>-<try> for a log",
    }),
    sizeBytes: t.float({
      nullable: true,
      description: "Null for a log the try never wrote (Float because it outgrows a 32-bit Int)",
      resolve: (d) => d.sizeBytes,
    }),
    deletedAt: t.field({ type: "DateTime", resolve: (d) => d.deletedAt }),
  }),
});

const ErasureHookCallRef = builder.objectRef<ErasureHookCallRecord>("ErasureHookCall").implement({
  description: "A call of an asset's erase hook for a request",
  fields: (t) => ({
    id: t.string({ resolve: (c) => String(c.id) }),
    assetKey: t.exposeString("assetKey"),
    partitionKeys: t.stringList({ resolve: (c) => [...c.partitionKeys] }),
    attempt: t.exposeInt("attempt"),
    state: t.field({ type: ErasureHookCallStateEnum, resolve: (c) => c.state }),
    startedAt: t.field({ type: "DateTime", resolve: (c) => c.startedAt }),
    endedAt: t.field({ type: "DateTime", nullable: true, resolve: (c) => c.endedAt }),
    error: t.exposeString("error", { nullable: true }),
    log: t.stringList({ description: "What the hook logged (ctx.log)", resolve: (c) => [...c.log] }),
  }),
});

const ErasureReportRef = builder.objectRef<ErasureReport>("ErasureReport").implement({
  description: "A request with everything it did: the proof that the data is gone and what replaced it",
  fields: (t) => ({
    request: t.field({ type: ErasureRequestRef, resolve: (r) => r.request }),
    items: t.field({ type: [ErasureItemRef], resolve: (r) => [...r.items] }),
    deletions: t.field({ type: [ErasureDeletionRef], resolve: (r) => [...r.deletions] }),
    hookCalls: t.field({ type: [ErasureHookCallRef], resolve: (r) => [...r.hookCalls] }),
  }),
});

const ErasurePlanAssetRef = builder.objectRef<ErasurePlanAsset>("ErasurePlanAsset").implement({
  description: "An asset a request erases partitions of",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    pii: t.field({
      type: "JSON",
      nullable: true,
      description: "metadata.pii: the columns holding personal data (or true)",
      resolve: (a) => a.pii,
    }),
    hasPii: t.boolean({ resolve: (a) => a.pii !== null }),
    defined: t.exposeBoolean("defined", { description: "false: no longer in the definitions (erased, but not re-materialised)" }),
    partitionCount: t.exposeInt("partitionCount"),
    eraseHook: t.exposeBoolean("eraseHook", { description: "It declares an erase hook, which the request calls" }),
  }),
});

const ErasurePlanRef = builder.objectRef<ErasurePlan>("ErasurePlan").implement({
  description: "What a request erases (with dryRun: would erase)",
  fields: (t) => ({
    request: t.field({
      type: ErasureRequestRef,
      nullable: true,
      description: "The recorded request (null for a dry run)",
      resolve: (p) => p.request,
    }),
    assetKey: t.exposeString("assetKey"),
    partitionKeys: t.stringList({ resolve: (p) => [...p.partitionKeys] }),
    assets: t.field({
      type: [ErasurePlanAssetRef],
      description: "The source first, then every derived asset in dependency order",
      resolve: (p) => [...p.assets],
    }),
    partitionCount: t.exposeInt("partitionCount", { description: "Partitions erased: the source's (when materialised) and derived ones" }),
    outputCount: t.exposeInt("outputCount", { description: "Of them, with a stored output (deleted with its object and logs)" }),
    dryRun: t.exposeBoolean("dryRun"),
  }),
});

builder.queryFields((t) => ({
  erasureRequests: t.field({
    type: [ErasureRequestRef],
    nullable: false,
    description: "Erasure requests, newest first (those whose source asset the caller may view)",
    args: {
      limit: t.arg.int({ description: "How many (1 to 500, default 50)" }),
      state: t.arg({ type: ErasureStateEnum }),
    },
    // TributaryErrors reach the client with their code (see maskError in app.ts).
    resolve: (_root, args, ctx) => ctx.lineage.erasures.list({ limit: args.limit ?? undefined, state: args.state ?? undefined }, ctx.guard),
  }),
  erasureRequest: t.field({
    type: ErasureReportRef,
    nullable: true,
    description: "An erasure request's proof report: ERASURE_NOT_FOUND for an unknown id",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => ctx.lineage.erasures.report(String(args.id), ctx.guard),
  }),
}));

builder.mutationFields((t) => ({
  requestErasure: t.field({
    type: ErasurePlanRef,
    nullable: true,
    description:
      "Requests the erasure of the data of partitions of an asset and of everything derived from them: the reconcilers delete " +
      "their stored outputs, objects and logs, call the assets' erase hooks and re-materialise them from the cleaned source. " +
      "Refused while a run writes one of them. Needs admin on every impacted asset",
    args: { input: t.arg({ type: RequestErasureInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const input = parseInput(erasureInput, args.input, "requestErasure");
      return ctx.lineage.erasures.request({ ...input, partitionKeys: input.partitionKeys ?? [] }, ctx.guard);
    },
  }),
  retryErasure: t.field({
    type: ErasureRequestRef,
    nullable: true,
    description: "A failed erasure request goes on where it failed. Needs admin on its source asset",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => ctx.lineage.erasures.retry(String(args.id), ctx.guard),
  }),
}));

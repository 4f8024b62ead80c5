// wipePartitions: remove chosen partitions' statuses, materialisations and outputs, so they are missing again.
import { z } from "zod";
import { MAX_WIPE_REASON_LENGTH, type PartitionWipeResult } from "../commands/wipe-partitions.js";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";

const wipeInput = z.strictObject({
  assetKey: z.string().min(1, "name the asset whose partitions to wipe"),
  partitions: z.array(z.string()).min(1, "list at least one partition, or give a range (from/to)").max(100_000).optional(),
  from: z.string().min(1).optional(),
  to: z.string().min(1).optional(),
  reason: z.string().max(MAX_WIPE_REASON_LENGTH, `at most ${MAX_WIPE_REASON_LENGTH} characters`).optional(),
  dryRun: z.boolean().optional(),
});

const WipePartitionsInput = builder.inputType("WipePartitionsInput", {
  fields: (t) => ({
    assetKey: t.string({ required: true }),
    partitions: t.stringList({ description: "These partitions (or a range with from/to)" }),
    from: t.string({ description: "First partition key of a range (inclusive); without it, the first partition" }),
    to: t.string({ description: "Last partition key of a range (inclusive); without it, the last existing partition" }),
    reason: t.string({ description: "Why: kept on each partition's wipe event and in the audit trail" }),
    dryRun: t.boolean({ description: "Say what would be removed, and remove nothing" }),
  }),
});

const PendingObjectDeletion = builder.objectRef<{ storageRef: string; error: string }>("PendingObjectDeletion").implement({
  description: "An object of a removed output that the object store still holds: a reconciler deletes it when it can",
  fields: (t) => ({
    storageRef: t.exposeString("storageRef"),
    error: t.exposeString("error", { description: "Why it could not be deleted yet" }),
  }),
});

const PartitionWipeRef = builder.objectRef<PartitionWipeResult>("PartitionWipe").implement({
  description: "What a wipe removed (with dryRun: would remove) of an asset's partitions",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    partitionCount: t.exposeInt("partitionCount"),
    partitionKeys: t.exposeStringList("partitionKeys", { description: "The wiped partitions, the first 1 000 in order" }),
    statusesRemoved: t.exposeInt("statusesRemoved", { description: "Partitions that had a status and are missing now" }),
    materializationsRemoved: t.exposeInt("materializationsRemoved"),
    otherEventsRemoved: t.exposeInt("otherEventsRemoved", { description: "Planned materialisations, failures and check events" }),
    checkResultsRemoved: t.exposeInt("checkResultsRemoved"),
    outputsRemoved: t.exposeInt("outputsRemoved"),
    objectCount: t.exposeInt("objectCount", { description: "Objects of those outputs in the object store" }),
    objectsDeleted: t.exposeInt("objectsDeleted", { description: "Of them, deleted before this answer" }),
    objectsPending: t.field({ type: [PendingObjectDeletion], resolve: (w) => [...w.objectsPending] }),
    dryRun: t.exposeBoolean("dryRun"),
  }),
});

builder.mutationFields((t) => ({
  wipePartitions: t.field({
    type: PartitionWipeRef,
    description:
      "Removes chosen partitions' statuses, materialisation events (with their lineage), check results and stored outputs, " +
      "so that they are missing again; each keeps a wipe event with the reason. Refused while a run writes one of them. Needs admin",
    args: { input: t.arg({ type: WipePartitionsInput, required: true }) },
    // TributaryErrors reach the client with their code (see maskError in app.ts).
    resolve: (_root, args, ctx) => ctx.assets.wipePartitions(parseInput(wipeInput, args.input, "wipePartitions"), ctx.guard),
  }),
}));

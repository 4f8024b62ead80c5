// clearPartitions: clear and rerun chosen partitions of an asset (optionally
// with everything downstream of them), through the normal run machinery.
import { z } from "zod";
import type { RunDetail, RunSummary } from "../../storage/index.js";
import { builder } from "./builder.js";
import { asGraphQLError, codeError, parseInput } from "./errors.js";
import { dimensionsInput, PartitionDimensionInput } from "./dimension-input.js";

const clearInput = z.strictObject({
  assetKey: z.string().min(1, "name the asset whose partitions to clear"),
  partition: z.string().min(1).optional(),
  from: z.string().min(1).optional(),
  to: z.string().min(1).optional(),
  dimensions: dimensionsInput,
  downstream: z.boolean().optional(),
  onlyFailed: z.boolean().optional(),
});

const ClearPartitionsInput = builder.inputType("ClearPartitionsInput", {
  fields: (t) => ({
    assetKey: t.string({ required: true }),
    partition: t.string(),
    from: t.string({ description: "First partition key of a range (inclusive)" }),
    to: t.string({ description: "Last partition key of a range (inclusive)" }),
    dimensions: t.field({
      type: [PartitionDimensionInput],
      description: "For a multi-partitioned asset: keys or a range per dimension (their cross product), instead of partition or from/to",
    }),
    downstream: t.boolean({ description: "Also clear every downstream partition that reads the cleared ones" }),
    onlyFailed: t.boolean({ description: "Only the selected partitions that failed (without a selection: every failed one)" }),
  }),
});

/** The `Run` object type is defined in runs.ts; referenced here by name. */
const RUN_TYPE = "Run" as unknown as ReturnType<typeof builder.objectRef<RunSummary & Partial<Pick<RunDetail, "steps">>>>;

builder.mutationFields((t) => ({
  clearPartitions: t.field({
    type: RUN_TYPE,
    description:
      "Clears chosen partitions of an asset (optionally all their downstream partitions) and reruns them in one run (origin rerun); upstream results stay",
    args: { input: t.arg({ type: ClearPartitionsInput, required: true }) },
    resolve: async (_root, args, ctx) => {
      const input = parseInput(clearInput, args.input, "clearPartitions");
      try {
        const cleared = await ctx.runs.clearPartitions(input, ctx.guard);
        const run = await ctx.runs.store.getRun(cleared.runId);
        if (!run) throw codeError("INTERNAL", `run ${cleared.runId} vanished after being created`);
        return run;
      } catch (err) {
        throw asGraphQLError(err);
      }
    },
  }),
}));

// The per-dimension partition selection that launchRun, launchBackfill and
// clearPartitions take for multi-partitioned assets.
import { z } from "zod";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";

export const dimensionsInput = z
  .array(
    z
      .strictObject({
        name: z.string().min(1, "name the dimension"),
        keys: z
          .array(z.string().min(1, "keys must not be empty"))
          .min(1, "list at least one key, or leave the dimension out to select all its keys")
          .optional(),
        from: z.string().min(1).optional(),
        to: z.string().min(1).optional(),
      })
      .refine((d) => (d.keys !== undefined) !== (d.from !== undefined || d.to !== undefined), {
        message: "give each dimension either keys or a range (from/to)",
      }),
  )
  .min(1, "select along at least one dimension, or leave dimensions out")
  .optional();

export const PartitionDimensionInput = builder.inputType("PartitionDimensionInput", {
  description:
    "Partitions along one dimension of a multi-partitioned asset: a list of keys, or an inclusive range (from/to; an open end is " +
    "the dimension's first / latest existing key). Dimensions left out select all their keys; the selection is the cross product",
  fields: (t) => ({
    name: t.string({ required: true, description: "The dimension, e.g. region" }),
    keys: t.stringList({ description: "These keys of the dimension" }),
    from: t.string({ description: "First key of a range (inclusive)" }),
    to: t.string({ description: "Last key of a range (inclusive)" }),
  }),
});

/** A `dimensions` argument outside an input object, validated as inside one (INPUT_INVALID naming the field). */
export function parseDimensionsArg(value: unknown, field: string): z.infer<typeof dimensionsInput> {
  if (value === null || value === undefined) return undefined;
  return parseInput(z.strictObject({ dimensions: dimensionsInput }), { dimensions: value }, field, "").dimensions;
}

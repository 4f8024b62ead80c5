// The `pools` query and the `setPoolSlots` mutation.
import { z } from "zod";
import type { PoolRecord } from "../../storage/index.js";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";

/** Largest slot count setPoolSlots accepts: far above any executor's capacity, well inside an int. */
export const MAX_POOL_SLOTS = 1_000_000;

const PoolRef = builder.objectRef<PoolRecord>("Pool").implement({
  description: "A named number of slots that steps of the assets using it compete for",
  fields: (t) => ({
    name: t.exposeString("name"),
    slots: t.exposeInt("slots", { description: "Slots in all; 0 holds every step of the pool back" }),
    occupied: t.exposeInt("occupied", { description: "Slots its queued and running steps hold (and deferred ones, with includeDeferred)" }),
    queued: t.exposeInt("queued", { description: "Scheduled steps waiting for a slot (or for anything else that holds them back)" }),
    includeDeferred: t.exposeBoolean("includeDeferred", { description: "Deferred steps keep their slots while they wait" }),
    description: t.exposeString("description"),
    updatedAt: t.field({ type: "DateTime", resolve: (p) => p.updatedAt }),
  }),
});

const setPoolSlotsInput = z.strictObject({
  name: z
    .string()
    .min(1, "must not be empty")
    .max(200, "at most 200 characters")
    .regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '_', '.' and '-' only, as in an asset's `pool`"),
  slots: z.number().int().min(0, "must be 0 (hold the pool's steps back) or more").max(MAX_POOL_SLOTS, `at most ${MAX_POOL_SLOTS}`),
  includeDeferred: z.boolean().optional(),
});

builder.queryFields((t) => ({
  pools: t.field({
    type: [PoolRef],
    description: "Every pool by name, with its occupied slots and queued steps",
    resolve: (_root, _args, ctx) => ctx.pools.list(),
  }),
}));

builder.mutationFields((t) => ({
  setPoolSlots: t.field({
    type: PoolRef,
    description: "Sets a pool's slots (creating the pool when no step has used it yet); more slots let waiting steps start at once",
    args: {
      name: t.arg.string({ required: true }),
      slots: t.arg.int({ required: true }),
      includeDeferred: t.arg.boolean({ description: "Whether deferred steps keep their slots; left as it is when absent" }),
    },
    resolve: (_root, args, ctx) => ctx.pools.setSlots(parseInput(setPoolSlotsInput, args, "setPoolSlots", ""), ctx.guard),
  }),
}));

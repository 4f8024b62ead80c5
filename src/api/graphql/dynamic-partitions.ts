import type { AddedDynamicPartitions } from "../commands/add-dynamic-partitions.js";
import { builder } from "./builder.js";

const AddedDynamicPartitionsRef = builder.objectRef<AddedDynamicPartitions>("AddedDynamicPartitions").implement({
  fields: (t) => ({
    name: t.exposeString("name"),
    added: t.stringList({ description: "Keys that were new, in the order given", resolve: (r) => [...r.added] }),
    total: t.exposeInt("total", { description: "Keys the set has now" }),
  }),
});

builder.mutationFields((t) => ({
  addDynamicPartitions: t.field({
    type: AddedDynamicPartitionsRef,
    description: "Adds keys to a dynamic partitions definition (idempotent per key); they exist for planning at once",
    args: {
      name: t.arg.string({ required: true }),
      keys: t.arg.stringList({ required: true }),
    },
    // TributaryErrors reach the client with their code (see maskError in app.ts).
    resolve: (_root, args, ctx) => ctx.assets.addDynamicPartitions({ name: args.name, keys: args.keys }, ctx.guard),
  }),
}));

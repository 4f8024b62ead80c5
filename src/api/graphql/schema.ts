import type { SnapshotAsset } from "../../graph/index.js";
import { describePartitions } from "../../partitions/index.js";
import { listPartitions, type PartitionRow } from "../partition-listing.js";
import { builder, type DefinitionFileView } from "./builder.js";
import { asGraphQLError, codeError } from "./errors.js";

const MAX_PAGE = 10_000;

const DepRef = builder.objectRef<{ name: string; assetKey: string; mapping: unknown }>("Dependency").implement({
  description: "An edge from an upstream asset, with the partition mapping it is read through",
  fields: (t) => ({
    name: t.exposeString("name", { description: "The argument name the asset function receives it under" }),
    assetKey: t.exposeString("assetKey"),
    mapping: t.field({ type: "JSON", nullable: true, resolve: (d) => d.mapping }),
  }),
});

const PartitionRef = builder.objectRef<PartitionRow>("Partition").implement({
  fields: (t) => ({
    key: t.exposeString("key"),
    start: t.field({ type: "DateTime", nullable: true, resolve: (p) => p.start ?? null }),
    end: t.field({ type: "DateTime", nullable: true, resolve: (p) => p.end ?? null }),
  }),
});

const PartitionPage = builder
  .objectRef<{ totalCount: number; nodes: PartitionRow[]; endCursor: string | null; hasNextPage: boolean }>("PartitionPage")
  .implement({
    fields: (t) => ({
      totalCount: t.exposeInt("totalCount"),
      nodes: t.field({ type: [PartitionRef], resolve: (p) => p.nodes }),
      endCursor: t.exposeString("endCursor", { nullable: true }),
      hasNextPage: t.exposeBoolean("hasNextPage"),
    }),
  });

const AssetRef = builder.objectRef<SnapshotAsset>("Asset");
AssetRef.implement({
  description: "A software-defined asset from the current definitions",
  fields: (t) => ({
    key: t.exposeString("key"),
    kind: t.exposeString("kind", { description: "asset, or source for data produced outside Tributary" }),
    group: t.exposeString("group"),
    owner: t.exposeString("owner", { nullable: true }),
    description: t.exposeString("description", { nullable: true }),
    file: t.exposeString("file", { description: "Definitions file, relative to the definitions directory" }),
    tags: t.field({ type: "JSON", resolve: (a) => a.tags }),
    metadata: t.field({ type: "JSON", resolve: (a) => a.metadata }),
    partitionsDefinition: t.field({
      type: "JSON",
      nullable: true,
      description: "The partitions definition, null when unpartitioned",
      resolve: (a) => a.partitions,
    }),
    partitionsDescription: t.string({
      nullable: true,
      resolve: (a) => (a.partitions ? describePartitions(a.partitions) : null),
    }),
    automation: t.field({ type: "JSON", nullable: true, resolve: (a) => a.automation }),
    pool: t.exposeString("pool", { nullable: true }),
    priority: t.exposeInt("priority"),
    retries: t.field({ type: "JSON", resolve: (a) => a.retries }),
    timeoutMs: t.exposeInt("timeoutMs", { nullable: true }),
    triggerRule: t.exposeString("triggerRule"),
    executor: t.exposeString("executor"),
    codeVersion: t.exposeString("codeVersion", { nullable: true }),
    deps: t.field({ type: [DepRef], resolve: (a) => [...a.deps] }),
    upstream: t.field({
      type: [AssetRef],
      resolve: async (a, _args, ctx) => (await ctx.catalog.current()).graph.upstreamOf(a.key),
    }),
    downstream: t.field({
      type: [AssetRef],
      resolve: async (a, _args, ctx) => (await ctx.catalog.current()).graph.downstreamOf(a.key),
    }),
    partitions: t.field({
      type: PartitionPage,
      description: "Partition keys that exist now, oldest first, with their windows",
      args: {
        from: t.arg.string({ description: "First key (inclusive)" }),
        to: t.arg.string({ description: "Last key (inclusive)" }),
        first: t.arg.int({ defaultValue: 100 }),
        after: t.arg.string({ description: "endCursor of the previous page" }),
      },
      resolve: async (a, args, ctx) => {
        const first = args.first ?? 100;
        if (first < 0 || first > MAX_PAGE) {
          throw codeError("INPUT_INVALID", `partitions(first: ${first}): first must be between 0 and ${MAX_PAGE}`);
        }
        try {
          return await listPartitions(a, {
            from: args.from ?? undefined,
            to: args.to ?? undefined,
            first,
            after: args.after ?? undefined,
            now: ctx.now(),
            dynamicKeys: (name) => ctx.catalog.dynamicKeys(name),
          });
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
  }),
});

const GraphProblemRef = builder
  .objectRef<DefinitionFileView["problems"][number]>("DefinitionProblem")
  .implement({
    description: "A definition left out of the asset graph, and why",
    fields: (t) => ({
      code: t.exposeString("code"),
      message: t.exposeString("message"),
      assetKey: t.exposeString("assetKey", { nullable: true }),
      field: t.exposeString("field", { nullable: true }),
    }),
  });

const DefinitionFileRef = builder.objectRef<DefinitionFileView>("DefinitionFile").implement({
  fields: (t) => ({
    path: t.exposeString("path"),
    status: t.exposeString("status"),
    code: t.string({ nullable: true, resolve: (f) => f.error?.code ?? null }),
    message: t.string({ nullable: true, resolve: (f) => f.error?.message ?? null }),
    location: t.field({ type: "JSON", nullable: true, resolve: (f) => f.error?.location ?? null }),
    warnings: t.stringList({ resolve: (f) => f.warnings }),
    problems: t.field({ type: [GraphProblemRef], resolve: (f) => f.problems }),
    loadMs: t.int({ nullable: true, resolve: (f) => (f.loadMs === null ? null : Math.round(f.loadMs)) }),
    loadedAt: t.field({ type: "DateTime", nullable: true, resolve: (f) => f.loadedAt }),
  }),
});

const DefinitionsVersionRef = builder
  .objectRef<{ version: number; loadedAt: Date }>("DefinitionsVersion")
  .implement({
    fields: (t) => ({
      version: t.exposeInt("version"),
      loadedAt: t.field({ type: "DateTime", resolve: (v) => v.loadedAt }),
    }),
  });

builder.queryType({
  fields: (t) => ({
    assets: t.field({
      type: [AssetRef],
      args: {
        group: t.arg.string(),
        search: t.arg.string({ description: "Case-insensitive substring of the key" }),
      },
      resolve: async (_root, args, ctx) => {
        const { graph } = await ctx.catalog.current();
        const needle = args.search?.toLowerCase();
        return graph.assets.filter(
          (a) => (!args.group || a.group === args.group) && (!needle || a.key.toLowerCase().includes(needle)),
        );
      },
    }),
    asset: t.field({
      type: AssetRef,
      nullable: true,
      args: { key: t.arg.string({ required: true }) },
      resolve: async (_root, args, ctx) => (await ctx.catalog.current()).graph.get(args.key) ?? null,
    }),
    definitionErrors: t.field({
      type: [DefinitionFileRef],
      description: "Definitions files that failed to load or whose definitions were left out of the graph, with the reasons",
      resolve: async (_root, _args, ctx) => (await ctx.definitionFiles()).filter((f) => f.status !== "ok" || f.problems.length > 0),
    }),
    definitionFiles: t.field({
      type: [DefinitionFileRef],
      resolve: (_root, _args, ctx) => ctx.definitionFiles(),
    }),
    definitionsVersion: t.field({
      type: DefinitionsVersionRef,
      nullable: true,
      resolve: async (_root, _args, ctx) => {
        const view = await ctx.catalog.current();
        return view.version === 0 ? null : view;
      },
    }),
  }),
});

import "./runs.js";
import "./dynamic-partitions.js";
import "./clear.js";
import "./events.js";

export const schema = builder.toSchema();

import type { GraphQLResolveInfo } from "graphql";
import type { SnapshotAsset } from "../../graph/index.js";
import { describePartitions } from "../../partitions/index.js";
import { listPartitions, releasedInChunks, withStates, type PartitionStatusRow } from "../partition-listing.js";
import { requestCatalog, withCatalog } from "./batch.js";
import { builder } from "./builder.js";
import { MAX_PARTITION_PAGE as MAX_PAGE } from "./partition-cost.js";
import type { DefinitionFileView } from "../services.js";
import { asGraphQLError, codeError } from "./errors.js";
import { parseDimensionsArg, PartitionDimensionInput } from "./dimension-input.js";
import {
  AssetPartitionStatusRef,
  PartitionStatusEnum,
  partitionStateOf,
  readStatusAhead,
  resolvePartitionStatus,
  staleReasonsOf,
  StaleReasonRef,
  statusReadAhead,
} from "./partition-status.js";
import { readPausesAhead, withPauseState } from "./pause.js";
import {
  MaterializationConnectionRef,
  MaterializationRef,
  readLatestAhead,
  resolveLatestMaterialization,
  resolveMaterializations,
} from "./materializations.js";

const DepRef = builder.objectRef<{ name: string; assetKey: string; mapping: unknown }>("Dependency").implement({
  description: "An edge from an upstream asset, with the partition mapping it is read through",
  fields: (t) => ({
    name: t.exposeString("name", { description: "The argument name the asset function receives it under" }),
    assetKey: t.exposeString("assetKey"),
    mapping: t.field({ type: "JSON", nullable: true, resolve: (d) => d.mapping }),
  }),
});

const PartitionRef = builder.objectRef<PartitionStatusRow>("Partition").implement({
  fields: (t) => ({
    key: t.exposeString("key"),
    start: t.field({ type: "DateTime", nullable: true, resolve: (p) => p.start ?? null }),
    end: t.field({ type: "DateTime", nullable: true, resolve: (p) => p.end ?? null }),
    status: t.field({ type: PartitionStatusEnum, resolve: partitionStateOf }),
    staleReasons: t.field({
      type: [StaleReasonRef],
      description: "Why the partition is stale (also while a rerun is in flight); empty otherwise",
      resolve: staleReasonsOf,
    }),
    dataVersion: t.string({
      nullable: true,
      description: "Data version of its latest materialisation",
      resolve: async (p) => (await p.state())?.dataVersion ?? null,
    }),
    materializedAt: t.field({ type: "DateTime", nullable: true, resolve: async (p) => (await p.state())?.materializedAt ?? null }),
    staleReasonsTruncated: t.boolean({
      description: "More upstream partitions are newer than staleReasons lists",
      resolve: async (p) => (await p.state())?.moreStaleUpstreams ?? false,
    }),
  }),
});

const PartitionPage = builder
  .objectRef<{ totalCount: number; nodes: PartitionStatusRow[]; endCursor: string | null; hasNextPage: boolean }>("PartitionPage")
  .implement({
    fields: (t) => ({
      totalCount: t.exposeInt("totalCount"),
      nodes: t.field({
        type: [PartitionRef],
        // Loads the page's statuses first when they are asked for; then completes the rows chunk by chunk.
        resolve: (p, _args, _ctx, info) => releasedInChunks(p.nodes, asksBeyondWindows(info) ? p.nodes[0]?.state() : undefined),
      }),
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
    paused: t.boolean({
      description: "Automation and schedules start no runs for it (manual and backfill runs still do)",
      resolve: (a, _args, ctx) => withPauseState(a, ctx, (s) => s?.paused ?? false),
    }),
    pausedAt: t.field({
      type: "DateTime",
      nullable: true,
      resolve: (a, _args, ctx) => withPauseState(a, ctx, (s) => s?.pausedAt ?? null),
    }),
    partitionStatus: t.field({
      type: AssetPartitionStatusRef,
      description: "Existing partitions by status: counts, and ranges of consecutive partitions with one status",
      resolve: (a, _args, ctx, info) => statusReadAhead(a, ctx, info) ?? resolvePartitionStatus(a, ctx, info),
    }),
    // Materialisation history.
    materializations: t.field({
      type: MaterializationConnectionRef,
      description: "Materialisations, external reports and observations of the asset (or of one partition), newest first",
      args: {
        partition: t.arg.string({ description: "Only this partition" }),
        first: t.arg.int({ defaultValue: 20 }),
        after: t.arg.string({ description: "endCursor of the previous page" }),
      },
      resolve: (a, args, ctx) => resolveMaterializations(a, args, ctx),
    }),
    latestMaterialization: t.field({
      type: MaterializationRef,
      nullable: true,
      description: "The newest materialisation, report or observation of the asset (or of one partition); null when none",
      args: { partition: t.arg.string() },
      resolve: (a, args, ctx) => resolveLatestMaterialization(a, args.partition, ctx),
    }),
    deps: t.field({ type: [DepRef], resolve: (a) => [...a.deps] }),
    upstream: t.field({
      type: [AssetRef],
      resolve: (a, _args, ctx) => withCatalog(ctx, ({ graph }) => graph.upstreamOf(a.key)),
    }),
    downstream: t.field({
      type: [AssetRef],
      resolve: (a, _args, ctx) => withCatalog(ctx, ({ graph }) => graph.downstreamOf(a.key)),
    }),
    partitions: t.field({
      type: PartitionPage,
      description: "Partition keys that exist now, oldest first, with their windows",
      args: {
        from: t.arg.string({ description: "First key (inclusive)" }),
        to: t.arg.string({ description: "Last key (inclusive)" }),
        first: t.arg.int({ defaultValue: 100 }),
        after: t.arg.string({ description: "endCursor of the previous page" }),
        last: t.arg.int({ description: "The latest this many instead of the first page (oldest first; not with after)" }),
        dimensions: t.arg({
          type: [PartitionDimensionInput],
          description: "For a multi-partitioned asset: only these keys or ranges per dimension (dimensions left out: all keys)",
        }),
      },
      resolve: async (a, args, ctx) => {
        const first = args.first ?? 100;
        if (first < 0 || first > MAX_PAGE) {
          throw codeError("INPUT_INVALID", `partitions(first: ${first}): first must be between 0 and ${MAX_PAGE}`);
        }
        if (args.last !== null && args.last !== undefined && (args.last < 0 || args.last > MAX_PAGE)) {
          throw codeError("INPUT_INVALID", `partitions(last: ${args.last}): last must be between 0 and ${MAX_PAGE}`);
        }
        try {
          const page = await listPartitions(a, {
            from: args.from ?? undefined,
            to: args.to ?? undefined,
            first,
            after: args.after ?? undefined,
            last: args.last ?? undefined,
            dimensions: parseDimensionsArg(args.dimensions, "partitions"),
            now: ctx.now(),
            dynamicKeys: (name) => ctx.assets.catalog.dynamicKeys(name),
          });
          const version = { assetKey: a.key, codeVersion: a.codeVersion };
          return { ...page, nodes: withStates(page.nodes, (keys) => ctx.assets.partitionStatus.partitionStates(version, keys)) };
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
  }),
});

const GraphProblemRef = builder.objectRef<DefinitionFileView["problems"][number]>("DefinitionProblem").implement({
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
    // A file that loaded but has definitions left out of the graph is in error too, with its problems as the message.
    status: t.string({ resolve: (f) => (f.status === "ok" && f.problems.length > 0 ? "error" : f.status) }),
    code: t.string({ nullable: true, resolve: (f) => f.error?.code ?? f.problems[0]?.code ?? null }),
    message: t.string({
      nullable: true,
      resolve: (f) => f.error?.message ?? (f.problems.length > 0 ? f.problems.map((p) => p.message).join("\n") : null),
    }),
    location: t.field({ type: "JSON", nullable: true, resolve: (f) => f.error?.location ?? problemLocation(f) }),
    warnings: t.stringList({ resolve: (f) => f.warnings }),
    problems: t.field({ type: [GraphProblemRef], resolve: (f) => f.problems }),
    loadMs: t.int({ nullable: true, resolve: (f) => (f.loadMs === null ? null : Math.round(f.loadMs)) }),
    loadedAt: t.field({ type: "DateTime", nullable: true, resolve: (f) => f.loadedAt }),
  }),
});

/** Whether a selection of Partition asks for more than key, start and end (fragments count as asking). */
function asksBeyondWindows(info: GraphQLResolveInfo): boolean {
  return info.fieldNodes.some((n) =>
    (n.selectionSet?.selections ?? []).some((s) => s.kind !== "Field" || !["key", "start", "end", "__typename"].includes(s.name.value)),
  );
}

function problemLocation(f: DefinitionFileView): Record<string, unknown> | null {
  const first = f.problems[0];
  if (!first) return null;
  return {
    file: f.path,
    ...(first.assetKey !== null ? { assetKey: first.assetKey } : {}),
    ...(first.field !== null ? { field: first.field } : {}),
  };
}

const DefinitionsVersionRef = builder.objectRef<{ version: number; loadedAt: Date }>("DefinitionsVersion").implement({
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
      resolve: async (_root, args, ctx, info) => {
        const { graph } = await requestCatalog(ctx)();
        const needle = args.search?.toLowerCase();
        const assets = graph.assets.filter(
          (a) => (!args.group || a.group === args.group) && (!needle || a.key.toLowerCase().includes(needle)),
        );
        await Promise.all([readStatusAhead(assets, ctx, info), readPausesAhead(assets, ctx, info), readLatestAhead(assets, ctx, info)]);
        return assets;
      },
    }),
    asset: t.field({
      type: AssetRef,
      nullable: true,
      args: { key: t.arg.string({ required: true }) },
      resolve: async (_root, args, ctx) => (await requestCatalog(ctx)()).graph.get(args.key) ?? null,
    }),
    definitionErrors: t.field({
      type: [DefinitionFileRef],
      description: "Definitions files that failed to load or whose definitions were left out of the graph, with the reasons",
      resolve: async (_root, _args, ctx) => (await ctx.assets.definitionFiles()).filter((f) => f.status !== "ok" || f.problems.length > 0),
    }),
    definitionFiles: t.field({
      type: [DefinitionFileRef],
      resolve: (_root, _args, ctx) => ctx.assets.definitionFiles(),
    }),
    definitionsVersion: t.field({
      type: DefinitionsVersionRef,
      nullable: true,
      resolve: async (_root, _args, ctx) => {
        const view = await requestCatalog(ctx)();
        return view.version === 0 ? null : view;
      },
    }),
  }),
});

import "./runs.js";
import "./dynamic-partitions.js";
import "./clear.js";
import "./wipe.js"; // wipePartitions
import "./history.js"; // historyArchives, restoreHistory
import "./events.js";
import "./backfills.js";
import "./alerts.js";
import "./pause.js";
import "./automation.js";
import "./triggers.js";
import "./pools.js"; // pools and setPoolSlots
import "./lineage.js"; // Lineage and erasureImpact
import "./erasures.js"; // requestErasure, erasureRequests, erasureRequest (the proof report), retryErasure
import "./checks.js"; // asset checks: Asset.checks, Asset.checkResults, Run.checkResults, runChecks
import "./definitions-status.js"; // definitionsStatus: LOADING until the first load is stored
import "./access.js"; // me, Asset.viewerCan, auditEvents

let built: ReturnType<typeof builder.toSchema> | undefined;

/**
 * The schema, built on first use: a command that works in-process imports the API's modules but never serves
 * GraphQL, and building every type's fields cost each such command about 50 ms.
 */
export function graphqlSchema(): ReturnType<typeof builder.toSchema> {
  built ??= builder.toSchema();
  return built;
}

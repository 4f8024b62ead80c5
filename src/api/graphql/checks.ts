// Asset checks: Asset.checks (with each check's latest result), Asset.checkResults,
// Run.checkResults, and the runChecks mutation. Results are read for every
// asset (or run) of a GraphQL level in one statement.
import { z } from "zod";
import type { SnapshotAsset, SnapshotCheck } from "../../graph/index.js";
import { InputError } from "../../errors/index.js";
import type { CheckResultQuery, CheckResultView, ReadPage, RunDetail, RunSummary } from "../../storage/index.js";
import { batched, perContext, requestCatalog, withCatalog } from "./batch.js";
import { builder } from "./builder.js";
import type { ApiServices } from "../services.js";
import { asGraphQLError, codeError, parseInput } from "./errors.js";
import { assetPartitionKey } from "./materializations.js";
import { checkFirst } from "./runs.js";

/** An asset's check, with the asset it belongs to (to validate partitions). */
interface AssetCheckView {
  readonly asset: SnapshotAsset;
  readonly check: SnapshotCheck;
}

/** The `Asset` and `Run` object types are defined in schema.ts and runs.ts; referenced here by name. */
const ASSET_TYPE = "Asset" as unknown as ReturnType<typeof builder.objectRef<SnapshotAsset>>;
const RUN_TYPE = "Run" as unknown as ReturnType<typeof builder.objectRef<RunSummary & Partial<Pick<RunDetail, "steps">>>>;

const CheckSeverityEnum = builder.enumType("CheckSeverity", {
  values: {
    WARN: { value: "warn", description: "A failure is worth a look; it never blocks" },
    ERROR: { value: "error", description: "A failure means the data is wrong" },
  } as const,
});

export const CheckResultRef = builder.objectRef<CheckResultView>("CheckResult").implement({
  description: "One verdict of an asset check on a partition's materialisation (one per try of the check's step)",
  fields: (t) => ({
    id: t.string({ resolve: (r) => String(r.id) }),
    assetKey: t.exposeString("assetKey"),
    checkName: t.exposeString("checkName"),
    partitionKey: t.string({
      nullable: true,
      description: "Null for an unpartitioned asset",
      resolve: (r) => (r.partitionKey === "" ? null : r.partitionKey),
    }),
    passed: t.exposeBoolean("passed"),
    severity: t.field({ type: CheckSeverityEnum, resolve: (r) => r.severity }),
    blocking: t.exposeBoolean("blocking", { description: "A failure stopped the partition's downstream steps" }),
    metadata: t.field({ type: "JSON", description: "What the check returned with its verdict", resolve: (r) => r.metadata }),
    error: t.field({
      type: "JSON",
      nullable: true,
      description: "{ code, message } when the check threw, answered wrong or never reached a verdict (timeout, check removed)",
      resolve: (r) => r.error,
    }),
    runId: t.exposeString("runId", { nullable: true }),
    stepId: t.string({ nullable: true, resolve: (r) => (r.stepId === null ? null : String(r.stepId)) }),
    tryNumber: t.exposeInt("tryNumber", { nullable: true }),
    materializationEventId: t.string({
      nullable: true,
      description: "The materialisation the check judged (Materialization.eventId); null without a verdict",
      resolve: (r) => (r.eventId === null ? null : String(r.eventId)),
    }),
    createdAt: t.field({ type: "DateTime", resolve: (r) => r.createdAt }),
  }),
});

const CheckResultConnectionRef = builder.objectRef<ReadPage<CheckResultView>>("CheckResultConnection").implement({
  description: "A page of check results, newest first",
  fields: (t) => ({
    nodes: t.field({ type: [CheckResultRef], resolve: (p) => [...p.nodes] }),
    endCursor: t.exposeString("endCursor", { nullable: true, description: "Pass as `after` for the next page" }),
    hasNextPage: t.exposeBoolean("hasNextPage"),
  }),
});

/** One statement per GraphQL level, whatever the number of assets and checks asking. */
const pageLoader = perContext((ctx: Pick<ApiServices, "assets">) => {
  const load = batched(async (keys: string[]) => {
    const pages = await ctx.assets.checkResults.checkResults(keys.map((k) => JSON.parse(k) as CheckResultQuery));
    return new Map(keys.map((k, i) => [k, pages[i]!]));
  });
  return async (query: CheckResultQuery) => (await load(JSON.stringify(query)))!;
});

/** The results of every run of a list, in one statement. */
const runResultsLoader = perContext((ctx: Pick<ApiServices, "assets">) =>
  batched((ids: string[]) => ctx.assets.checkResults.resultsOfRuns(ids)),
);

const AssetCheckRef = builder.objectRef<AssetCheckView>("AssetCheck").implement({
  description: "A data-quality check of an asset's partitions, run after each materialisation",
  fields: (t) => ({
    name: t.string({ resolve: (c) => c.check.name }),
    assetKey: t.string({ resolve: (c) => c.asset.key }),
    blocking: t.boolean({
      description: "A failure stops the partition's downstream steps (upstream_failed) and marks the partition failing its checks",
      resolve: (c) => c.check.blocking,
    }),
    severity: t.field({ type: CheckSeverityEnum, resolve: (c) => c.check.severity }),
    description: t.string({ nullable: true, resolve: (c) => c.check.description }),
    file: t.string({ description: "Definitions file, relative to the definitions directory", resolve: (c) => c.check.file }),
    latestResult: t.field({
      type: CheckResultRef,
      nullable: true,
      description: "The newest result of the check on the partition (without one: on any partition); null when it never ran",
      args: { partition: t.arg.string() },
      resolve: async (c, args, ctx) => {
        try {
          const partitionKey = await checkedPartition(c.asset, args.partition ?? undefined, ctx);
          return (await pageLoader(ctx)({ assetKey: c.asset.key, checkName: c.check.name, partitionKey, first: 1 })).nodes[0] ?? null;
        } catch (err) {
          throw asGraphQLError(err);
        }
      },
    }),
  }),
});

const checkResultsArgs = z.strictObject({
  partition: z.string().optional(),
  check: z.string().min(1, "must not be empty").optional(),
  first: z.number(),
  after: z.string().min(1, "must not be empty").optional(),
});

builder.objectFields(ASSET_TYPE, (t) => ({
  checks: t.field({
    type: [AssetCheckRef],
    nullable: false,
    description: "The asset's checks, by name",
    resolve: (a, _args, ctx) => withCatalog(ctx, ({ graph }) => graph.checksFor(a.key).map((check) => ({ asset: a, check }))),
  }),
  checkResults: t.field({
    type: CheckResultConnectionRef,
    description: "Results of the asset's checks (or of one check, or on one partition), newest first",
    args: {
      partition: t.arg.string({ description: "Only this partition" }),
      check: t.arg.string({ description: "Only this check" }),
      first: t.arg.int({ defaultValue: 50 }),
      after: t.arg.string({ description: "endCursor of the previous page" }),
    },
    resolve: async (a, rawArgs, ctx) => {
      const field = `asset("${a.key}").checkResults`;
      const args = parseInput(checkResultsArgs, rawArgs, field, "");
      checkFirst(field, args.first);
      try {
        if (args.check !== undefined) requireCheck(a, (await requestCatalog(ctx)()).graph.checksFor(a.key), args.check);
        const partitionKey = await checkedPartition(a, args.partition, ctx);
        return await pageLoader(ctx)({ assetKey: a.key, checkName: args.check, partitionKey, first: args.first, after: args.after });
      } catch (err) {
        throw asGraphQLError(err);
      }
    },
  }),
}));

builder.objectFields(RUN_TYPE, (t) => ({
  checkResults: t.field({
    type: [CheckResultRef],
    nullable: false,
    description: "Results the run's check steps recorded, oldest first (batched over a list)",
    resolve: async (r, _args, ctx) => [...((await runResultsLoader(ctx)(r.id)) ?? [])],
  }),
}));

const runChecksInput = z.strictObject({
  assetKey: z.string().min(1, "name the asset whose checks to run"),
  partitions: z.array(z.string()).max(10_000, "at most 10 000 partitions per call").optional(),
  checks: z.array(z.string().min(1, "must not be empty")).optional(),
});

const RunChecksInput = builder.inputType("RunChecksInput", {
  fields: (t) => ({
    assetKey: t.string({ required: true }),
    partitions: t.stringList({ description: "The partitions to check (required for a partitioned asset)" }),
    checks: t.stringList({ description: "The checks to run (default: all of the asset's)" }),
  }),
});

builder.mutationFields((t) => ({
  runChecks: t.field({
    type: RUN_TYPE,
    description:
      "Runs an asset's checks again on the latest materialisation of the chosen partitions, materialising nothing; " +
      "results are recorded as after a materialisation (a failing blocking check marks the partition)",
    args: { input: t.arg({ type: RunChecksInput, required: true }) },
    resolve: async (_root, args, ctx) => {
      const input = parseInput(runChecksInput, args.input, "runChecks");
      try {
        const launched = await ctx.runs.runChecks(input, ctx.guard);
        const run = await ctx.runs.store.getRun(launched.runId);
        if (!run) throw codeError("INTERNAL", `run ${launched.runId} vanished after being created`);
        return run;
      } catch (err) {
        throw asGraphQLError(err);
      }
    },
  }),
}));

/** CHECK_UNKNOWN unless the asset has a check of this name. */
function requireCheck(asset: SnapshotAsset, checks: readonly SnapshotCheck[], name: string): void {
  if (checks.some((c) => c.name === name)) return;
  const known = checks.length === 0 ? "it has no checks" : `its checks are ${checks.map((c) => `"${c.name}"`).join(", ")}`;
  throw new InputError(`asset "${asset.key}" has no check "${name}"; ${known}`, {
    code: "CHECK_UNKNOWN",
    location: { assetKey: asset.key },
  });
}

/**
 * The partition to filter on: undefined for all of them ('' for an
 * unpartitioned asset). A key must belong to the asset's partitions
 * definition (its code says why not); an unpartitioned asset takes none.
 */
async function checkedPartition(
  asset: SnapshotAsset,
  partition: string | undefined,
  ctx: Pick<ApiServices, "assets">,
): Promise<string | undefined> {
  if (partition === undefined) return asset.partitions ? undefined : "";
  return assetPartitionKey(asset, partition, ctx);
}

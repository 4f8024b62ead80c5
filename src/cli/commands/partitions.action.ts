import pc from "picocolors";
import { listPartitions, staleReasonView, type PartitionRow, type StaleReasonView } from "../../api/views/index.js";
import type { DimensionSlice } from "../../planner/index.js";
import { describePartitions } from "../../partitions/index.js";
import type { PartitionsSpec } from "../../partitions/index.js";
import type { PartitionState } from "../../storage/index.js";
import { printJson, table } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import { GraphError, InputError } from "../../errors/index.js";
import { suggestKey } from "../../graph/index.js";
import { parseDims } from "./dimension-option.js";
import type { PartitionsOptions } from "./partitions.js";

const PAGE = 10_000;
/** Pages asked of a server: each partition may carry stale reasons, and the server bounds the fields of one answer. */
const SERVER_PAGE = 1_000;
/** Partitions shown without --limit or --all: a daily asset has hundreds. */
export const DEFAULT_PARTITIONS_SHOWN = 50;

interface Listing {
  asset: string;
  partitionsDefinition: PartitionsSpec | null;
  description: string;
  totalCount: number;
  partitions: (PartitionRow & { status: PartitionState; staleReasons: StaleReasonView[]; staleReasonsTruncated: boolean })[];
}

export async function runPartitions(key: string, opts: PartitionsOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  if (opts.all && opts.limit !== undefined)
    throw new InputError("--all shows every selected partition: leave out --limit", { code: "CLI_USAGE", location: { field: "--limit" } });
  const limit = opts.all ? undefined : opts.limit === undefined ? DEFAULT_PARTITIONS_SHOWN : Number(opts.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > PAGE)) {
    throw new InputError(`--limit: "${opts.limit}" must be a whole number from 1 to ${PAGE}`, {
      code: "CLI_USAGE",
      location: { field: "--limit" },
    });
  }
  const range: Range = { from: opts.from, to: opts.to, dimensions: parseDims(opts.dim), last: limit };
  const url = await serverFor(settings);
  const listing = url ? await viaServer(url, key, range) : await inProcess(settings, key, range);
  if (opts.json) {
    printJson({
      ...listing,
      limit: limit ?? null,
      partitions: listing.partitions.map((p) => ({
        key: p.key,
        start: p.start?.toISOString() ?? null,
        end: p.end?.toISOString() ?? null,
        status: p.status,
        staleReasons: p.staleReasons,
        ...(p.staleReasonsTruncated ? { staleReasonsTruncated: true } : {}),
      })),
    });
    return;
  }
  process.stdout.write(`${listing.asset}: ${listing.description}, ${listing.totalCount} partition(s)\n`);
  process.stdout.write(
    `${table(
      ["key", "start (UTC)", "end (UTC)", "status"],
      listing.partitions.map((p) => [
        p.key || "(unpartitioned)",
        p.start?.toISOString() ?? "",
        p.end?.toISOString() ?? "",
        p.status.replace("_", " "),
      ]),
    )}\n`,
  );
  if (listing.partitions.length < listing.totalCount) {
    const narrow = listing.partitionsDefinition?.kind === "multi" ? "--from/--to or --dim" : "--from/--to";
    process.stdout.write(
      pc.dim(`showing the latest ${listing.partitions.length} of ${listing.totalCount}; use ${narrow}, or --limit <n> or --all\n`),
    );
  }
}

type Range = { from: string | undefined; to: string | undefined; dimensions: DimensionSlice[] | undefined; last: number | undefined };

async function inProcess(settings: Settings, key: string, range: Range): Promise<Listing> {
  // Loaded only without a server: the database, loader and executor would slow every command's start.
  const [{ openWithCurrentDefinitions }, { PgPartitionStatusStore }] = await Promise.all([
    import("../runtime.js"),
    import("../../storage/index.js"),
  ]);
  const { runtime } = await openWithCurrentDefinitions(settings);
  try {
    const { graph } = await runtime.catalog.current();
    const asset = graph.require(key);
    const statusStore = new PgPartitionStatusStore(runtime.database.db);
    const partitions: Listing["partitions"] = [];
    let after: string | undefined;
    let totalCount = 0;
    for (;;) {
      const page = await listPartitions(asset, {
        ...range,
        first: PAGE,
        after,
        now: new Date(),
        dynamicKeys: (name) => runtime.catalog.dynamicKeys(name),
      });
      totalCount = page.totalCount;
      const states = await statusStore.partitionStates(
        { assetKey: asset.key, codeVersion: asset.codeVersion },
        page.nodes.map((n) => n.key),
      );
      partitions.push(
        ...page.nodes.map((n) => {
          const state = states.get(n.key);
          return {
            ...n,
            status: state?.status ?? "missing",
            staleReasons: (state?.staleReasons ?? []).map(staleReasonView),
            staleReasonsTruncated: state?.moreStaleUpstreams ?? false,
          };
        }),
      );
      if (!page.hasNextPage || page.endCursor === null) break;
      after = page.endCursor;
    }
    return {
      asset: key,
      partitionsDefinition: asset.partitions,
      description: asset.partitions ? describePartitions(asset.partitions) : "unpartitioned",
      totalCount,
      partitions,
    };
  } finally {
    await runtime.close();
  }
}

const QUERY = `query ($key: String!, $from: String, $to: String, $first: Int, $after: String, $last: Int, $dimensions: [PartitionDimensionInput!]) {
  asset(key: $key) {
    partitionsDefinition partitionsDescription
    partitions(from: $from, to: $to, first: $first, after: $after, last: $last, dimensions: $dimensions) {
      totalCount endCursor hasNextPage
      nodes { key start end status staleReasonsTruncated
        staleReasons { kind message materializedCodeVersion currentCodeVersion upstreamAssetKey upstreamPartitionKey readEventId latestEventId } }
    }
  }
}`;

type WireStaleReason = { kind: string; message: string } & Record<string, string | null>;

/** GraphQL's StaleReason (enum in capitals, every field present) as the in-process listing gives it. */
function staleReasonFromWire(r: WireStaleReason): StaleReasonView {
  if (r.kind === "CODE_VERSION_CHANGED") {
    return {
      kind: "code_version_changed",
      message: r.message,
      materializedCodeVersion: r.materializedCodeVersion ?? "",
      currentCodeVersion: r.currentCodeVersion ?? "",
    };
  }
  return {
    kind: "upstream_updated",
    message: r.message,
    upstreamAssetKey: r.upstreamAssetKey ?? "",
    upstreamPartitionKey: r.upstreamPartitionKey ?? "",
    readEventId: r.readEventId ?? null,
    latestEventId: r.latestEventId ?? "",
  };
}

async function viaServer(url: string, key: string, range: Range): Promise<Listing> {
  type Page = {
    asset: {
      partitionsDefinition: PartitionsSpec | null;
      partitionsDescription: string | null;
      partitions: {
        totalCount: number;
        endCursor: string | null;
        hasNextPage: boolean;
        nodes: {
          key: string;
          start: string | null;
          end: string | null;
          status: string;
          staleReasons: WireStaleReason[] | null;
          staleReasonsTruncated: boolean | null;
        }[];
      };
    } | null;
  };
  const partitions: Listing["partitions"] = [];
  let after: string | null = null;
  for (;;) {
    const data: Page = await graphql<Page>(url, QUERY, { key, ...range, first: SERVER_PAGE, after });
    if (!data.asset) {
      const { assets } = await graphql<{ assets: { key: string }[] }>(url, "{ assets { key } }");
      const near = suggestKey(
        key,
        assets.map((a) => a.key),
      );
      throw new GraphError("GRAPH_UNKNOWN_ASSET", `no asset has the key "${key}"${near ? `; did you mean "${near}"?` : ""}`, {
        location: { assetKey: key },
      });
    }
    const page = data.asset.partitions;
    partitions.push(
      ...page.nodes.map((n) => ({
        key: n.key,
        start: n.start ? new Date(n.start) : undefined,
        end: n.end ? new Date(n.end) : undefined,
        // GraphQL spells the enum in capitals.
        status: n.status.toLowerCase() as PartitionState,
        staleReasons: (n.staleReasons ?? []).map(staleReasonFromWire),
        staleReasonsTruncated: n.staleReasonsTruncated === true,
      })),
    );
    if (!page.hasNextPage || !page.endCursor) {
      return {
        asset: key,
        partitionsDefinition: data.asset.partitionsDefinition,
        description: data.asset.partitionsDescription ?? "unpartitioned",
        totalCount: page.totalCount,
        partitions,
      };
    }
    after = page.endCursor;
  }
}

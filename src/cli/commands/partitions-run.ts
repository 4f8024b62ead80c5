import { listPartitions, type PartitionRow } from "../../api/index.js";
import { describePartitions } from "../../partitions/index.js";
import type { PartitionsSpec } from "../../partitions/index.js";
import { PgPartitionStatusStore, type PartitionState } from "../../storage/index.js";
import { syncDefinitions } from "../definitions-sync.js";
import { printJson, table } from "../output.js";
import { openRuntime } from "../runtime.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import { GraphError } from "../../errors/index.js";
import { suggestKey } from "../../graph/index.js";

const PAGE = 10_000;

interface Listing {
  asset: string;
  partitionsDefinition: PartitionsSpec | null;
  description: string;
  totalCount: number;
  partitions: (PartitionRow & { status: PartitionState })[];
}

export async function runPartitions(key: string, opts: { from?: string; to?: string; json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const range = { from: opts.from, to: opts.to };
  const url = await serverFor(settings);
  const listing = url
    ? await viaServer(url, key, range)
    : await inProcess(settings, key, range);
  if (opts.json) {
    printJson({
      ...listing,
      partitions: listing.partitions.map((p) => ({
        key: p.key,
        start: p.start?.toISOString() ?? null,
        end: p.end?.toISOString() ?? null,
        status: p.status,
      })),
    });
    return;
  }
  process.stdout.write(`${listing.asset}: ${listing.description}, ${listing.totalCount} partition(s)\n`);
  process.stdout.write(
    `${table(
      ["key", "start (UTC)", "end (UTC)", "status"],
      listing.partitions.map((p) => [p.key || "(unpartitioned)", p.start?.toISOString() ?? "", p.end?.toISOString() ?? "", p.status.replace("_", " ")]),
    )}\n`,
  );
}

type Range = { from: string | undefined; to: string | undefined };

async function inProcess(settings: Settings, key: string, range: Range): Promise<Listing> {
  const runtime = await openRuntime(settings);
  try {
    await syncDefinitions(runtime.definitions, { dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs });
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
      partitions.push(...page.nodes.map((n) => ({ ...n, status: states.get(n.key)?.status ?? "missing" })));
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

const QUERY = `query ($key: String!, $from: String, $to: String, $first: Int, $after: String) {
  asset(key: $key) {
    partitionsDefinition partitionsDescription
    partitions(from: $from, to: $to, first: $first, after: $after) { totalCount endCursor hasNextPage nodes { key start end status } }
  }
}`;

async function viaServer(url: string, key: string, range: Range): Promise<Listing> {
  type Page = {
    asset: {
      partitionsDefinition: PartitionsSpec | null;
      partitionsDescription: string | null;
      partitions: {
        totalCount: number;
        endCursor: string | null;
        hasNextPage: boolean;
        nodes: { key: string; start: string | null; end: string | null; status: string }[];
      };
    } | null;
  };
  const partitions: Listing["partitions"] = [];
  let after: string | null = null;
  for (;;) {
    const data: Page = await graphql<Page>(url, QUERY, { key, ...range, first: PAGE, after });
    if (!data.asset) {
      const { assets } = await graphql<{ assets: { key: string }[] }>(url, "{ assets { key } }");
      const near = suggestKey(key, assets.map((a) => a.key));
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

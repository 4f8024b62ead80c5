import pc from "picocolors";
import type { Lineage, LineageRequest } from "../../api/index.js";
import { checkLineageDepth } from "../../api/views/index.js";
import { InputError } from "../../errors/index.js";
import type { LineageEdge, LineageEvent } from "../../storage/index.js";
import { printJson, table } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { LineageOptions } from "./lineage.js";

export async function runLineage(key: string, opts: LineageOptions, globals: GlobalOptions): Promise<void> {
  const request = requestOf(key, opts);
  const settings = resolveSettings(globals);
  const url = await serverFor(settings);
  const result = url ? await viaServer(url, request) : await inProcess(settings, request);
  if (opts.json) {
    printJson({ ok: true, ...result });
    return;
  }
  process.stdout.write(`${formatLineage(result)}\n`);
}

function requestOf(key: string, opts: LineageOptions): LineageRequest {
  if (opts.downstream && opts.upstream) {
    throw new InputError("give one of --downstream and --upstream, not both", {
      code: "INPUT_INVALID",
      location: { field: "--downstream" },
    });
  }
  // Checked here too: a server could not even parse a depth past GraphQL's Int.
  const text = opts.depth ?? "";
  const depth = checkLineageDepth(/^\d+$/.test(text) ? Number(text) : Number.NaN, "--depth", `"${text}"`);
  return { assetKey: key, partitionKey: opts.partition, direction: opts.downstream ? "downstream" : "upstream", depth };
}

async function inProcess(settings: Settings, request: LineageRequest): Promise<Lineage> {
  // The current definitions decide the static graph and which partition keys exist.
  // Loaded only without a server: the database, loader and executor would slow every command's start.
  const { withCurrentDefinitions } = await import("../runtime.js");
  return withCurrentDefinitions(settings, (api) => api.lineage.around(request));
}

type Wire<T, K extends keyof T> = Omit<T, K> & { [P in K]: string | null };
type WireEvent = Omit<Wire<LineageEvent, "stepId">, "eventId" | "createdAt"> & { eventId: string; createdAt: string };
type WireEdge = Omit<Wire<LineageEdge, "upstreamEventId">, "eventId"> & { eventId: string };
interface WireLineage extends Omit<Lineage, "start" | "materializations" | "inputs" | "direction"> {
  direction: "UPSTREAM" | "DOWNSTREAM";
  start: WireEvent | null;
  materializations: WireEvent[];
  inputs: WireEdge[];
}

const EVENT_FIELDS = "eventId kind assetKey partitionKey runId stepId tryNumber dataVersion codeVersion createdAt depth";

async function viaServer(url: string, request: LineageRequest): Promise<Lineage> {
  const data = await graphql<{ lineage: WireLineage }>(
    url,
    `query ($assetKey: String!, $partitionKey: String, $direction: LineageDirection, $depth: Int) {
      lineage(assetKey: $assetKey, partitionKey: $partitionKey, direction: $direction, depth: $depth) {
        assetKey partitionKey direction depth
        assets { key kind depth partitions pii }
        dependencies { upstreamKey downstreamKey name mapping mappingDescription }
        start { ${EVENT_FIELDS} }
        materializations { ${EVENT_FIELDS} }
        inputs { eventId upstreamAssetKey upstreamPartitionKey upstreamEventId }
      }
    }`,
    {
      assetKey: request.assetKey,
      partitionKey: request.partitionKey ?? null,
      direction: request.direction === "downstream" ? "DOWNSTREAM" : "UPSTREAM",
      depth: request.depth ?? null,
    },
  );
  const l = data.lineage;
  const event = (e: WireEvent): LineageEvent => ({
    ...e,
    eventId: Number(e.eventId),
    stepId: e.stepId === null ? null : Number(e.stepId),
    createdAt: new Date(e.createdAt),
  });
  return {
    ...l,
    direction: l.direction === "DOWNSTREAM" ? "downstream" : "upstream",
    start: l.start ? event(l.start) : null,
    materializations: l.materializations.map(event),
    inputs: l.inputs.map((i) => ({
      ...i,
      eventId: Number(i.eventId),
      upstreamEventId: i.upstreamEventId === null ? null : Number(i.upstreamEventId),
    })),
  };
}

/** Lineage for people: the assets and dependencies, then each materialisation with what it read (or what read it). */
export function formatLineage(l: Lineage): string {
  const out: string[] = [];
  const partition = l.partitionKey === null ? "" : l.partitionKey === "" ? " (unpartitioned)" : ` partition ${l.partitionKey}`;
  out.push(pc.bold(`${l.direction} lineage of ${l.assetKey}${partition}, depth ${l.depth}`), "");
  out.push(
    table(
      ["depth", "asset", "partitions", "pii"],
      l.assets.map((a) => [
        String(a.depth),
        a.key,
        a.partitions ?? "unpartitioned",
        a.pii === null ? "" : pc.yellow(JSON.stringify(a.pii)),
      ]),
    ),
  );
  if (l.dependencies.length > 0) {
    out.push("", ...l.dependencies.map((d) => `${d.upstreamKey} → ${d.downstreamKey}  ${pc.dim(`${d.name}: ${d.mappingDescription}`)}`));
  }
  out.push("");
  if (l.partitionKey === null) {
    out.push(pc.dim("run-level lineage: give --partition K (the asset is partitioned)"));
  } else if (l.start === null) {
    out.push(pc.dim("run-level lineage: the partition has no materialisation yet"));
  } else {
    out.push(
      table(["depth", "event", "asset", "partition", "kind", "run", "step/try", "data version", "at"], l.materializations.map(eventRow)),
    );
    const links = l.inputs.map((i) => {
      const upstream = `${i.upstreamAssetKey} ${i.upstreamPartitionKey || "(unpartitioned)"}`.trim();
      return `event ${i.eventId} read ${upstream} ${i.upstreamEventId === null ? pc.dim("(no recorded event)") : `(event ${i.upstreamEventId})`}`;
    });
    if (links.length > 0) out.push("", ...links);
  }
  return out.join("\n");
}

function eventRow(e: LineageEvent): string[] {
  return [
    String(e.depth),
    String(e.eventId),
    e.assetKey,
    e.partitionKey,
    e.kind,
    e.runId ?? "",
    e.stepId === null ? "" : `${e.stepId}/${e.tryNumber ?? ""}`,
    e.dataVersion ?? "",
    e.createdAt.toISOString(),
  ];
}

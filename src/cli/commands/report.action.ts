import { localGuard } from "../../access/index.js";
import type { ReportAssetEventRequest, ReportedAssetEvent } from "../../api/index.js";
import { InputError } from "../../errors/index.js";
import { printJson } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { ReportOptions } from "./report.js";

export async function runReport(key: string, opts: ReportOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const request: ReportAssetEventRequest = {
    assetKey: key,
    partition: opts.partition,
    metadata: parseMetadata(opts.metadata),
    dataVersion: opts.dataVersion,
    kind: opts.observation ? "observation" : "external",
  };
  const url = await serverFor(settings);
  const event = url ? await viaServer(url, request) : await inProcess(settings, request);
  if (opts.json) {
    printJson({ ok: true, event: { ...event, eventId: String(event.eventId), createdAt: event.createdAt.toISOString() } });
    return;
  }
  const where = event.partitionKey ? ` partition ${event.partitionKey}` : "";
  process.stdout.write(`event ${event.eventId} recorded: ${event.assetKey}${where} (${event.kind})\n`);
}

function parseMetadata(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new InputError(`--metadata: not valid JSON (${(err as Error).message}); give an object such as '{"rows":3}'`, {
      code: "EVENT_METADATA_INVALID",
    });
  }
}

async function inProcess(settings: Settings, request: ReportAssetEventRequest): Promise<ReportedAssetEvent> {
  // Loaded only without a server: the database, loader and executor would slow every command's start.
  const { withCurrentDefinitions } = await import("../runtime.js");
  return withCurrentDefinitions(settings, (api) => api.assets.reportEvent(request, localGuard()));
}

async function viaServer(url: string, request: ReportAssetEventRequest): Promise<ReportedAssetEvent> {
  const input = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== undefined));
  const data = await graphql<{
    reportAssetEvent: { eventId: string; assetKey: string; partitionKey: string | null; kind: string; createdAt: string };
  }>(
    url,
    `
      mutation ($input: ReportAssetEventInput!) {
        reportAssetEvent(input: $input) {
          eventId
          assetKey
          partitionKey
          kind
          createdAt
        }
      }
    `,
    { input },
  );
  const e = data.reportAssetEvent;
  return {
    eventId: Number(e.eventId),
    assetKey: e.assetKey,
    partitionKey: e.partitionKey ?? "",
    kind: e.kind as ReportedAssetEvent["kind"],
    createdAt: new Date(e.createdAt),
  };
}

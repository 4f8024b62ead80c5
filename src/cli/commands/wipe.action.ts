import { localGuard } from "../../access/index.js";
import type { PartitionWipeResult, WipePartitionsRequest } from "../../api/index.js";
import { printJson } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { WipeOptions } from "./wipe.js";

/** Partition keys shown in the summary; the rest are counted. */
const SHOWN = 5;

export async function runWipe(key: string, opts: WipeOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const request: WipePartitionsRequest = {
    assetKey: key,
    ...(opts.partition !== undefined ? { partitions: opts.partition } : {}),
    ...(opts.from !== undefined ? { from: opts.from } : {}),
    ...(opts.to !== undefined ? { to: opts.to } : {}),
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ...(opts.dryRun ? { dryRun: true } : {}),
  };
  const url = await serverFor(settings);
  const wiped = url ? await viaServer(url, request) : await inProcess(settings, request);
  if (opts.json) {
    const { objectDeletions: _queued, ...shown } = wiped;
    printJson({ ok: true, ...shown });
    return;
  }
  const keys = wiped.partitionKeys.filter((k) => k !== "");
  const which =
    keys.length === 0
      ? `"${wiped.assetKey}"`
      : `${wiped.partitionCount} partition(s) of "${wiped.assetKey}": ${keys
          .slice(0, SHOWN)
          .map((k) => `"${k}"`)
          .join(", ")}${wiped.partitionCount > SHOWN ? ", …" : ""}`;
  const out = process.stdout;
  out.write(`${wiped.dryRun ? "would wipe" : "wiped"} ${which}\n`);
  out.write(
    `  ${wiped.statusesRemoved} status(es), ${wiped.materializationsRemoved} materialisation(s), ${wiped.otherEventsRemoved} other event(s), ` +
      `${wiped.checkResultsRemoved} check result(s), ${wiped.outputsRemoved} output(s) (${wiped.objectCount} in the object store)\n`,
  );
  if (wiped.dryRun) {
    out.write("nothing was removed (--dry-run)\n");
    return;
  }
  if (wiped.objectsPending.length > 0) {
    process.stderr.write(
      `${wiped.objectsPending.length} object(s) could not be deleted yet (${wiped.objectsPending[0]!.error}); ` +
        `a running reconciler deletes them when the object store answers\n`,
    );
  }
}

async function inProcess(settings: Settings, request: WipePartitionsRequest): Promise<PartitionWipeResult> {
  // Loaded only without a server: the database and loader would slow every command's start.
  const { withCurrentDefinitions } = await import("../runtime.js");
  return withCurrentDefinitions(settings, (api) => api.assets.wipePartitions(request, localGuard()));
}

async function viaServer(url: string, request: WipePartitionsRequest): Promise<PartitionWipeResult> {
  const data = await graphql<{ wipePartitions: Omit<PartitionWipeResult, "objectDeletions"> }>(
    url,
    `
      mutation ($input: WipePartitionsInput!) {
        wipePartitions(input: $input) {
          assetKey
          partitionCount
          partitionKeys
          statusesRemoved
          materializationsRemoved
          otherEventsRemoved
          checkResultsRemoved
          outputsRemoved
          objectCount
          objectsDeleted
          objectsPending {
            storageRef
            error
          }
          dryRun
        }
      }
    `,
    { input: request },
  );
  return { ...data.wipePartitions, objectDeletions: [] };
}

import { localGuard, type Guard } from "../../access/index.js";
import { InputError } from "../../errors/index.js";
import type { ErasureItemInput, ErasureReport, ErasureRequestRecord, ErasureState, ErasureStore } from "../../storage/index.js";
import { erasureImpact, type ErasureImpactAsset } from "../lineage/erasure-impact.js";
import type { LineageServices } from "../lineage/lineage-services.js";

/** The most characters of an erasure's reason. */
export const MAX_ERASURE_REASON_LENGTH = 1_000;
/** The most requests one listing answers. */
export const MAX_ERASURE_LIST = 500;

export interface RequestErasureInput {
  /** The asset that held the data (a source asset, or an asset Tributary materialises). */
  readonly assetKey: string;
  /** Its partitions that held the data ([] or [""] for an unpartitioned asset). */
  readonly partitionKeys: readonly string[];
  readonly reason?: string | null | undefined;
  /** Says what would be erased, and records nothing. */
  readonly dryRun?: boolean | undefined;
}

export interface ErasureServices extends LineageServices {
  readonly erasures: ErasureStore;
}

/** An impacted asset, and whether it declares an `erase` hook that the request calls. */
export interface ErasurePlanAsset extends ErasureImpactAsset {
  readonly eraseHook: boolean;
}

export interface ErasurePlan {
  /** Null for a dry run. */
  readonly request: ErasureRequestRecord | null;
  readonly assetKey: string;
  readonly partitionKeys: readonly string[];
  /** The source first, then every derived asset in dependency order. */
  readonly assets: readonly ErasurePlanAsset[];
  /** How many partitions are erased (the source's, when Tributary materialises it, and every derived one). */
  readonly partitionCount: number;
  /** How many of them have a stored output (deleted with its object and the logs of the tries that wrote it). */
  readonly outputCount: number;
  readonly dryRun: boolean;
}

/**
 * Requests the erasure of the data of some partitions of an asset and of everything derived from them: computes
 * the impact (as `erasureImpact`), records the request with each impacted partition, and leaves the rest to the
 * reconcilers (ErasureTask): delete the partitions' stored outputs and logs, call the assets' `erase` hooks, mark
 * them erased, re-materialise them from the cleaned source. Needs `admin` on every impacted asset.
 *
 * Errors (nothing is recorded): GraphError GRAPH_UNKNOWN_ASSET; InputError ERASURE_PARTITIONS_REQUIRED,
 * ERASURE_PARTITION_INVALID, ERASURE_TOO_MANY_PARTITIONS, ERASURE_IMPACT_TOO_LARGE (as erasureImpact),
 * ERASURE_REASON_TOO_LONG, ERASURE_PARTITIONS_IN_USE (a run writes an impacted partition, named).
 */
export async function requestErasure(
  services: ErasureServices,
  input: RequestErasureInput,
  now: Date,
  guard: Guard = localGuard(),
): Promise<ErasurePlan> {
  const reason = input.reason?.trim() || null;
  if ((reason?.length ?? 0) > MAX_ERASURE_REASON_LENGTH) {
    throw new InputError(`the reason is ${reason!.length} characters long; at most ${MAX_ERASURE_REASON_LENGTH}`, {
      code: "ERASURE_REASON_TOO_LONG",
      location: { assetKey: input.assetKey, field: "reason" },
    });
  }
  const impact = await erasureImpact(services, { assetKey: input.assetKey, partitionKeys: input.partitionKeys });
  const { graph } = await services.graphs.current();
  const source = graph.require(input.assetKey);
  // A source asset is observed: Tributary holds no data of it. An asset it materialises holds the data itself.
  const sourceItems = source.kind === "asset" ? impact.sources : [];
  const impacted = [...sourceItems, ...impact.partitions];
  const items: ErasureItemInput[] = impacted.map((p) => ({
    assetKey: p.assetKey,
    partitionKey: p.partitionKey,
    eventId: p.eventId,
    runId: p.runId,
    stepId: p.stepId,
  }));
  const partitionKeys = impact.sources.map((s) => s.partitionKey);
  const assets = impact.assets.map((a) => ({ ...a, eraseHook: graph.get(a.assetKey)?.erase !== undefined }));
  const dryRun = input.dryRun === true;
  const audit = await guard.authorize("requestErasure", "admin", {
    assets: impact.assets.map((a) => a.assetKey),
    partitions: partitionKeys.filter((k) => k !== ""),
    detail: { ...(reason ? { reason } : {}), ...(dryRun ? { dryRun } : {}), partitionCount: items.length },
  });
  const plan = {
    assetKey: source.key,
    partitionKeys,
    assets,
    partitionCount: items.length,
    outputCount: impacted.filter((p) => p.output !== null).length,
    dryRun,
  };
  if (dryRun) return { ...plan, request: null };
  const request = await services.erasures.create(
    {
      assetKey: source.key,
      partitionKeys,
      reason,
      requestedBy: guard.caller.name,
      items,
      guardedAssets: [source.key, ...graph.descendants(source.key)],
    },
    now,
    audit,
  );
  return { ...plan, request };
}

/** The proof report of a request: ERASURE_NOT_FOUND for an unknown id. Needs `viewer` on the source asset. */
export async function erasureReport(services: ErasureServices, id: string, guard: Guard = localGuard()): Promise<ErasureReport> {
  const report = await services.erasures.report(checkId(id));
  if (!report) throw notFound(id);
  if (!(await guard.canView(report.request.assetKey))) throw notFound(id);
  return report;
}

/** Requests, newest first. */
export async function listErasures(
  services: ErasureServices,
  options: { readonly limit?: number | undefined; readonly state?: ErasureState | undefined },
): Promise<ErasureRequestRecord[]> {
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ERASURE_LIST) {
    throw new InputError(`limit must be a whole number from 1 to ${MAX_ERASURE_LIST} (got ${limit})`, {
      code: "ERASURE_LIST_LIMIT",
      location: { field: "limit" },
    });
  }
  return services.erasures.list({ limit, ...(options.state ? { state: options.state } : {}) });
}

/**
 * A failed request goes on where it failed: the erasure (hooks that returned are not called again) or, when the
 * re-materialisation failed, a new backfill. Needs `admin` on the source asset. ERASURE_NOT_FOUND, ERASURE_NOT_FAILED.
 */
export async function retryErasure(
  services: ErasureServices,
  id: string,
  now: Date,
  guard: Guard = localGuard(),
): Promise<ErasureRequestRecord> {
  const request = await services.erasures.get(checkId(id));
  if (!request) throw notFound(id);
  const audit = await guard.authorize("retryErasure", "admin", { assets: [request.assetKey], detail: { erasureId: id } });
  return services.erasures.retry(id, now, audit);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkId(id: string): string {
  if (!UUID.test(id)) {
    throw new InputError(`"${id}" is not an erasure request id (a UUID, as \`tributary erase list\` shows)`, {
      code: "ERASURE_NOT_FOUND",
      location: { field: "id" },
    });
  }
  return id;
}

function notFound(id: string): InputError {
  return new InputError(`no erasure request ${id}`, { code: "ERASURE_NOT_FOUND", location: { field: "id" } });
}

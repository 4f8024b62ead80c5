import { localGuard, type Guard } from "../../access/index.js";
import { planScope } from "./plan-scope.js";
import { InputError, TributaryError } from "../../errors/index.js";
import type { SnapshotAsset, SnapshotCheck } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace } from "../../partitions/index.js";
import { plannedRun, type PlannedStep, type RunPlan } from "../../planner/index.js";
import type { LaunchedRun, LaunchServices } from "./launch-run.js";

export interface RunChecksRequest {
  readonly assetKey: string;
  /** The partitions to check; required for a partitioned asset, left out for an unpartitioned one. */
  readonly partitions?: readonly string[] | undefined;
  /** The checks to run (default: every check of the asset). */
  readonly checks?: readonly string[] | undefined;
}

/** How many partition keys a message quotes before "and N more". */
const SAMPLE = 5;

/**
 * Runs an asset's checks again on the latest materialisation of the chosen
 * partitions, without materialising anything: one run (origin manual, tag
 * `checks: <asset key>`) whose steps are one check step per (partition,
 * check), each reading the partition's latest stored output. Their results
 * are recorded like those of checks run after a materialisation.
 *
 * Errors (nothing is written on any): InputError DEFINITIONS_NOT_LOADED;
 * GraphError GRAPH_UNKNOWN_ASSET (with the nearest key); InputError
 * CHECKS_NONE (the asset has no checks), CHECK_UNKNOWN (naming the asset's
 * checks), CHECK_PARTITION_REQUIRED, CHECK_PARTITION_UNEXPECTED,
 * CHECK_PARTITION_INVALID, CHECK_PARTITION_NOT_EXISTING and
 * CHECK_NOTHING_TO_CHECK (a partition never materialised).
 */
export async function runChecks(
  services: LaunchServices,
  request: RunChecksRequest,
  now: Date,
  guard: Guard = localGuard(),
): Promise<LaunchedRun> {
  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const asset = graph.require(request.assetKey);
  const checks = selectedChecks(asset, graph.checksFor(asset.key), request.checks);
  const partitionKeys = await selectedPartitions(services, asset, request.partitions, now);

  const materialized = new Set((await services.runs.materializedKeys([asset.key])).get(asset.key) ?? []);
  const unmaterialized = partitionKeys.filter((k) => !materialized.has(k));
  if (unmaterialized.length > 0) throw nothingToCheck(asset.key, unmaterialized);

  const steps: PlannedStep[] = [];
  for (const partitionKey of partitionKeys) {
    for (const c of checks) steps.push({ index: steps.length, assetKey: asset.key, partitionKey, upstream: [], check: c.name });
  }
  const plan: RunPlan = { version, steps, missing: [] };
  const audit = await guard.authorize("runChecks", "operator", planScope(plan));
  const { runId } = await services.runs.createRun(plannedRun(graph, plan, { origin: "manual", tags: { checks: asset.key } }), now, audit);
  return { runId, steps: steps.length, plan };
}

function selectedChecks(
  asset: SnapshotAsset,
  all: readonly SnapshotCheck[],
  names: readonly string[] | undefined,
): readonly SnapshotCheck[] {
  const location = { assetKey: asset.key };
  if (all.length === 0) {
    throw new InputError(
      `asset "${asset.key}" has no checks: declare one with check(${asset.exportName}, { name }, fn) (see docs/checks.md)`,
      {
        code: "CHECKS_NONE",
        location,
      },
    );
  }
  if (names === undefined || names.length === 0) return all;
  const byName = new Map(all.map((c) => [c.name, c]));
  const unknown = names.filter((n) => !byName.has(n));
  if (unknown.length > 0) {
    throw new InputError(
      `asset "${asset.key}" has no check ${unknown.map((n) => `"${n}"`).join(", ")}; its checks are ${all.map((c) => `"${c.name}"`).join(", ")}`,
      { code: "CHECK_UNKNOWN", location },
    );
  }
  return [...new Set(names)].map((n) => byName.get(n)!);
}

/** The partition keys to check, validated against the asset's partitions ('' for an unpartitioned asset). */
async function selectedPartitions(
  services: LaunchServices,
  asset: SnapshotAsset,
  partitions: readonly string[] | undefined,
  now: Date,
): Promise<readonly string[]> {
  const key = asset.key;
  const location = { assetKey: key };
  const given = [...new Set(partitions ?? [])];
  if (!asset.partitions) {
    const unexpected = given.filter((p) => p !== "");
    if (unexpected.length > 0) {
      throw new InputError(`asset "${key}" is not partitioned: leave out the partition (got "${unexpected[0]}")`, {
        code: "CHECK_PARTITION_UNEXPECTED",
        location,
      });
    }
    return [""];
  }
  if (given.length === 0) {
    throw new InputError(`asset "${key}" is partitioned: name the partitions to check (--partition / partitions)`, {
      code: "CHECK_PARTITION_REQUIRED",
      location,
    });
  }
  const ctx = await loadPartitionContext([asset.partitions], (name) => services.definitions.listDynamicPartitions(name));
  const space = partitionSpace(asset.partitions, ctx);
  const count = space.count(now);
  for (const p of given) {
    let index: number;
    try {
      index = space.indexOf(p);
    } catch (err) {
      const reason = err instanceof TributaryError ? err.message : String(err);
      throw new InputError(`asset "${key}": ${reason}`, {
        code: "CHECK_PARTITION_INVALID",
        location: { ...location, partitionKey: p },
        cause: err,
      });
    }
    if (index >= count) {
      throw new InputError(`asset "${key}": partition "${p}" does not exist yet, so there is nothing to check`, {
        code: "CHECK_PARTITION_NOT_EXISTING",
        location: { ...location, partitionKey: p },
      });
    }
  }
  return given;
}

/** CHECK_NOTHING_TO_CHECK, naming the first partitions that were never materialised. */
function nothingToCheck(assetKey: string, keys: readonly string[]): InputError {
  const location = { assetKey };
  if (keys.length === 1) {
    const what = keys[0] === "" ? `asset "${assetKey}"` : `partition "${keys[0]}" of asset "${assetKey}"`;
    return new InputError(`${what} has not been materialised: there is nothing to check`, { code: "CHECK_NOTHING_TO_CHECK", location });
  }
  const sample = keys
    .slice(0, SAMPLE)
    .map((k) => `"${k}"`)
    .join(", ");
  const more = keys.length > SAMPLE ? ` and ${keys.length - SAMPLE} more` : "";
  return new InputError(`partitions ${sample}${more} of asset "${assetKey}" have not been materialised: there is nothing to check`, {
    code: "CHECK_NOTHING_TO_CHECK",
    location,
  });
}

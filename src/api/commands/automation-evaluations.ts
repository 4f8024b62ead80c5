import { InputError, PartitionError, TributaryError } from "../../errors/index.js";
import type { AssetGraph } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace, type PartitionSpace } from "../../partitions/index.js";
import { describeCondition } from "../../sdk/index.js";
import type { AutomationStore, DefinitionStore, EvaluationRow, PauseStore } from "../../storage/index.js";

export const DEFAULT_EVALUATIONS_LIMIT = 10;
export const MAX_EVALUATIONS_LIMIT = 200;

export interface AutomationEvaluationsRequest {
  readonly assetKey: string;
  /** Only records that concern this partition (records about no particular partition concern all). */
  readonly partition?: string | undefined;
  /** Most records returned, 1–200 (default 10). */
  readonly limit?: number | undefined;
}

export interface AutomationEvaluationsServices {
  readonly graphs: { current(options?: { fresh?: boolean }): Promise<{ readonly version: number; readonly graph: AssetGraph }> };
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  readonly evaluations: Pick<AutomationStore, "listEvaluations" | "evaluationPartitionSets">;
  readonly pauses: Pick<PauseStore, "pauseStates">;
}

/** An inclusive range of partition keys, as the automation tick stores it. */
export type KeyRange = readonly [string, string];

export interface EvaluationReasonView {
  /** cron_tick, upstream_updated, is_missing, code_version_changed, failed, upstreams_not_ready, in_progress, paused, request_limit, condition_false, no_candidates, cron_problem, plan_failed, runs. */
  readonly operand: string;
  readonly detail: string;
  /** The partitions of the decision it applies to (at most a few ranges); null: all of them. */
  readonly partitions: readonly KeyRange[] | null;
  readonly upstream: string | null;
  readonly eventId: number | null;
  /** The cron tick (an ISO instant) behind a cron_tick reason. */
  readonly tick: string | null;
  /** The runs a request became, when it became more than one. */
  readonly runIds: readonly string[] | null;
}

export interface AutomationEvaluationView {
  readonly id: number;
  /** The automation tick that decided it. */
  readonly tick: number;
  readonly evaluatedAt: Date;
  readonly decision: "requested" | "declined" | "skipped";
  /** Partitions decided on, as key ranges; [] when about no particular partition; [["", ""]] for an unpartitioned asset. */
  readonly partitions: readonly KeyRange[];
  /** How many partitions the ranges hold in the current definition; null when some of their keys left it. */
  readonly count: number | null;
  /** The condition at the time, as the SDK call that built it. */
  readonly condition: string;
  /** The run a request became (the first one when it became several: see the `runs` reason). */
  readonly runId: string | null;
  /** Why; with a partition asked for, only the reasons that concern it (all when none is narrowed down to it). */
  readonly reasons: readonly EvaluationReasonView[];
}

export interface AutomationEvaluations {
  readonly assetKey: string;
  readonly partition: string | null;
  /** The asset's current condition as the SDK call that builds it; null when it has none. */
  readonly condition: string | null;
  readonly paused: boolean;
  /** The latest decision (about the partition asked for) in one line. */
  readonly summary: string;
  /** Newest first. */
  readonly records: readonly AutomationEvaluationView[];
}

/** Reasons that say why something was not requested, preferred over the trigger in a summary. */
const BLOCKING = new Set([
  "upstreams_not_ready",
  "in_progress",
  "failed",
  "request_limit",
  "condition_false",
  "plan_failed",
  "paused",
  "cron_problem",
]);

/**
 * "Why did / didn't this run?": the latest automation evaluation records of
 * an asset (or of one of its partitions), newest first, with the asset's
 * current condition and pause state.
 *
 * A partition is matched by index in the current partitions definition, so
 * a stored range [from, to] covers every partition between its ends. The
 * distinct stored partition sets are matched first and only the records
 * holding a matching set are read, so an asset's whole history is never
 * loaded.
 *
 * Errors: InputError INPUT_INVALID (limit), DEFINITIONS_NOT_LOADED,
 * PARTITION_UNEXPECTED (a partition of an unpartitioned asset); GraphError
 * GRAPH_UNKNOWN_ASSET (with the nearest key); PartitionError
 * PARTITION_KEY_INVALID (naming the asset and its definition).
 */
export async function automationEvaluations(
  services: AutomationEvaluationsServices,
  request: AutomationEvaluationsRequest,
): Promise<AutomationEvaluations> {
  const limit = request.limit ?? DEFAULT_EVALUATIONS_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVALUATIONS_LIMIT) {
    throw new InputError(
      `automation evaluations of "${request.assetKey}": limit must be a whole number from 1 to ${MAX_EVALUATIONS_LIMIT} (got ${limit})`,
      {
        code: "INPUT_INVALID",
        location: { assetKey: request.assetKey, field: "limit" },
      },
    );
  }
  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const asset = graph.require(request.assetKey);
  const key = asset.key;

  let space: PartitionSpace | null = null;
  if (asset.partitions) {
    const ctx = await loadPartitionContext([asset.partitions], (name) => services.definitions.listDynamicPartitions(name));
    space = partitionSpace(asset.partitions, ctx);
  }
  const partition = request.partition === undefined || (request.partition === "" && !space) ? undefined : request.partition;
  let index: number | undefined;
  if (partition !== undefined) {
    if (!space) {
      throw new InputError(`asset "${key}" is not partitioned: leave out the partition (got "${partition}")`, {
        code: "PARTITION_UNEXPECTED",
        location: { assetKey: key, partitionKey: partition },
      });
    }
    try {
      index = space.indexOf(partition);
    } catch (err) {
      if (!(err instanceof TributaryError)) throw err;
      throw new PartitionError(`asset "${key}": ${err.message}`, {
        code: err.code,
        location: { assetKey: key, partitionKey: partition },
        cause: err,
      });
    }
  }

  const readRows = async (): Promise<EvaluationRow[]> => {
    if (partition === undefined || !space || index === undefined) return services.evaluations.listEvaluations({ assetKey: key, limit });
    const sets = await services.evaluations.evaluationPartitionSets(key);
    const concerned = sets.filter((s) => s === "" || covers(space, index, partition, parseRanges(safeJson(s)) ?? []));
    return services.evaluations.listEvaluations({ assetKey: key, limit, partitionSets: concerned });
  };
  const [rows, pauses] = await Promise.all([readRows(), services.pauses.pauseStates([key])]);

  const records = rows.map((row) => toView(row, space, partition, index));
  const condition = asset.automation ? describeCondition(asset.automation) : null;
  const paused = pauses.get(key)?.paused ?? false;
  return {
    assetKey: key,
    partition: partition ?? null,
    condition,
    paused,
    summary: summarize(key, partition, condition, paused, records[0]),
    records,
  };
}

function toView(
  row: EvaluationRow,
  space: PartitionSpace | null,
  partition: string | undefined,
  index: number | undefined,
): AutomationEvaluationView {
  const ranges = row.partitions === "" ? [] : (parseRanges(safeJson(row.partitions)) ?? []);
  let reasons = row.reasons.map(toReason).filter((r): r is EvaluationReasonView => r !== undefined);
  if (partition !== undefined && space && index !== undefined) {
    const concerned = reasons.filter((r) => r.partitions === null || covers(space, index, partition, r.partitions));
    // Reasons list at most a few ranges: when none names the partition, all of them are kept.
    if (concerned.length > 0) reasons = concerned;
  }
  return {
    id: row.id,
    tick: row.tick,
    evaluatedAt: row.evaluatedAt,
    decision: row.decision,
    partitions: ranges,
    count: countOf(space, ranges),
    condition: row.condition,
    runId: row.runId,
    reasons,
  };
}

/** Whether the ranges hold the partition `key` (at `index` in the current space). */
function covers(space: PartitionSpace, index: number, key: string, ranges: readonly KeyRange[]): boolean {
  for (const [from, to] of ranges) {
    if (from === key || to === key) return true;
    // An end that left the definition: the range cannot be placed any more.
    if (!space.has(from) || !space.has(to)) continue;
    if (space.indexOf(from) <= index && index <= space.indexOf(to)) return true;
  }
  return false;
}

function countOf(space: PartitionSpace | null, ranges: readonly KeyRange[]): number | null {
  if (ranges.length === 0) return 0;
  if (!space) return 1;
  let n = 0;
  for (const [from, to] of ranges) {
    if (!space.has(from) || !space.has(to)) return null;
    n += Math.max(0, space.indexOf(to) - space.indexOf(from) + 1);
  }
  return n;
}

function toReason(raw: unknown): EvaluationReasonView | undefined {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const r = raw as Record<string, unknown>;
  return {
    operand: typeof r.operand === "string" ? r.operand : "unknown",
    detail: typeof r.detail === "string" ? r.detail : "",
    partitions: parseRanges(r.partitions),
    upstream: typeof r.upstream === "string" ? r.upstream : null,
    eventId: typeof r.eventId === "number" ? r.eventId : null,
    tick: typeof r.tick === "string" ? r.tick : null,
    runIds: Array.isArray(r.runIds) ? r.runIds.filter((x): x is string => typeof x === "string") : null,
  };
}

/** Key ranges from stored JSON; null when it is not a list of [from, to] pairs. */
function parseRanges(value: unknown): KeyRange[] | null {
  if (!Array.isArray(value)) return null;
  const out: KeyRange[] = [];
  for (const r of value) {
    if (Array.isArray(r) && r.length === 2 && typeof r[0] === "string" && typeof r[1] === "string") out.push([r[0], r[1]]);
  }
  return out;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `2025-03-01..2025-03-05, 2025-03-09` (the first few ranges). */
export function formatKeyRanges(ranges: readonly KeyRange[], max = 3): string {
  const shown = ranges
    .filter(([a, b]) => a !== "" || b !== "")
    .slice(0, max)
    .map(([a, b]) => (a === b ? a : `${a}..${b}`));
  const more = ranges.length - Math.min(ranges.length, max);
  return shown.join(", ") + (more > 0 ? `, … (${ranges.length} ranges)` : "");
}

function summarize(
  assetKey: string,
  partition: string | undefined,
  condition: string | null,
  paused: boolean,
  latest: AutomationEvaluationView | undefined,
): string {
  const subject = partition === undefined ? assetKey : `${assetKey} partition ${partition}`;
  const pausedNote = paused ? "; automation is paused" : "";
  if (!condition) return `no automation condition on ${assetKey}${pausedNote}`;
  if (!latest) return `${subject}: not evaluated yet${pausedNote}`;
  const ranges = partition === undefined ? formatKeyRanges(latest.partitions) : "";
  const what = `${latest.decision}${ranges ? ` ${ranges}` : ""}`;
  const run = latest.decision === "requested" && latest.runId ? ` (run ${latest.runId})` : "";
  const main =
    latest.decision === "requested" ? latest.reasons[0] : (latest.reasons.find((r) => BLOCKING.has(r.operand)) ?? latest.reasons[0]);
  const others = main ? latest.reasons.filter((r) => r !== main && r.operand !== "runs").length : 0;
  const why = main ? `: ${main.detail}${others > 0 ? ` (+${others} more reason${others > 1 ? "s" : ""})` : ""}` : "";
  // A record from before a pause or resume still shows; the pause state is now.
  const now = paused && !latest.reasons.some((r) => r.operand === "paused") ? pausedNote : "";
  return `${subject}: ${what} at ${latest.evaluatedAt.toISOString()}${run}${why}${now}`;
}

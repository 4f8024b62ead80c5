import { describePartitions } from "../../partitions/index.js";
import type { JobRunRow, PoolRecord, RunOrigin, RunStatus, StepAttributesRow, StepRecord, StepState } from "../../storage/index.js";
import type { AssetJob } from "./asset-jobs.js";
import type { JobPartitions } from "./job-partitions.js";

// Airflow's JSON documents (the spec's schemas), built from Tributary's records. Field names are Airflow's.

const DAG_STATE: Record<RunStatus, string> = {
  queued: "queued",
  running: "running",
  success: "success",
  failed: "failed",
  canceled: "failed",
};
const RUN_TYPE: Record<RunOrigin, string> = {
  manual: "manual",
  rerun: "manual",
  schedule: "scheduled",
  automation: "scheduled",
  backfill: "backfill",
};

/** The fields of {@link dagView}'s document (what `fields` may name). */
export const DAG_FIELDS = [
  "dag_id",
  "dag_display_name",
  "root_dag_id",
  "is_paused",
  "is_active",
  "is_subdag",
  "last_parsed_time",
  "last_pickled",
  "last_expired",
  "scheduler_lock",
  "pickle_id",
  "default_view",
  "fileloc",
  "file_token",
  "owners",
  "description",
  "schedule_interval",
  "timetable_description",
  "tags",
  "max_active_tasks",
  "max_active_runs",
  "max_consecutive_failed_dag_runs",
  "has_task_concurrency_limits",
  "has_import_errors",
  "next_dagrun",
  "next_dagrun_data_interval_start",
  "next_dagrun_data_interval_end",
  "next_dagrun_create_after",
] as const;

/** The fields of {@link dagRunView}'s document. */
export const DAG_RUN_FIELDS = [
  "dag_id",
  "dag_run_id",
  "logical_date",
  "execution_date",
  "data_interval_start",
  "data_interval_end",
  "start_date",
  "end_date",
  "state",
  "run_type",
  "external_trigger",
  "conf",
  "last_scheduling_decision",
  "note",
] as const;

/** Airflow's DAG document for an asset job. */
export function dagView(job: AssetJob, paused: boolean, parsedAt: Date): Record<string, unknown> {
  const cron = sharedCron(job);
  const owners = [...new Set(job.assets.map((a) => a.owner).filter((o): o is string => o !== null))].sort();
  const limits = job.assets.map((a) => a.maxActiveRuns).filter((n): n is number => n !== null);
  return {
    dag_id: job.dagId,
    dag_display_name: job.dagId,
    root_dag_id: null,
    is_paused: paused,
    is_active: true,
    is_subdag: false,
    last_parsed_time: parsedAt.toISOString(),
    last_pickled: null,
    last_expired: null,
    scheduler_lock: null,
    pickle_id: null,
    default_view: "grid",
    fileloc: job.assets[0]!.file,
    file_token: job.assets[0]!.file,
    owners,
    description: `Assets of group "${job.group}" (${describePartitions(job.partitions)}): ${job.assets.map((a) => a.key).join(", ")}`,
    schedule_interval: cron === null ? null : { __type: "CronExpression", value: cron },
    timetable_description: describePartitions(job.partitions),
    tags: [{ name: job.group }],
    max_active_tasks: null,
    max_active_runs: limits.length > 0 ? Math.min(...limits) : null,
    max_consecutive_failed_dag_runs: null,
    has_task_concurrency_limits: job.assets.some((a) => a.maxConcurrency !== null),
    has_import_errors: false,
    next_dagrun: null,
    next_dagrun_data_interval_start: null,
    next_dagrun_data_interval_end: null,
    next_dagrun_create_after: null,
  };
}

/** The cron of the job when every asset is automated by the same `onCron`; else null. */
function sharedCron(job: AssetJob): string | null {
  const crons = new Set(job.assets.map((a) => (a.automation?.kind === "cron" ? a.automation.cron : null)));
  const [only] = crons;
  return crons.size === 1 && only !== undefined ? only : null;
}

/**
 * A run as Airflow's DAGRun. Its logical date is the start of the window of
 * its first partition of the job (text order of keys), its data interval
 * spans its first to last partition; without time partitions the logical
 * date is when the run was created and there is no data interval.
 */
export function dagRunView(job: AssetJob, run: JobRunRow, partitions: JobPartitions): Record<string, unknown> {
  const first = partitions.window(run.firstPartitionKey);
  const last = partitions.window(run.lastPartitionKey);
  const logical = (first?.start ?? run.createdAt).toISOString();
  return {
    dag_id: job.dagId,
    dag_run_id: run.id,
    logical_date: logical,
    execution_date: logical,
    data_interval_start: first ? first.start.toISOString() : null,
    data_interval_end: last ? last.end.toISOString() : null,
    start_date: iso(run.startedAt),
    end_date: iso(run.endedAt),
    state: DAG_STATE[run.status],
    run_type: RUN_TYPE[run.origin],
    external_trigger: run.origin === "manual" || run.origin === "rerun",
    conf: {},
    last_scheduling_decision: null,
    note: null,
  };
}

/** A step with the map index the REST API gives it (see {@link restMapIndices}). */
export interface IndexedStep {
  readonly step: StepRecord;
  readonly mapIndex: number;
}

/**
 * Steps as Airflow task instances: a task (asset) with one step in the run
 * keeps the step's own map index (-1); a task with several partitions in the
 * run is a mapped task, its steps numbered 0, 1, … in partition order (the
 * partition key is the rendered map index).
 */
export function restMapIndices(all: readonly StepRecord[]): IndexedStep[] {
  // Asset checks' steps are not Airflow tasks of the DAG (they have no task_id of their own): the REST API shows
  // the assets' steps; checks and their results are in GraphQL. A fanned-out partition is one task instance here
  // (its expanded step, which ends when it gathered its mapped steps); the mapped steps themselves are in GraphQL.
  const steps = all.filter((s) => s.checkName === null && s.mapIndex < 0);
  const byAsset = new Map<string, StepRecord[]>();
  for (const s of steps) byAsset.set(s.assetKey, [...(byAsset.get(s.assetKey) ?? []), s]);
  for (const same of byAsset.values())
    same.sort((x, y) => (x.partitionKey < y.partitionKey ? -1 : x.partitionKey > y.partitionKey ? 1 : 0));
  return steps.map((step) => {
    const same = byAsset.get(step.assetKey)!;
    return { step, mapIndex: same.length === 1 ? step.mapIndex : same.indexOf(step) };
  });
}

/** The queue of a step without one: Airflow's default queue name (steps have their own queue only with the BullMQ executor). */
export const DEFAULT_QUEUE = "default";

/** A step's logical date: its partition's window start, or (no time window) when its run was created. */
export function stepExecutionDate(step: StepRecord, runCreatedAt: Date, partitions: JobPartitions): Date {
  return partitions.window(step.partitionKey)?.start ?? runCreatedAt;
}

/** A step's duration in seconds (its latest try's, or start to end); null before it ran. */
export function stepDuration(step: StepRecord): number | null {
  const latest = step.tries.at(-1);
  const durationMs = latest?.durationMs ?? (step.startedAt && step.endedAt ? step.endedAt.getTime() - step.startedAt.getTime() : null);
  return durationMs === null ? null : durationMs / 1000;
}

/** Airflow's TaskInstance document for a step (with its queue, executor and pool slots from `attributes`). */
export function taskInstanceView(
  job: AssetJob,
  { step, mapIndex }: IndexedStep,
  runCreatedAt: Date,
  partitions: JobPartitions,
  attributes: StepAttributesRow | undefined,
): Record<string, unknown> {
  const latest = step.tries.at(-1);
  return {
    dag_id: job.dagId,
    dag_run_id: step.runId,
    task_id: step.assetKey,
    task_display_name: step.assetKey,
    map_index: mapIndex,
    rendered_map_index: step.partitionKey === "" ? null : step.partitionKey,
    execution_date: stepExecutionDate(step, runCreatedAt, partitions).toISOString(),
    start_date: iso(step.startedAt),
    end_date: iso(step.endedAt),
    duration: stepDuration(step),
    state: taskState(step.state),
    try_number: step.tryNumber,
    max_tries: step.maxTries,
    hostname: latest?.hostname ?? "",
    unixname: "",
    pid: latest?.pid ?? null,
    pool: step.pool,
    pool_slots: attributes?.poolSlots ?? 1,
    queue: attributes?.queue ?? DEFAULT_QUEUE,
    executor: attributes?.executor ?? null,
    priority_weight: step.priority,
    queued_when: iso(step.queuedAt),
    operator: "asset",
    note: null,
    rendered_fields: {},
    sla_miss: null,
    trigger: null,
    triggerer_job: null,
  };
}

/** Airflow has no `pending`: a step waiting on its upstreams has no state yet (null). */
function taskState(state: StepState): string | null {
  return state === "pending" ? null : state;
}

/**
 * Airflow's Pool document. `occupied_slots` is the pool's own count (queued
 * and running steps, deferred ones too with include_deferred); the split by
 * state (running_slots, queued_slots, …) is left out.
 */
export function poolView(pool: PoolRecord): Record<string, unknown> {
  return {
    name: pool.name,
    slots: pool.slots,
    description: pool.description,
    include_deferred: pool.includeDeferred,
    occupied_slots: pool.occupied,
    open_slots: Math.max(0, pool.slots - pool.occupied),
  };
}

function iso(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}

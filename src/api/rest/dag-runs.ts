import type { Context } from "hono";
import { z } from "zod";
import { guardOf } from "../auth/request-guard.js";
import type { JobRunFilter, RunDetail, StepRecord } from "../../storage/index.js";
import { TributaryError } from "../../errors/index.js";
import { assetJobs, requireJob, type AssetJob } from "./asset-jobs.js";
import type { RestDeps } from "./airflow-api.js";
import {
  DAG_RUN_FIELDS,
  dagRunView,
  DEFAULT_QUEUE,
  restMapIndices,
  stepDuration,
  stepExecutionDate,
  taskInstanceView,
} from "./airflow-views.js";
import { jobPartitions, type JobPartitions } from "./job-partitions.js";
import { RestError } from "./rest-error.js";
import { dateRange, durationRange, fieldsOf, inRange, pickFields, repeated, runStatesOf, taskStatesOf } from "./rest-filters.js";
import { instant, jsonBody, orderOf, pageOf } from "./rest-params.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** GET /dags/{dag_id}/dagRuns: runs with a step of the DAG's assets, by logical date (newest first by default), filtered in SQL. */
export async function listDagRuns(c: Context, deps: RestDeps): Promise<Response> {
  const page = pageOf(c);
  const order = orderOf(c, ["-execution_date", "execution_date"]);
  const fields = fieldsOf(c, DAG_RUN_FIELDS);
  const job = await currentJob(c, deps);
  const partitions = await jobPartitions(job, deps.context.assets.catalog);
  const logical = dateRange(c, "execution_date");
  const filter: JobRunFilter = {
    ...(logical && partitions.logicalDateFilter(logical, deps.context.now(), "query.execution_date_gte/lte")),
    startedAt: dateRange(c, "start_date"),
    endedAt: dateRange(c, "end_date"),
    updatedAt: dateRange(c, "updated_at"),
    statuses: runStatesOf(c),
  };
  const runOrder = partitions.logicalDateOrder(deps.context.now(), order === "-execution_date");
  const { rows, total } = await deps.queries.listRunsOfAssets(
    job.assets.map((a) => a.key),
    page,
    filter,
    runOrder,
  );
  return c.json({ dag_runs: rows.map((r) => pickFields(dagRunView(job, r, partitions), fields)), total_entries: total });
}

const triggerSchema = z
  .object({
    dag_run_id: z.null({ error: "is assigned by Tributary (the run id): leave it out" }).optional(),
    logical_date: instant.nullable().optional(),
    execution_date: instant.nullable().optional(),
    conf: z
      .object({ partition_key: z.string().min(1).max(1024).optional() })
      .strict()
      .optional(),
    note: z.string().max(1000).nullable().optional(),
  })
  .strict();

/**
 * POST /dags/{dag_id}/dagRuns: launches a run of the DAG's assets for one
 * partition: `conf.partition_key`, or the time partition whose window holds
 * `logical_date`, or (neither) the latest existing time partition.
 */
export async function triggerDagRun(c: Context, deps: RestDeps): Promise<Response> {
  const job = await currentJob(c, deps);
  const body = await jsonBody(c, triggerSchema);
  const logical = body.logical_date ?? body.execution_date ?? undefined;
  if (body.logical_date && body.execution_date && body.logical_date.getTime() !== body.execution_date.getTime()) {
    throw RestError.badRequest("body: logical_date and execution_date differ; give one of them");
  }
  const partitionKey = body.conf?.partition_key;
  if (partitionKey !== undefined && logical !== undefined)
    throw RestError.badRequest("body: give either conf.partition_key or logical_date, not both");
  const partitions = await jobPartitions(job, deps.context.assets.catalog);
  const now = deps.context.now();
  const partition =
    partitionKey ?? (logical !== undefined ? partitions.keyAt(logical, now, "body.logical_date") : latestPartition(job, partitions, now));
  const launched = await deps.context.runs
    .launch(
      {
        assetKeys: job.assets.map((a) => a.key),
        partition,
        origin: "manual",
        tags: { "airflow/dag_id": job.dagId },
      },
      guardOf(c),
    )
    .catch(async (err: unknown) => {
      throw err instanceof TributaryError && err.code === "PLAN_MISSING_UPSTREAM" ? await inRestTerms(err, deps, job) : err;
    });
  const run = (await deps.context.runs.store.getRunSummary(launched.runId))!;
  const key = partition ?? "";
  return c.json(dagRunView(job, { ...run, firstPartitionKey: key, lastPartitionKey: key }, partitions));
}

/**
 * A run that would read upstream partitions that are not there: the advice
 * (worded for the CLI and GraphQL) becomes what a REST client can do, trigger
 * the DAGs that hold those upstream assets first.
 */
async function inRestTerms(err: TributaryError, deps: RestDeps, job: AssetJob): Promise<RestError> {
  const lines = err.message.split("\n");
  const advice = lines.at(-1) ?? "";
  if (!/--|includeUpstream/.test(advice)) return RestError.badRequest(`${err.message} [${err.code}]`);
  const { graph } = await deps.context.assets.catalog.current();
  const inJob = new Set(job.assets.map((a) => a.key));
  // The upstream assets the message names as missing.
  const upstream = new Set(
    job.assets.flatMap((a) => [...graph.ancestors([a.key])]).filter((k) => !inJob.has(k) && err.message.includes(`"${k}"`)),
  );
  const dags = assetJobs(graph).filter((j) => j.assets.some((a) => upstream.has(a.key)));
  const where = dags.map((d) => `POST /api/v1/dags/${d.dagId}/dagRuns`).join(", ");
  return RestError.badRequest(
    `${lines.slice(0, -1).join("\n")}\ntrigger the runs of those upstream partitions first (${where || "their DAGs' dagRuns"}) with the same conf.partition_key or logical_date, then this one [PLAN_MISSING_UPSTREAM]`,
  );
}

/** Without a date or key: the latest existing partition of a time-partitioned job; nothing for an unpartitioned one. */
function latestPartition(job: AssetJob, partitions: JobPartitions, now: Date): string | undefined {
  const space = partitions.space;
  if (!space) return undefined;
  if (space.spec.kind !== "time")
    throw RestError.badRequest(
      `body.conf.partition_key: DAG ${JSON.stringify(job.dagId)} is partitioned (${space.describe()}): name the partition to run`,
    );
  const count = space.count(now);
  if (count === 0) throw RestError.badRequest(`DAG ${JSON.stringify(job.dagId)} has no partition yet (${space.describe()})`);
  return space.keyAt(count - 1);
}

/**
 * GET …/dagRuns/{dag_run_id}/taskInstances: the run's steps of the DAG's
 * assets. One run's steps are few: the filters apply here, after the map
 * indices are given (a filter never renumbers a mapped task).
 */
export async function listTaskInstances(c: Context, deps: RestDeps): Promise<Response> {
  const page = pageOf(c);
  const filters = {
    executionDate: dateRange(c, "execution_date"),
    startDate: dateRange(c, "start_date"),
    endDate: dateRange(c, "end_date"),
    updatedAt: dateRange(c, "updated_at"),
    duration: durationRange(c),
    states: taskStatesOf(c),
    pools: repeated(c, "pool"),
    queues: repeated(c, "queue"),
    executors: repeated(c, "executor"),
  };
  const job = await currentJob(c, deps);
  const { run, steps } = await requireJobRun(deps, job, c.req.param("dag_run_id")!);
  const partitions = await jobPartitions(job, deps.context.assets.catalog);
  const attributes = new Map((await deps.queries.stepAttributes(steps.map((s) => s.id))).map((a) => [a.stepId, a]));
  const chosen = restMapIndices(steps).filter(({ step }) => {
    const attrs = attributes.get(step.id);
    return (
      inRange(stepExecutionDate(step, run.createdAt, partitions), filters.executionDate) &&
      inRange(step.startedAt, filters.startDate) &&
      inRange(step.endedAt, filters.endDate) &&
      inRange(attrs?.updatedAt ?? null, filters.updatedAt) &&
      inRange(stepDuration(step), filters.duration) &&
      (filters.states === undefined || filters.states.includes(step.state)) &&
      (filters.pools === undefined || filters.pools.includes(step.pool)) &&
      (filters.queues === undefined || filters.queues.includes(attrs?.queue ?? DEFAULT_QUEUE)) &&
      (filters.executors === undefined || (attrs !== undefined && filters.executors.includes(attrs.executor)))
    );
  });
  return c.json({
    task_instances: chosen
      .slice(page.offset, page.offset + page.limit)
      .map((s) => taskInstanceView(job, s, run.createdAt, partitions, attributes.get(s.step.id))),
    total_entries: chosen.length,
  });
}

/** The DAG named by the path's dag_id in the current definitions (404 otherwise). */
export async function currentJob(c: Context, deps: RestDeps): Promise<AssetJob> {
  const { graph } = await deps.context.assets.catalog.current();
  return requireJob(graph, c.req.param("dag_id")!);
}

/** A run and its steps of the job's assets; 404 naming the run when it does not exist or has no step of the job. */
export async function requireJobRun(deps: RestDeps, job: AssetJob, runId: string): Promise<{ run: RunDetail; steps: StepRecord[] }> {
  const notFound = () =>
    RestError.notFound("DAGRun", `DAGRun with dag_run_id: ${JSON.stringify(runId)} not found in DAG ${JSON.stringify(job.dagId)}`);
  if (!UUID.test(runId)) throw notFound();
  const run = await deps.context.runs.store.getRun(runId);
  const keys = new Set(job.assets.map((a) => a.key));
  const steps = run?.steps.filter((s) => keys.has(s.assetKey)) ?? [];
  if (!run || steps.length === 0) throw notFound();
  return { run, steps };
}

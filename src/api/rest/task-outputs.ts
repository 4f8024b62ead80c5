import type { Context } from "hono";
import { guardOf } from "../auth/request-guard.js";
import { readLogChunk, tryLogFile } from "../logs/log-file.js"; // one log reader
import { requireTask, type AssetJob } from "./asset-jobs.js";
import type { RestDeps } from "./airflow-api.js";
import { restMapIndices, type IndexedStep } from "./airflow-views.js";
import { currentJob, requireJobRun } from "./dag-runs.js";
import { jobPartitions } from "./job-partitions.js";
import { RestError } from "./rest-error.js";
import { booleanParam, mapIndexOf, pageOf, wholeNumberOf } from "./rest-params.js";

/** The XCom key of a step's output (what Airflow calls a task's return value). */
const RETURN_VALUE_KEY = "return_value";
/** Bytes of log one request returns; the continuation token fetches the rest. */
const LOG_CHUNK_BYTES = 1024 * 1024;
/** With full_content: at most this many bytes in one response. */
const MAX_FULL_LOG_BYTES = 16 * 1024 * 1024;

/** GET …/taskInstances/{task_id}/xcomEntries: the step's stored output, as the XCom `return_value` (without its value, like Airflow's listing). */
export async function xcomEntries(c: Context, deps: RestDeps): Promise<Response> {
  const page = pageOf(c);
  const key = c.req.query("xcom_key");
  const { job, steps } = await taskSteps(c, deps);
  const mapIndex = c.req.query("map_index") === undefined ? undefined : mapIndexOf(c);
  const chosen = steps.filter((s) => mapIndex === undefined || s.mapIndex === mapIndex);
  const outputs = key === undefined || key === RETURN_VALUE_KEY ? await deps.queries.stepOutputs(chosen.map((s) => s.step.id)) : [];
  const partitions = await jobPartitions(job, deps.context.assets.catalog);
  const entries = outputs.map((o) => {
    const { step, mapIndex: index } = chosen.find((s) => s.step.id === o.stepId)!;
    return {
      dag_id: job.dagId,
      task_id: step.assetKey,
      map_index: index,
      key: RETURN_VALUE_KEY,
      execution_date: (partitions.window(step.partitionKey)?.start ?? o.createdAt).toISOString(),
      timestamp: o.createdAt.toISOString(),
    };
  });
  return c.json({ xcom_entries: entries.slice(page.offset, page.offset + page.limit), total_entries: entries.length });
}

/**
 * GET …/taskInstances/{task_id}/logs/{task_try_number}: the try's log file,
 * a chunk at a time (the continuation token is the byte offset to go on
 * from). JSON `{content, continuation_token}`, or the bare text with
 * `Accept: text/plain`.
 */
export async function taskLog(c: Context, deps: RestDeps): Promise<Response> {
  const tryNumber = wholeNumberOf(c.req.param("task_try_number"), "path.task_try_number", 1)!;
  const offset = wholeNumberOf(c.req.query("token"), "query.token", 0) ?? 0;
  const full = booleanParam(c, "full_content") ?? false;
  const mapIndex = mapIndexOf(c);
  const { job, steps } = await taskSteps(c, deps);
  const found = steps.find((s) => s.mapIndex === mapIndex);
  if (!found)
    throw RestError.notFound(
      "TaskInstance",
      `task ${JSON.stringify(steps[0]!.step.assetKey)} has no map_index ${mapIndex} in this run of DAG ${JSON.stringify(job.dagId)} (map indices: ${steps.map((s) => s.mapIndex).join(", ")})`,
    );
  const attempt = found.step.tries.find((t) => t.tryNumber === tryNumber);
  if (!attempt) {
    throw RestError.notFound(
      "Task try",
      `task ${JSON.stringify(found.step.assetKey)} has no try ${tryNumber} (tries so far: ${found.step.tries.length})`,
    );
  }
  const file = tryLogFile(deps.logsDir, found.step, attempt);
  if (!file) throw RestError.notFound("Log", "this try's log is not in the logs directory this server reads");
  const { content, next } = await readLogChunk(file, offset, full ? MAX_FULL_LOG_BYTES : LOG_CHUNK_BYTES);
  if ((c.req.header("accept") ?? "").includes("text/plain")) return c.text(content);
  return c.json({ content, continuation_token: String(next) });
}

/** The steps of the path's task in the path's run, with their REST map indices. */
async function taskSteps(c: Context, deps: RestDeps): Promise<{ job: AssetJob; steps: IndexedStep[] }> {
  const job = await currentJob(c, deps);
  const task = requireTask(job, c.req.param("task_id")!);
  const { steps } = await requireJobRun(deps, job, c.req.param("dag_run_id")!);
  const own = restMapIndices(steps).filter((s) => s.step.assetKey === task.key);
  if (own.length === 0)
    throw RestError.notFound(
      "TaskInstance",
      `task ${JSON.stringify(task.key)} has no step in run ${JSON.stringify(c.req.param("dag_run_id"))}`,
    );
  // Logs and outputs may hold the data itself: a viewer of the asset's team only.
  if (!(await guardOf(c).canView(task.key))) {
    throw new RestError(
      403,
      "FORBIDDEN",
      "Forbidden",
      `reading the logs and outputs of task ${JSON.stringify(task.key)} needs the viewer role on its team`,
    );
  }
  return { job, steps: own };
}

import type { Context } from "hono";
import { z } from "zod";
import { guardOf } from "../auth/request-guard.js";
import { TributaryError } from "../../errors/index.js";
import type { AssetGraph } from "../../graph/index.js";
import type { PlannedStep } from "../../planner/index.js";
import type { RunStore } from "../../storage/index.js";
import {
  createClearRuns,
  planClear,
  type ClearPartitionsRequest,
  type ClearPlan,
  type ClearPlanServices,
} from "../commands/clear-partitions.js";
import { assetJobs, requireTask, type AssetJob } from "./asset-jobs.js";
import type { RestDeps } from "./airflow-api.js";
import { currentJob, requireJobRun } from "./dag-runs.js";
import { jobPartitions, type JobPartitions } from "./job-partitions.js";
import { RestError } from "./rest-error.js";
import { instant, jsonBody } from "./rest-params.js";

const unsupported = (what: string) =>
  z.literal(false, { error: `${what} is not supported by Tributary; leave it out or send false` }).optional();

const clearSchema = z
  .object({
    dry_run: z.boolean().default(true),
    task_ids: z.array(z.string().min(1).max(1024)).min(1).max(1000).optional(),
    dag_run_id: z.string().max(100).nullable().optional(),
    start_date: instant.optional(),
    end_date: instant.optional(),
    only_failed: z.boolean().default(true),
    only_running: unsupported("only_running"),
    include_downstream: z.boolean().default(false),
    include_upstream: unsupported("include_upstream (upstream results stay; clear the upstream task itself)"),
    include_future: unsupported("include_future"),
    include_past: unsupported("include_past"),
    include_subdags: unsupported("include_subdags"),
    include_parentdag: unsupported("include_parentdag"),
    reset_dag_runs: unsupported("reset_dag_runs"),
  })
  .strict();

type ClearBody = z.infer<typeof clearSchema>;
type Selection = Pick<ClearPartitionsRequest, "partition" | "from" | "to">;

/**
 * POST /dags/{dag_id}/clearTaskInstances: clear and rerun (the clearPartitions
 * command) for each named task (asset; default: every task of the DAG), over
 * the partitions of `dag_run_id`, or of the windows from start_date to
 * end_date, or (neither, with only_failed) every failed partition. Each
 * asset's clear is one rerun; the response lists the reruns' task instances.
 *
 * All or nothing: every task's clear is planned first (bad input or a plan
 * that cannot run writes nothing), then the reruns are created in one
 * transaction. With dry_run (Airflow's default) the same plans are answered
 * and nothing is written.
 */
export async function clearTaskInstances(c: Context, deps: RestDeps): Promise<Response> {
  const job = await currentJob(c, deps);
  const body = await jsonBody(c, clearSchema);
  const tasks = [...new Set(body.task_ids ?? job.assets.map((a) => a.key))].map((id) => requireTask(job, id).key);
  const { graph } = await deps.context.assets.catalog.current();
  const partitions = await jobPartitions(job, deps.context.assets.catalog);
  const { selections, runSteps } = await selectionsOf(deps, job, partitions, body, tasks);
  // With include_downstream a task below another named one is cleared with it.
  const roots = body.include_downstream
    ? tasks.filter((t) => !tasks.some((other) => other !== t && graph.descendants(other).has(t)))
    : tasks;

  const services = clearServicesOf(deps);
  const now = deps.context.now();
  const plans: ClearPlan[] = [];
  for (const task of roots) {
    const request: ClearPartitionsRequest = {
      assetKey: task,
      ...selections.get(task),
      downstream: body.include_downstream,
      onlyFailed: body.only_failed,
    };
    try {
      plans.push(await planClear(services, request, now));
    } catch (err) {
      // Nothing to clear (e.g. nothing failed) is no error: as in Airflow, the answer lists no task instances.
      if (!(err instanceof TributaryError && err.code === "CLEAR_NOTHING")) throw err;
    }
  }
  if (body.dry_run) {
    // The task instances that would be cleared: each (asset, partition)'s step in dag_run_id, or else its latest run's.
    // The assets' steps only: checks' steps are not Airflow task instances (see restMapIndices).
    const planned = plans.flatMap((p) => p.plan.steps).filter((s) => s.check === undefined);
    const latest = await deps.queries.latestRunsOfPartitions(planned.filter((s) => !runSteps.has(stepKey(s))));
    const runOf = new Map([...latest.map((r) => [stepKey(r), r.runId] as const), ...runSteps]);
    return c.json({
      task_instances: await references(
        deps,
        graph,
        planned.map((step) => ({ step, runId: runOf.get(stepKey(step)) })),
      ),
    });
  }
  const cleared = plans.length === 0 ? [] : await createClearRuns(services.runs, plans, now, guardOf(c));
  return c.json({
    task_instances: await references(
      deps,
      graph,
      cleared.flatMap((run) => run.plan.steps.filter((step) => step.check === undefined).map((step) => ({ step, runId: run.runId }))),
    ),
  });
}

/**
 * The clear command's services from the REST context: the graph is the
 * catalog's current one, the same version the request's DAG and tasks were
 * resolved against (at most a second old, like every REST read).
 */
function clearServicesOf(deps: RestDeps): ClearPlanServices & { readonly runs: Pick<RunStore, "createRuns"> } {
  const { catalog } = deps.context.assets;
  return {
    graphs: { current: () => catalog.current() },
    runs: deps.context.runs.store,
    definitions: { listDynamicPartitions: (name) => catalog.dynamicKeys(name) },
  };
}

const stepKey = (s: { assetKey: string; partitionKey: string }): string => `${s.assetKey}\u0000${s.partitionKey}`;

/**
 * Each task's partition selection: the run's partitions of it, or the date
 * range's windows, or none; with dag_run_id also the run's own steps (by
 * asset and partition), the task instances a dry run names.
 */
async function selectionsOf(
  deps: RestDeps,
  job: AssetJob,
  partitions: JobPartitions,
  body: ClearBody,
  tasks: readonly string[],
): Promise<{ selections: Map<string, Selection>; runSteps: Map<string, string> }> {
  const selections = new Map<string, Selection>();
  const runSteps = new Map<string, string>();
  const dated = body.start_date !== undefined || body.end_date !== undefined;
  if (body.dag_run_id) {
    if (dated) throw RestError.badRequest("body: give either dag_run_id or start_date/end_date, not both");
    const { run, steps } = await requireJobRun(deps, job, body.dag_run_id);
    for (const s of steps) runSteps.set(stepKey(s), run.id);
    for (const task of tasks) {
      const keys = steps
        .filter((s) => s.assetKey === task)
        .map((s) => s.partitionKey)
        .sort();
      if (keys.length === 0)
        throw RestError.notFound("TaskInstance", `task ${JSON.stringify(task)} has no step in run ${JSON.stringify(body.dag_run_id)}`);
      selections.set(task, keys[0] === "" ? {} : keys.length === 1 ? { partition: keys[0] } : { from: keys[0], to: keys.at(-1) });
    }
    return { selections, runSteps };
  }
  if (dated) {
    const now = deps.context.now();
    const from = body.start_date && partitions.keyAt(body.start_date, now, "body.start_date");
    const to = body.end_date && partitions.keyAt(body.end_date, now, "body.end_date");
    for (const task of tasks) selections.set(task, { from, to });
  }
  return { selections, runSteps };
}

/**
 * Steps as Airflow task instance references, each in its own asset's DAG. A
 * dry run's step of a partition that never ran has no run to name: its
 * dag_run_id is left out.
 */
async function references(
  deps: RestDeps,
  graph: AssetGraph,
  steps: readonly { step: PlannedStep; runId: string | undefined }[],
): Promise<Record<string, unknown>[]> {
  const jobOf = new Map(assetJobs(graph).flatMap((j) => j.assets.map((a) => [a.key, j] as const)));
  const spaces = new Map<AssetJob, JobPartitions>();
  const out: Record<string, unknown>[] = [];
  const now = deps.context.now();
  for (const { step, runId } of steps) {
    const job = jobOf.get(step.assetKey)!;
    let partitions = spaces.get(job);
    if (!partitions) {
      partitions = await jobPartitions(job, deps.context.assets.catalog);
      spaces.set(job, partitions);
    }
    out.push({
      dag_id: job.dagId,
      ...(runId === undefined ? {} : { dag_run_id: runId }),
      task_id: step.assetKey,
      execution_date: (partitions.window(step.partitionKey)?.start ?? now).toISOString(),
    });
  }
  return out;
}

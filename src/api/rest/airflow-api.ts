import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { AccessDeniedError, maskCredentials, TributaryError } from "../../errors/index.js";
import type { AirflowQueryStore } from "../../storage/index.js";
import type { ApiServices } from "../services.js";
import { assetJobs, requireJob, type AssetJob } from "./asset-jobs.js";
import { DAG_FIELDS, dagView, poolView } from "./airflow-views.js";
import { clearTaskInstances } from "./clear-task-instances.js";
import { listDagRuns, listTaskInstances, triggerDagRun } from "./dag-runs.js";
import { problem, RestError } from "./rest-error.js";
import { fieldsOf, pickFields } from "./rest-filters.js";
import { booleanParam, MAX_BODY_BYTES, orderOf, pageOf } from "./rest-params.js";
import { taskLog, xcomEntries } from "./task-outputs.js";

/** The API's groups the REST API reads and acts through. */
export type AirflowApiGroups = Pick<ApiServices, "assets" | "runs" | "automation" | "pools" | "now">;

/** What the REST API needs besides the API's groups. */
export interface AirflowApiServices {
  readonly queries: AirflowQueryStore;
  /** Where step logs are written; a log reference outside it is never read. */
  readonly logsDir: string;
}

/** The request context every REST handler gets. */
export interface RestDeps extends AirflowApiServices {
  readonly context: AirflowApiGroups;
}

const RUN = "/dags/:dag_id/dagRuns/:dag_run_id/taskInstances/:task_id";

/**
 * The subset of Airflow's stable REST API (v1, 2.10) that existing Airflow
 * clients use to drive Tributary, in Airflow's own JSON schema: a DAG is an
 * asset job, a DAG run a run, a task instance a step (docs/rest-api.md).
 * Mount at `/api/v1`. Errors are Airflow's problem documents.
 */
export function createAirflowApi(context: AirflowApiGroups, services: AirflowApiServices): Hono {
  const deps: RestDeps = { context, ...services };
  const app = new Hono();
  app.onError((err, c) => errorResponse(c, err));
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => c.json(problem(400, "Bad request", `body: more than the ${MAX_BODY_BYTES} bytes a request may send`), 400),
    }),
  );

  app.get("/dags", async (c) => {
    const fields = fieldsOf(c, DAG_FIELDS);
    const page = pageOf(c);
    const order = orderOf(c, ["dag_id", "-dag_id"]);
    const paused = booleanParam(c, "paused");
    booleanParam(c, "only_active"); // validated only: every DAG of the current definitions is active
    const tags = c.req.queries("tags") ?? [];
    const pattern = c.req.query("dag_id_pattern")?.toLowerCase();
    const { graph, loadedAt } = await context.assets.catalog.current();
    const jobs = assetJobs(graph);
    const pauses = await context.automation.pauses.pauseStates(jobs.flatMap((j) => j.assets.map((a) => a.key)));
    let views = jobs
      .filter((j) => (tags.length === 0 || tags.includes(j.group)) && (pattern === undefined || j.dagId.toLowerCase().includes(pattern)))
      .map((j) => ({ job: j, paused: allPaused(j, pauses) }))
      .filter((v) => paused === undefined || v.paused === paused);
    if (order === "-dag_id") views = views.reverse();
    return c.json({
      dags: views.slice(page.offset, page.offset + page.limit).map((v) => pickFields(dagView(v.job, v.paused, loadedAt), fields)),
      total_entries: views.length,
    });
  });

  app.get("/dags/:dag_id", async (c) => {
    const fields = fieldsOf(c, DAG_FIELDS);
    const { graph, loadedAt } = await context.assets.catalog.current();
    const job = requireJob(graph, c.req.param("dag_id"));
    const pauses = await context.automation.pauses.pauseStates(job.assets.map((a) => a.key));
    return c.json(pickFields(dagView(job, allPaused(job, pauses), loadedAt), fields));
  });

  app.get("/dags/:dag_id/dagRuns", (c) => listDagRuns(c, deps));
  app.post("/dags/:dag_id/dagRuns", (c) => triggerDagRun(c, deps));
  app.get("/dags/:dag_id/dagRuns/:dag_run_id/taskInstances", (c) => listTaskInstances(c, deps));
  app.post("/dags/:dag_id/clearTaskInstances", (c) => clearTaskInstances(c, deps));
  app.get(`${RUN}/xcomEntries`, (c) => xcomEntries(c, deps));
  app.get(`${RUN}/logs/:task_try_number`, (c) => taskLog(c, deps));

  app.get("/pools", async (c) => {
    const page = pageOf(c);
    orderOf(c, ["name"]);
    const pools = await context.pools.list();
    return c.json({ pools: pools.slice(page.offset, page.offset + page.limit).map(poolView), total_entries: pools.length });
  });

  app.all("*", (c) =>
    c.json(
      problem(
        404,
        "Not found",
        `${c.req.method} ${new URL(c.req.url).pathname} is not part of Tributary's /api/v1 (see docs/rest-api.md for the endpoints)`,
      ),
      404,
    ),
  );
  return app;
}

/** A DAG is paused when all its assets are. */
function allPaused(job: AssetJob, pauses: ReadonlyMap<string, { paused: boolean }>): boolean {
  return job.assets.every((a) => pauses.get(a.key)?.paused === true);
}

/**
 * RestError keeps its status; other Tributary errors (bad partition keys,
 * plans that cannot run, …) are the client's to fix: 400 with the message and
 * code. Anything else is a 500 that does not leak internals.
 */
function errorResponse(c: Context, err: Error): Response {
  if (err instanceof AccessDeniedError) return c.json(problem(403, "Forbidden", `${err.message} [${err.code}]`), 403);
  if (err instanceof RestError) return c.json(problem(err.status, err.title, err.message), err.status as 400);
  if (err instanceof TributaryError) return c.json(problem(400, "Bad request", `${err.message} [${err.code}]`), 400);
  // A token sent in the query string or quoted by an error stays out of the server's log.
  process.stderr.write(maskCredentials(`tributary: /api/v1 ${c.req.method} ${c.req.url} failed: ${err.stack ?? err.message}\n`));
  return c.json(problem(500, "Internal error", "the request failed on the server; its log has the details"), 500);
}

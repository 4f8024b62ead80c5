import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import type { RunStore, RunSummary } from "../../storage/index.js";

const ENDED: ReadonlySet<string> = new Set(["success", "failed", "canceled"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `GET /runs/:runId/events`: a run's progress as Server-Sent Events — an
 * `event: run` with the run summary (status, steps total/done/failed/active,
 * times) whenever it changes, starting with the current one, and a last
 * `event: end` once the run has ended. The summary is cheap to read (no
 * steps, no plan), so following costs one small query per poll.
 *
 * @example
 * import { Hono } from "hono";
 * // given app: Hono, services: ApiServices
 * app.route("/", runEventRoutes(services.runs.store));
 */
export function runEventRoutes(runs: Pick<RunStore, "getRunSummary">, options: { pollMs?: number } = {}): Hono {
  const app = new Hono();
  app.get("/runs/:runId/events", async (c) => {
    const runId = c.req.param("runId");
    const first = UUID.test(runId) ? await runs.getRunSummary(runId) : undefined;
    if (!first) return c.json({ error: { code: "RUN_NOT_FOUND", message: `no run has the id ${JSON.stringify(runId)}` } }, 404);
    return streamSSE(c, async (stream) => {
      let closed = false;
      stream.onAbort(() => {
        closed = true;
      });
      let last = "";
      for (let run: RunSummary | undefined = first; run && !closed; run = await runs.getRunSummary(runId)) {
        const text = JSON.stringify(run);
        if (text !== last) {
          await stream.writeSSE({ event: "run", data: text });
          last = text;
        }
        if (ENDED.has(run.status)) {
          await stream.writeSSE({ event: "end", data: JSON.stringify({ status: run.status, endedAt: run.endedAt }) });
          return;
        }
        await stream.sleep(options.pollMs ?? 300);
      }
    });
  });
  return app;
}

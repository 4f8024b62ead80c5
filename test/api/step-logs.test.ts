import { readdirSync, readlinkSync } from "node:fs";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hono } from "hono";
import { localGuard } from "../../src/access/index.js";
import { setGuard } from "../../src/api/auth/request-guard.js";
import { stepLogRoutes } from "../../src/api/logs/step-logs.js";
import { PgStepTryStateStore, WAKE_CHANNEL } from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { allEvents, sseReader, type SseEvent } from "./sse.js";
import { describePostgres } from "../support/pg.js";

// Live step logs over SSE, against real runs: a reconciler and the in-process
// executor on a real Postgres write the logs; the routes read them.
const DEFS = `
import { asset } from "tributary";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const slow = asset({ key: "logs/slow" }, async (ctx) => {
  for (let i = 1; i <= 5; i++) { ctx.log.info("line " + i); await sleep(200); }
  return 5;
});
export const long = asset({ key: "logs/long" }, async (ctx) => {
  for (let i = 1; i <= 40; i++) { ctx.log.info("tick " + i); await sleep(100); }
  return 40;
});
`;

/** The routes as a server without access control serves them: every request is the local caller. */
function asLocal(routes: Hono): Hono {
  return new Hono()
    .use("*", (c, next) => {
      setGuard(c, localGuard());
      return next();
    })
    .route("/", routes);
}

const messages = (events: SseEvent[]) => events.filter((e) => e.event === "log").map((e) => e.data.replace(/^\S+ \S+ /, ""));

describePostgres("live step logs (GET /runs/:runId/steps/:stepId/logs)", () => {
  let h: Harness;
  const closed: string[] = [];
  let app: ReturnType<typeof stepLogRoutes>;

  beforeAll(async () => {
    h = await Harness.create({ files: { "logs.ts": DEFS } });
    app = asLocal(
      stepLogRoutes(h.runs, {
        logsDir: h.logsDir,
        tries: new PgStepTryStateStore(h.db),
        pollMs: 50,
        statePollMs: 100,
        onFollowerClosed: (reason) => closed.push(reason),
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  /** Launches one asset and waits until its step has a try; returns the run and step ids. */
  async function started(key: string): Promise<{ runId: string; stepId: number }> {
    const runId = await h.launch([key]);
    const stepId = await h.until(
      async () => {
        const step = (await h.runs.getRun(runId))!.steps[0]!;
        return step.tries.length > 0 ? step.id : undefined;
      },
      15_000,
      `a try of ${key}`,
    );
    return { runId, stepId };
  }

  const tryState = async (runId: string) => (await h.runs.getRun(runId))!.steps[0]!.tries.at(-1)!.state;

  describe("a running try", () => {
    let runId: string;
    let stepId: number;
    const statesAtLines: string[] = [];
    const events: SseEvent[] = [];

    beforeAll(async () => {
      ({ runId, stepId } = await started("logs/slow"));
      const res = await app.request(`/runs/${runId}/steps/${stepId}/logs`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      const reader = sseReader(res);
      for (let e = await reader.next(); e; e = await reader.next()) {
        events.push(e);
        if (e.event === "log") statesAtLines.push(await tryState(runId));
      }
    }, 30_000);

    it("sends each line while the step runs", () => {
      expect(messages(events)).toEqual(["line 1", "line 2", "line 3", "line 4", "line 5"]);
      // The first lines arrived before the try ended: followed, not read after the fact. (The worker reports the
      // start beside the first lines, so on a busy machine the try can still read as queued then.)
      expect(["queued", "running"]).toContain(statesAtLines[0]);
    });

    it("ends with the try's final state once the log is drained", () => {
      const last = events.at(-1)!;
      expect(last.event).toBe("end");
      expect(JSON.parse(last.data)).toMatchObject({ tryNumber: 1, state: "success", error: null });
      expect(events.filter((e) => e.event === "end")).toHaveLength(1);
      expect(closed).toContain("ended");
    });

    it("streams a finished try whole and ends at once; ?try names it; Last-Event-ID resumes", async () => {
      await h.waitForRun(runId);
      const again = await allEvents(await app.request(`/runs/${runId}/steps/${stepId}/logs?try=1`));
      expect(messages(again).slice(0, 5)).toEqual(["line 1", "line 2", "line 3", "line 4", "line 5"]);
      expect(again.at(-1)!.event).toBe("end");
      const third = again.filter((e) => e.event === "log")[2]!;
      const rest = await allEvents(await app.request(`/runs/${runId}/steps/${stepId}/logs`, { headers: { "last-event-id": third.id! } }));
      expect(messages(rest).slice(0, 2)).toEqual(["line 4", "line 5"]);
      expect(messages(rest)).not.toContain("line 3");
    });

    it("returns the whole log as plain text with ?format=text or Accept: text/plain", async () => {
      const text = await app.request(`/runs/${runId}/steps/${stepId}/logs?format=text`);
      expect(text.status).toBe(200);
      expect(text.headers.get("content-type")).toContain("text/plain");
      const body = await text.text();
      for (let i = 1; i <= 5; i++) expect(body).toContain(`line ${i}\n`);
      const accepted = await app.request(`/runs/${runId}/steps/${stepId}/logs`, { headers: { accept: "text/plain" } });
      expect(await accepted.text()).toBe(body);
    });
  });

  describe("bad requests", () => {
    let runId: string;
    let stepId: number;
    beforeAll(async () => {
      ({ runId, stepId } = await started("logs/slow"));
      await h.waitForRun(runId);
    }, 30_000);

    const errorOf = async (url: string, init?: RequestInit) => {
      const res = await app.request(url, init);
      return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
    };

    it("404 RUN_NOT_FOUND for an unknown or malformed run id", async () => {
      for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-run'; drop table runs;--"]) {
        const { status, body } = await errorOf(`/runs/${encodeURIComponent(id)}/steps/${stepId}/logs`);
        expect(status).toBe(404);
        expect(body.error.code).toBe("RUN_NOT_FOUND");
        expect(body.error.message).toContain(JSON.stringify(id));
      }
    });

    it("404 STEP_NOT_FOUND for a step not in the run", async () => {
      for (const step of ["999999999", "abc"]) {
        const { status, body } = await errorOf(`/runs/${runId}/steps/${step}/logs`);
        expect(status).toBe(404);
        expect(body.error.code).toBe("STEP_NOT_FOUND");
        expect(body.error.message).toContain(runId);
        expect(body.error.message).toContain(step);
      }
    });

    it("404 TRY_NOT_FOUND for a try the step did not have; 400 BAD_TRY_NUMBER for a malformed one", async () => {
      const missing = await errorOf(`/runs/${runId}/steps/${stepId}/logs?try=7`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe("TRY_NOT_FOUND");
      expect(missing.body.error.message).toMatch(/no try 7: tries so far: 1/);
      for (const bad of ["0", "-1", "abc", "1.5"]) {
        const { status, body } = await errorOf(`/runs/${runId}/steps/${stepId}/logs?try=${bad}`);
        expect(status).toBe(400);
        expect(body.error.code).toBe("BAD_TRY_NUMBER");
        expect(body.error.message).toContain(`query.try: "${bad}"`);
      }
    });

    it("400 BAD_LOG_FORMAT for an unknown format", async () => {
      const { status, body } = await errorOf(`/runs/${runId}/steps/${stepId}/logs?format=html`);
      expect(status).toBe(400);
      expect(body.error.code).toBe("BAD_LOG_FORMAT");
      expect(body.error.message).toContain('query.format: "html"');
    });

    it("403 LOG_OUTSIDE_LOGS_DIR: a log reference outside the logs directory is never read", async () => {
      await sql`update step_tries set log_ref = ${`${h.logsDir}/../../etc/passwd`} where step_id = ${stepId}`.execute(h.db);
      for (const query of ["", "?format=text"]) {
        const { status, body } = await errorOf(`/runs/${runId}/steps/${stepId}/logs${query}`);
        expect(status).toBe(403);
        expect(body.error.code).toBe("LOG_OUTSIDE_LOGS_DIR");
        expect(body.error.message).toContain(`step ${stepId}`);
      }
    });
  });

  it("reads one step's state, never the run, and sees the end through NOTIFY rather than its (here 60 s) poll", async () => {
    const { runId, stepId } = await started("logs/slow");
    let getRuns = 0;
    let stateReads = 0;
    const tries = new PgStepTryStateStore(h.db);
    const woken = asLocal(
      stepLogRoutes(
        { getRun: (id) => (getRuns++, h.runs.getRun(id)) },
        {
          logsDir: h.logsDir,
          tries: { tryState: (step, attempt) => (stateReads++, tries.tryState(step, attempt)) },
          subscribe: (handler) => h.handle.listen(WAKE_CHANNEL, () => handler()),
          pollMs: 50,
          statePollMs: 60_000,
        },
      ),
    );
    const began = Date.now();
    const events = await allEvents(await woken.request(`/runs/${runId}/steps/${stepId}/logs`));
    expect(messages(events)).toEqual(["line 1", "line 2", "line 3", "line 4", "line 5"]);
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ tryNumber: 1, state: "success" });
    expect(Date.now() - began).toBeLessThan(15_000);
    // The request itself reads the run once (which step and try); following never does.
    expect(getRuns).toBe(1);
    // The first read, then one per wake-up that came at least 100 ms after the previous read.
    expect(stateReads).toBeGreaterThanOrEqual(2);
    expect(stateReads).toBeLessThan(30);
  });

  it("stops following when the client disconnects: no timer or open file is left", async () => {
    const { runId, stepId } = await started("logs/long");
    closed.length = 0;
    const res = await app.request(`/runs/${runId}/steps/${stepId}/logs`);
    const reader = sseReader(res);
    const first = await reader.next();
    expect(first?.event).toBe("log");
    await reader.cancel();
    await h.until(async () => closed.length > 0, 5_000, "the follower to stop");
    expect(closed).toEqual(["disconnected"]);
    // The try goes on (its start is reported in a batch, which may come after its first log line).
    await h.until(async () => (await tryState(runId)) === "running", 15_000, "the try to be reported running");
    expect(await tryState(runId)).toBe("running");
    const logFiles = readdirSync("/proc/self/fd").filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(h.logsDir);
      } catch {
        return false;
      }
    });
    // The executor itself keeps the running try's log open; nothing else does.
    expect(logFiles.length).toBeLessThanOrEqual(1);
  }, 30_000);
});

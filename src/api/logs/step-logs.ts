import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { Hono, type Context } from "hono";
import { streamSSE } from "hono/streaming";
import { guardOf } from "../auth/request-guard.js";
import { TributaryError } from "../../errors/index.js";
import type { RunDetail, RunStore, StepRecord, StepTryRecord, StepTryState, StepTryStateStore } from "../../storage/index.js";
import { followLog, type TryEnd } from "./log-follower.js";
import { tryLogFile } from "./log-file.js";

/** What the live log routes read besides the run store. */
export interface StepLogServices {
  /** Where step logs are written; a log reference outside it is never read. */
  readonly logsDir: string;
  /** A followed try's state: one small query per check, never its whole run. */
  readonly tries: StepTryStateStore;
  /**
   * Calls the handler on each notification that steps finished (the
   * reconciler's wake channel), so a follower sees its try end at once;
   * returns the unsubscribe. Without it, followers only poll.
   */
  readonly subscribe?: (handler: () => void) => Promise<() => Promise<void>>;
  /** How often a followed log file is read (default 200 ms). */
  readonly pollMs?: number;
  /** How often a followed try's state is read from the database (default 500 ms; 5 s with `subscribe`, whose notifications may be lost). */
  readonly statePollMs?: number;
  /** Told when a follower stops: its try ended, or its client went away. */
  readonly onFollowerClosed?: (reason: "ended" | "disconnected") => void;
}

/** A log request that cannot be answered, with its HTTP status and a stable code. */
export class StepLogError extends TributaryError {
  constructor(
    readonly status: 400 | 403 | 404,
    code: string,
    message: string,
  ) {
    super(code, message);
  }
}

/** Try states in which the try has not ended yet. */
const ACTIVE_TRY_STATES: ReadonlySet<string> = new Set(["pending", "scheduled", "queued", "running"]);
const ENDED_RUN_STATES: ReadonlySet<string> = new Set(["success", "failed", "canceled"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `GET /runs/:runId/steps/:stepId/logs[?try=N][&format=text]`: a try's log
 * (default: the step's latest try) as Server-Sent Events — an `event: log`
 * per line (its `id` is the byte offset after the line, so a client
 * reconnecting with `Last-Event-ID` goes on from there), following the file
 * while the try runs, then one `event: end` with the try's final state. With
 * `format=text` (or `Accept: text/plain`) the whole current log as plain text.
 * Errors are JSON `{ error: { code, message } }`.
 *
 * @example
 * import { Hono } from "hono";
 * // given app: Hono, services: ApiServices, logs: StepLogServices
 * app.route("/", stepLogRoutes(services.runs.store, logs));
 */
export function stepLogRoutes(runs: Pick<RunStore, "getRun">, services: StepLogServices): Hono {
  const app = new Hono();
  app.onError((err, c) => {
    if (err instanceof StepLogError) return c.json({ error: { code: err.code, message: err.message } }, err.status);
    throw err;
  });
  app.get("/runs/:runId/steps/:stepId/logs", async (c) => {
    const wantsText = textRequested(c);
    const { run, step, attempt } = await requireTry(runs, c);
    const file = logFile(services.logsDir, step, attempt);
    if (wantsText) return wholeLog(c, file);
    const from = lastEventOffset(c);
    return streamSSE(
      c,
      async (stream) => {
        const controller = new AbortController();
        stream.onAbort(() => controller.abort());
        let reason: "ended" | "disconnected" = "disconnected";
        try {
          const end = await followLog(file, {
            from,
            signal: controller.signal,
            pollMs: services.pollMs ?? 200,
            statePollMs: services.statePollMs ?? (services.subscribe ? 5_000 : 500),
            ended: async () => tryEnd(await services.tries.tryState(step.id, attempt.tryNumber), attempt.tryNumber),
            ...(services.subscribe ? { subscribe: services.subscribe } : {}),
            onLine: (line, next) => stream.writeSSE({ event: "log", data: line, id: String(next) }),
          });
          if (end) {
            await stream.writeSSE({ event: "end", data: JSON.stringify(end) });
            reason = "ended";
          }
        } finally {
          services.onFollowerClosed?.(reason);
        }
      },
      async (err) => {
        process.stderr.write(`tributary: following the log of step ${step.id} (run ${run.id}) failed: ${err.stack ?? err.message}\n`);
      },
    );
  });
  return app;
}

/** The run, step and try the path and `?try` name; 400/404 StepLogErrors naming what is missing. */
async function requireTry(
  runs: Pick<RunStore, "getRun">,
  c: Context,
): Promise<{ run: RunDetail; step: StepRecord; attempt: StepTryRecord }> {
  const runId = c.req.param("runId")!;
  const stepParam = c.req.param("stepId")!;
  const run = UUID.test(runId) ? await runs.getRun(runId) : undefined;
  if (!run)
    throw new StepLogError(404, "RUN_NOT_FOUND", `no run ${JSON.stringify(runId)}: list runs with \`tributary runs\` or the runs query`);
  const step = /^\d{1,15}$/.test(stepParam) ? run.steps.find((s) => s.id === Number(stepParam)) : undefined;
  if (!step) {
    throw new StepLogError(
      404,
      "STEP_NOT_FOUND",
      `run ${run.id} has no step ${JSON.stringify(stepParam)} (its steps' ids are in run(id) { steps { id } })`,
    );
  }
  // A log may echo the data itself: a viewer of the asset's team only.
  if (!(await guardOf(c).canView(step.assetKey))) {
    throw new StepLogError(403, "FORBIDDEN", `reading the logs of asset "${step.assetKey}" needs the viewer role on its team`);
  }
  const tryParam = c.req.query("try");
  if (tryParam !== undefined && !/^[1-9]\d{0,8}$/.test(tryParam)) {
    throw new StepLogError(400, "BAD_TRY_NUMBER", `query.try: ${JSON.stringify(tryParam)} is not a try number (a whole number from 1)`);
  }
  const latest = step.tries.reduce<StepTryRecord | undefined>((a, t) => (a && a.tryNumber > t.tryNumber ? a : t), undefined);
  const attempt = tryParam === undefined ? latest : step.tries.find((t) => t.tryNumber === Number(tryParam));
  if (!attempt) {
    const sofar =
      step.tries.length === 0
        ? `it has not run yet (state ${step.state})`
        : `tries so far: ${step.tries.map((t) => t.tryNumber).join(", ")}`;
    throw new StepLogError(404, "TRY_NOT_FOUND", `step ${step.id} of run ${run.id} has no try ${tryParam ?? ""}`.trimEnd() + `: ${sofar}`);
  }
  return { run, step, attempt };
}

/** The try's log file; 403 LOG_OUTSIDE_LOGS_DIR when its reference lies outside the logs directory. */
function logFile(logsDir: string, step: StepRecord, attempt: StepTryRecord): string {
  const file = tryLogFile(logsDir, step, attempt);
  if (file) return file;
  throw new StepLogError(
    403,
    "LOG_OUTSIDE_LOGS_DIR",
    `the log of try ${attempt.tryNumber} of step ${step.id} (run ${step.runId}) is not under the logs directory this server reads; ` +
      "serve the API with the same TRIBUTARY_LOGS_DIR as the workers",
  );
}

/** `?format=text` or `Accept: text/plain` (without text/event-stream); any other format is a 400. */
function textRequested(c: Context): boolean {
  const format = c.req.query("format");
  if (format !== undefined && format !== "text" && format !== "sse") {
    throw new StepLogError(400, "BAD_LOG_FORMAT", `query.format: ${JSON.stringify(format)} is not a log format (text or sse)`);
  }
  if (format !== undefined) return format === "text";
  const accept = c.req.header("accept") ?? "";
  return accept.includes("text/plain") && !accept.includes("text/event-stream");
}

/** The byte offset a reconnecting client saw last (its Last-Event-ID), else 0. */
function lastEventOffset(c: Context): number {
  const id = c.req.header("last-event-id");
  return id !== undefined && /^\d{1,15}$/.test(id) ? Number(id) : 0;
}

/** The log as it is now, streamed from the file (a try that logged nothing has an empty log). */
async function wholeLog(c: Context, file: string): Promise<Response> {
  const size = await stat(file).then(
    (s) => s.size,
    (err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return 0;
      throw err;
    },
  );
  c.header("content-type", "text/plain; charset=utf-8");
  if (size === 0) return c.body("");
  return c.body(Readable.toWeb(createReadStream(file, { start: 0, end: size - 1 })) as ReadableStream);
}

/** How the try ended, or undefined while it may still write to its log. */
function tryEnd(current: StepTryState | undefined, tryNumber: number): TryEnd | undefined {
  const attempt = current?.attempt;
  // A step that is gone, a step that moved to a later try or a run that ended: nothing writes this log any more.
  const over = !current || !attempt || current.stepTryNumber > tryNumber || ENDED_RUN_STATES.has(current.runStatus);
  if (!over && ACTIVE_TRY_STATES.has(attempt.state)) return undefined;
  return {
    tryNumber,
    state: attempt?.state ?? "removed",
    endedAt: attempt?.endedAt?.toISOString() ?? null,
    error: attempt?.error ?? null,
  };
}

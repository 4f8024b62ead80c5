import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { appendFile, mkdir } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { HttpExecutionBackend, InProcessExecutor, StoreExecutionBackend } from "../../src/executor/index.js";
import type { StepDispatch, StepResult } from "../../src/execution/index.js";
import { asset } from "../../src/index.js";
import { buildDispatch } from "../../src/execution/index.js";
import { PgTryTokenStore, type ClaimedStep } from "../../src/storage/index.js";
import { freePort } from "../cli/run-cli.js";
import { Harness, sleep } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";

// The execution API end to end: a real HTTP server (createApiApp with `execution`) over a real Postgres, the
// HttpExecutionBackend as a remote worker's backend. No reconciler runs: the tests claim steps themselves, as a
// dispatcher would, and issue each try's token.
const DEFS = `
import { asset } from "tributary";
export const up = asset({ key: "x/up" }, async (ctx) => { ctx.log.info("up says hello"); return { n: 41 }; });
export const down = asset({ key: "x/down", deps: { up } }, async (ctx, { up }) => { ctx.log.info("down read " + up.n); return up.n + 1; });
export const flaky = asset({ key: "x/flaky", retries: { max: 2, delay: 100 } }, async () => "flaky ran");
export const solo = asset({ key: "x/solo" }, async () => "solo ran");
`;

// What the worker imports (the same assets; the in-process executor takes module objects).
const up = asset({ key: "x/up" }, async (ctx) => {
  ctx.log.info("up says hello");
  return { n: 41 };
});
const down = asset({ key: "x/down", deps: { up } }, async (ctx, deps) => {
  ctx.log.info(`down read ${deps.up?.n}`);
  return (deps.up?.n ?? 0) + 1;
});
const MODULE = { up, down };

interface ErrorBody {
  error: { code: string; message: string };
}

describePostgres("execution API (/execution/v1)", () => {
  let h: Harness;
  let server: ServerType;
  let base: string;
  let tokens: PgTryTokenStore;
  let serverLogs: string;
  let workerLogs: string;

  beforeAll(async () => {
    h = await Harness.create({ files: { "x.ts": DEFS }, start: false });
    serverLogs = h.logsDir;
    workerLogs = await h.tempDir("tributary-worker-logs-");
    tokens = new PgTryTokenStore(h.db);
    const backend = new StoreExecutionBackend({ runs: h.runs, definitions: h.definitions, graphs: h.graphs, outputStore: h.outputStore });
    const app = createApiApp({
      context: apiServicesOn(h.db, { runs: h.runs }),
      ping: async () => {},
      version: "test",
      execution: { tokens, backend, graphs: h.graphs, logsDir: serverLogs, outputStore: h.outputStore },
    });
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    await once(server, "listening");
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await h?.stop();
  });

  /** Claims what is runnable (as a dispatcher would) and builds the dispatches with a token each. */
  async function claimWithTokens(ttlMs?: number): Promise<(StepDispatch & { token: string })[]> {
    const claims: ClaimedStep[] = await h.runs.claimRunnable({ now: new Date(), capacity: { local: 10 }, limit: 10 });
    const issued = await tokens.issue(claims, new Date(), ttlMs);
    const { graph } = await h.graphs.current();
    return claims.map((claim) => {
      const token = issued.find((t) => t.stepId === claim.stepId && t.tryNumber === claim.tryNumber)!.token;
      const dispatch = buildDispatch(claim, { asset: graph.require(claim.assetKey) }, { definitionsDir: h.dir, logsDir: workerLogs });
      return { ...dispatch, token };
    });
  }

  async function launchAndClaim(key: string, ttlMs?: number): Promise<{ runId: string; dispatch: StepDispatch & { token: string } }> {
    const runId = await h.launch([key]);
    const [dispatch] = (await claimWithTokens(ttlMs)).filter((d) => d.runId === runId);
    expect(dispatch, `a claimed step of ${key}`).toBeDefined();
    return { runId, dispatch: dispatch! };
  }

  const tryUrl = (d: { stepId: number; tryNumber: number }, route: string) =>
    `${base}/execution/v1/tries/${d.stepId}/${d.tryNumber}/${route}`;

  async function post(url: string, token: string | undefined, body: unknown, contentType = "application/json") {
    const res = await fetch(url, {
      method: "POST",
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": contentType },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as ErrorBody & Record<string, unknown>, headers: res.headers };
  }

  /** The step and try rows a rejected request must leave alone. */
  async function rows(stepId: number) {
    const step = await sql<{ state: string; try_number: number; heartbeat_at: Date | null; worker_id: string | null }>`
      select state, try_number, heartbeat_at, worker_id from steps where id = ${stepId}`.execute(h.db);
    const tries = await sql<{
      try_number: number;
      state: string;
      ended_at: Date | null;
      log_ref: string | null;
      token_expires_at: Date | null;
    }>`
      select try_number, state, ended_at, log_ref, token_expires_at from step_tries where step_id = ${stepId} order by try_number`.execute(
      h.db,
    );
    return { step: step.rows[0]!, tries: tries.rows };
  }

  const serverLogOf = (d: { runId: string; stepId: number; tryNumber: number }) =>
    path.join(serverLogs, d.runId, `${d.stepId}-${d.tryNumber}.log`);

  const finishBody = (outcome: unknown) => ({
    outcome,
    startedAt: new Date().toISOString(),
    endedAt: new Date().toISOString(),
    workerId: "test-worker",
  });

  it("runs a run's steps through the client: inputs, start, heartbeats, shipped logs, finish; the run succeeds", async () => {
    const results: StepResult[] = [];
    const client = new HttpExecutionBackend({ url: base, shipIntervalMs: 50 });
    const recorder = {
      loadInputs: client.loadInputs.bind(client),
      started: client.started.bind(client),
      heartbeat: client.heartbeat.bind(client),
      finished: async (r: readonly StepResult[]) => {
        results.push(...r);
        return client.finished(r);
      },
      addDynamicPartitions: client.addDynamicPartitions.bind(client),
      materialized: client.materialized.bind(client),
    };
    const executor = new InProcessExecutor(recorder, { importModule: async () => MODULE, heartbeatIntervalMs: 50 });
    try {
      const runId = await h.launch(["x/up", "x/down"]);
      const steps: StepDispatch[] = [];
      for (const key of ["x/up", "x/down"]) {
        const [dispatch] = await claimWithTokens();
        expect(dispatch?.assetKey).toBe(key);
        steps.push(dispatch!);
        executor.submit([dispatch!]);
        await h.until(async () => (await rows(dispatch!.stepId)).step.state === "success", 15_000, `${key} to finish`);
      }
      const run = await h.waitForRun(runId);
      expect(run.status).toBe("success");
      for (const [i, d] of steps.entries()) {
        const attempt = run.steps.find((s) => s.id === d.stepId)!.tries[0]!;
        expect(attempt.state).toBe("success");
        // The try's log is the server's shipped copy (what the live-log routes read), not the worker's file.
        expect(attempt.logRef).toBe(serverLogOf(d));
        const shipped = readFileSync(serverLogOf(d), "utf8");
        expect(shipped).toBe(readFileSync(d.logRef, "utf8"));
        expect(shipped).toContain(i === 0 ? "up says hello" : "down read 41");
        // …and a copy in object storage, under logs/<run>/<step>-<try>.log.
        expect(readFileSync(path.join(h.scratch, "outputs", "logs", runId, `${d.stepId}-1.log`), "utf8")).toBe(shipped);
      }
      const [output] = await h.runs.latestOutputs([{ assetKey: "x/down", partitionKey: "" }]);
      expect(output?.inline).toBe(42);
      // Lineage crossed the API: down's materialisation read up's.
      const { rows: inputs } = await sql<{ n: number }>`
        select count(*)::int as n from event_inputs ei join events e on e.id = ei.event_id
        where e.asset_key = 'x/down' and e.run_id = ${runId}`.execute(h.db);
      expect(inputs[0]!.n).toBe(1);
    } finally {
      await executor.close();
      await client.close();
    }
  });

  it("heartbeats move the token's expiry forward (sliding)", async () => {
    const { dispatch } = await launchAndClaim("x/solo", 60_000);
    const client = new HttpExecutionBackend({ url: base, shipLogs: false });
    await client.loadInputs([dispatch]);
    const before = (await rows(dispatch.stepId)).tries[0]!.token_expires_at!;
    await client.started([{ stepId: dispatch.stepId, tryNumber: 1, workerId: "w", hostname: "h", pid: 1, startedAt: new Date() }]);
    await client.heartbeat([{ stepId: dispatch.stepId, tryNumber: 1 }]);
    const after = await rows(dispatch.stepId);
    expect(after.step.state).toBe("running");
    expect(after.tries[0]!.token_expires_at!.getTime()).toBeGreaterThan(before.getTime() + 5 * 60_000);
    await client.finished([{ ...resultOf(dispatch), outcome: { kind: "success", outputJson: '"ok"', sizeBytes: 4 } }]);
    expect((await rows(dispatch.stepId)).step.state).toBe("success");
  });

  it("the per-try start and heartbeat routes still move the token's expiry", async () => {
    const { dispatch } = await launchAndClaim("x/solo", 60_000);
    const before = (await rows(dispatch.stepId)).tries[0]!.token_expires_at!;
    const started = await post(tryUrl(dispatch, "start"), dispatch.token, {
      workerId: "w",
      hostname: "h",
      pid: 1,
      startedAt: new Date().toISOString(),
    });
    expect(started.status).toBe(200);
    expect(Date.parse(String(started.body.expiresAt))).toBeGreaterThan(before.getTime() + 5 * 60_000);
    const beat = await post(tryUrl(dispatch, "heartbeat"), dispatch.token, {});
    expect(Date.parse(String(beat.body.expiresAt))).toBeGreaterThanOrEqual(Date.parse(String(started.body.expiresAt)));
    expect((await rows(dispatch.stepId)).step.state).toBe("running");
    expect((await post(tryUrl(dispatch, "finish"), dispatch.token, finishBody({ kind: "skipped", reason: "done" }))).status).toBe(200);
  });

  it("ships a running try's log while it runs, and the rest before its finish", async () => {
    const { dispatch } = await launchAndClaim("x/solo");
    const client = new HttpExecutionBackend({ url: base, shipIntervalMs: 50 });
    await client.loadInputs([dispatch]);
    await mkdir(path.dirname(dispatch.logRef), { recursive: true });
    await appendFile(dispatch.logRef, "first line\n");
    await h.until(
      async () => existsSync(serverLogOf(dispatch)) && readFileSync(serverLogOf(dispatch), "utf8") === "first line\n",
      5_000,
      "the first line on the server",
    );
    expect((await rows(dispatch.stepId)).step.state).toBe("queued");
    await appendFile(dispatch.logRef, "last line\n");
    await client.finished([{ ...resultOf(dispatch), outcome: { kind: "success", outputJson: "1", sizeBytes: 1 } }]);
    expect(readFileSync(serverLogOf(dispatch), "utf8")).toBe("first line\nlast line\n");
    expect((await rows(dispatch.stepId)).step.state).toBe("success");
  });

  describe("refused tokens write nothing", () => {
    let dispatch: StepDispatch & { token: string };
    let other: StepDispatch & { token: string };
    beforeAll(async () => {
      ({ dispatch } = await launchAndClaim("x/solo"));
      ({ dispatch: other } = await launchAndClaim("x/solo"));
    });

    it("401 for a missing, malformed or forged token", async () => {
      const before = await rows(dispatch.stepId);
      const forged = `tt_${Buffer.alloc(32, 7).toString("base64url")}`;
      for (const [token, code] of [
        [undefined, "TOKEN_MISSING"],
        ["not-a-token", "TOKEN_INVALID"],
        [forged, "TOKEN_INVALID"],
        [dispatch.token.slice(0, -1) + (dispatch.token.endsWith("A") ? "B" : "A"), "TOKEN_INVALID"],
      ] as const) {
        const res = await post(tryUrl(dispatch, "finish"), token, finishBody({ kind: "success", outputJson: "1", sizeBytes: 1 }));
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe(code);
        expect(res.headers.get("www-authenticate")).toContain("Bearer");
        const logRes = await post(tryUrl(dispatch, "logs"), token, "forged line\n", "text/plain");
        expect(logRes.status).toBe(401);
      }
      expect(await rows(dispatch.stepId)).toEqual(before);
      expect(existsSync(serverLogOf(dispatch))).toBe(false);
    });

    it("403 for a token of another step (or try), nothing written to either", async () => {
      const before = [await rows(dispatch.stepId), await rows(other.stepId)];
      const res = await post(tryUrl(dispatch, "start"), other.token, {
        workerId: "w",
        hostname: "h",
        pid: 1,
        startedAt: new Date().toISOString(),
      });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("TOKEN_SCOPE");
      expect(res.body.error.message).toContain(`step ${other.stepId}`);
      const wrongTry = await post(tryUrl({ stepId: dispatch.stepId, tryNumber: 2 }, "heartbeat"), dispatch.token, {});
      expect(wrongTry.status).toBe(403);
      const inputs = await fetch(tryUrl(other, "inputs"), { headers: { authorization: `Bearer ${dispatch.token}` } });
      expect(inputs.status).toBe(403);
      expect([await rows(dispatch.stepId), await rows(other.stepId)]).toEqual(before);
    });

    it("401 TOKEN_EXPIRED once the token's time is up", async () => {
      const { dispatch: short } = await launchAndClaim("x/solo", 1);
      await sleep(20);
      const before = await rows(short.stepId);
      const res = await post(tryUrl(short, "start"), short.token, {
        workerId: "w",
        hostname: "h",
        pid: 1,
        startedAt: new Date().toISOString(),
      });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("TOKEN_EXPIRED");
      expect(await rows(short.stepId)).toEqual(before);
      expect(before.step.state).toBe("queued");
    });

    it("tokens are issued only for queued tries and stored as hashes", async () => {
      const { rows: stored } = await sql<{
        token_hash: string;
      }>`select token_hash from step_tries where step_id = ${dispatch.stepId}`.execute(h.db);
      expect(stored[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(stored[0]!.token_hash).not.toContain(dispatch.token.slice(3));
      // up (finished in the first test) is not queued: no token for it.
      const { rows: ended } = await sql<{ step_id: string; try_number: number }>`
        select step_id, try_number from step_tries where state = 'success' limit 1`.execute(h.db);
      expect(await tokens.issue([{ stepId: Number(ended[0]!.step_id), tryNumber: ended[0]!.try_number }], new Date())).toEqual([]);
    });
  });

  it("a finished try's token is refused with 409 TRY_NOT_ACTIVE", async () => {
    const { dispatch } = await launchAndClaim("x/solo");
    const done = await post(tryUrl(dispatch, "finish"), dispatch.token, finishBody({ kind: "skipped", reason: "nothing to do" }));
    expect(done.status).toBe(200);
    const before = await rows(dispatch.stepId);
    expect(before.step.state).toBe("skipped");
    for (const route of ["heartbeat", "finish", "logs"]) {
      const res = await post(
        tryUrl(dispatch, route),
        dispatch.token,
        route === "logs" ? "late line\n" : finishBody({ kind: "success", outputJson: "1", sizeBytes: 1 }),
        route === "logs" ? "text/plain" : "application/json",
      );
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("TRY_NOT_ACTIVE");
      expect(res.body.error.message).toMatch(/^stale: the try has ended \(skipped\)/);
    }
    expect(await rows(dispatch.stepId)).toEqual(before);
  });

  it("a finish says whose fault a failure was: an infrastructure failure re-runs a step with no retries; one without a class is the user's", async () => {
    const failedBody = (extra: Record<string, unknown>) =>
      finishBody({
        kind: "failed",
        error: { name: "TributaryError", code: "LOST", message: "the worker's host went away" },
        retryable: true,
        ...extra,
      });
    const classOf = async (stepId: number) =>
      (
        await sql<{ state: string; failure_class: string | null }>`
          select s.state, t.failure_class from steps s join step_tries t on t.step_id = s.id where s.id = ${stepId}`.execute(h.db)
      ).rows;
    const lost = await launchAndClaim("x/solo");
    expect((await post(tryUrl(lost.dispatch, "finish"), lost.dispatch.token, failedBody({ failureClass: "infrastructure" }))).status).toBe(
      200,
    );
    expect(await classOf(lost.dispatch.stepId)).toEqual([{ state: "up_for_retry", failure_class: "infrastructure" }]);
    // A worker from before failure classes sends none: its failure counts as the user's, as it did then.
    const older = await launchAndClaim("x/solo");
    expect((await post(tryUrl(older.dispatch, "finish"), older.dispatch.token, failedBody({}))).status).toBe(200);
    expect(await classOf(older.dispatch.stepId)).toEqual([{ state: "failed", failure_class: "user" }]);
    // Out of the way of the tests below, which claim whatever is runnable.
    await h.runs.requestCancel(lost.runId, new Date());
  });

  it("after a zombie reassignment the old try's finish is 409 (dropped by the client) and the new try wins", async () => {
    const { runId, dispatch: first } = await launchAndClaim("x/flaky");
    const rejected: { stepId: number; tryNumber: number; code: string }[] = [];
    const notes: string[] = [];
    const oldWorker = new HttpExecutionBackend({
      url: base,
      shipLogs: false,
      onTryRejected: (s, err) => rejected.push({ ...s, code: err.code }),
      log: (m) => notes.push(m),
    });
    await oldWorker.loadInputs([first]);
    await oldWorker.started([{ stepId: first.stepId, tryNumber: 1, workerId: "old", hostname: "h", pid: 1, startedAt: new Date() }]);
    // The old worker goes quiet: housekeeping (clock moved on) finds the zombie, its retry comes due, a new try is claimed.
    const later = new Date(Date.now() + 120_000);
    expect((await h.runs.housekeeping({ now: later, zombieAfterMs: 60_000, queuedTimeoutMs: 600_000 })).zombies).toBe(1);
    await h.runs.housekeeping({ now: new Date(later.getTime() + 60_000), zombieAfterMs: 60_000, queuedTimeoutMs: 600_000 });
    const [second] = (await claimWithTokens()).filter((d) => d.stepId === first.stepId);
    expect(second?.tryNumber).toBe(2);

    const stale = await post(
      tryUrl(first, "finish"),
      first.token,
      finishBody({ kind: "success", outputJson: '"from the zombie"', sizeBytes: 17 }),
    );
    expect(stale.status).toBe(409);
    expect(stale.body.error.message).toContain("stale: the step is at try 2");
    // Through the client: dropped with a note, not thrown.
    await expect(
      oldWorker.finished([{ ...resultOf(first), outcome: { kind: "success", outputJson: '"from the zombie"', sizeBytes: 17 } }]),
    ).resolves.toEqual([]);
    expect(rejected).toEqual([{ stepId: first.stepId, tryNumber: 1, code: "TRY_NOT_ACTIVE" }]);
    expect(notes.join("\n")).toContain("stale: the step is at try 2");

    const won = await post(
      tryUrl(second!, "finish"),
      second!.token,
      finishBody({ kind: "success", outputJson: '"from try 2"', sizeBytes: 12 }),
    );
    expect(won.status).toBe(200);
    const run = await h.waitForRun(runId);
    expect(run.status).toBe("success");
    const tries = run.steps[0]!.tries.map((t) => ({ tryNumber: t.tryNumber, state: t.state }));
    expect(tries).toEqual([
      { tryNumber: 1, state: "failed" },
      { tryNumber: 2, state: "success" },
    ]);
    const [output] = await h.runs.latestOutputs([{ assetKey: "x/flaky", partitionKey: "" }]);
    expect(output?.inline).toBe("from try 2");
  });

  describe("batch routes (/batch/…)", () => {
    const batchUrl = (route: string) => `${base}/execution/v1/batch/${route}`;
    const ref = (d: { stepId: number; tryNumber: number }) => ({ stepId: d.stepId, tryNumber: d.tryNumber });
    const startReport = () => ({ workerId: "batch-worker", hostname: "h", pid: 7, startedAt: new Date().toISOString() });
    interface BatchAnswer {
      results: {
        stepId: number;
        tryNumber: number;
        status: number;
        error?: { code: string; message: string };
        value?: Record<string, unknown>;
      }[];
    }

    it("checks every item's token: good items are applied, forged / other-step / stale / expired ones answered with their status and left alone", async () => {
      const { dispatch: good } = await launchAndClaim("x/solo", 60_000);
      const { dispatch: good2 } = await launchAndClaim("x/solo", 60_000);
      const { dispatch: forgedTarget } = await launchAndClaim("x/solo");
      const { dispatch: scopeTarget } = await launchAndClaim("x/solo");
      const { dispatch: ended } = await launchAndClaim("x/solo");
      expect((await post(tryUrl(ended, "finish"), ended.token, finishBody({ kind: "skipped", reason: "done" }))).status).toBe(200);
      const { dispatch: expired } = await launchAndClaim("x/solo", 1);
      await sleep(20);
      const forged = `tt_${Buffer.alloc(32, 9).toString("base64url")}`;
      const bad = [forgedTarget, scopeTarget, ended, expired];
      const before = await Promise.all(bad.map((d) => rows(d.stepId)));
      const goodExpiry = (await rows(good.stepId)).tries[0]!.token_expires_at!;
      const items = [
        { ...ref(good), token: good.token },
        { ...ref(forgedTarget), token: forged },
        { ...ref(scopeTarget), token: good2.token },
        { ...ref(ended), token: ended.token },
        { ...ref(expired), token: expired.token },
        { ...ref(good2), token: good2.token },
      ];
      const expected = [
        [200, undefined],
        [401, "TOKEN_INVALID"],
        [403, "TOKEN_SCOPE"],
        [409, "TRY_NOT_ACTIVE"],
        [401, "TOKEN_EXPIRED"],
        [200, undefined],
      ];
      const statuses = (answer: BatchAnswer) => answer.results.map((r) => [r.status, r.error?.code]);

      const started = await post(batchUrl("start"), undefined, { tries: items.map((i) => ({ ...i, ...startReport() })) });
      expect(started.status).toBe(200);
      const startAnswer = started.body as unknown as BatchAnswer;
      expect(startAnswer.results.map(ref)).toEqual(items.map(ref));
      expect(statuses(startAnswer)).toEqual(expected);
      expect(startAnswer.results[2]!.error!.message).toContain(`step ${good2.stepId}`);
      for (const d of [good, good2]) expect((await rows(d.stepId)).step).toMatchObject({ state: "running", worker_id: "batch-worker" });
      // Sliding expiry for the accepted items, in the answer and in the database.
      expect(Date.parse(String(startAnswer.results[0]!.value!.expiresAt))).toBeGreaterThan(goodExpiry.getTime());
      expect((await rows(good.stepId)).tries[0]!.token_expires_at!.getTime()).toBeGreaterThan(goodExpiry.getTime());

      const beat = await post(batchUrl("heartbeat"), undefined, { tries: items });
      expect(statuses(beat.body as unknown as BatchAnswer)).toEqual(expected);

      const finished = await post(batchUrl("finish"), undefined, {
        tries: items.map((i, n) => ({ ...i, ...finishBody({ kind: "success", outputJson: String(n), sizeBytes: 1 }) })),
      });
      const finishAnswer = finished.body as unknown as BatchAnswer;
      expect(statuses(finishAnswer)).toEqual(expected);
      expect(finishAnswer.results[0]!.value).toEqual({ recorded: true, logObject: null });
      for (const d of [good, good2]) expect((await rows(d.stepId)).step.state).toBe("success");
      expect(await Promise.all(bad.map((d) => rows(d.stepId)))).toEqual(before);
    });

    it("answers inputs per item, in request order", async () => {
      const { dispatch } = await launchAndClaim("x/solo");
      const forged = `tt_${Buffer.alloc(32, 3).toString("base64url")}`;
      const res = await post(batchUrl("inputs"), undefined, {
        tries: [
          { ...ref({ stepId: dispatch.stepId + 1000, tryNumber: 1 }), token: forged },
          { ...ref(dispatch), token: dispatch.token },
        ],
      });
      expect(res.status).toBe(200);
      expect((res.body as unknown as BatchAnswer).results).toEqual([
        expect.objectContaining({ stepId: dispatch.stepId + 1000, status: 401, error: expect.objectContaining({ code: "TOKEN_INVALID" }) }),
        { stepId: dispatch.stepId, tryNumber: 1, status: 200, value: { ok: true, inputs: {} } },
      ]);
    });

    it("400 for more than 1 000 items, naming the first beyond; for a try given twice; for a bad item field", async () => {
      const tries = Array.from({ length: 1001 }, (_, i) => ({ stepId: i + 1, tryNumber: 1, token: "tt_x" }));
      const over = await post(batchUrl("heartbeat"), undefined, { tries });
      expect(over.status).toBe(400);
      expect(over.body.error.code).toBe("BAD_REQUEST");
      expect(over.body.error.message).toMatch(/^body\.tries\.1000: a batch carries at most 1000 tries/);
      // 1 000 is fine (each item refused on its own).
      const full = await post(batchUrl("heartbeat"), undefined, { tries: tries.slice(0, 1000) });
      expect(full.status).toBe(200);
      expect((full.body as unknown as BatchAnswer).results.every((r) => r.status === 401)).toBe(true);

      const twice = await post(batchUrl("heartbeat"), undefined, { tries: [tries[0], tries[1], tries[0]] });
      expect(twice.status).toBe(400);
      expect(twice.body.error.message).toMatch(/^body\.tries\.2: try 1 of step 1 is already body\.tries\.0/);
      const field = await post(batchUrl("finish"), undefined, { tries: [{ ...tries[0], ...finishBody({ kind: "bogus" }) }] });
      expect(field.status).toBe(400);
      expect(field.body.error.message.startsWith("body.tries.0.outcome.kind:"), field.body.error.message).toBe(true);
    });

    it("the client reports N tries in O(1) calls: one batch call per report kind", async () => {
      const calls: string[] = [];
      const counting: typeof fetch = (input, init) => {
        calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
        return fetch(input, init);
      };
      const client = new HttpExecutionBackend({ url: base, shipLogs: false, fetch: counting });
      const dispatches: (StepDispatch & { token: string })[] = [];
      for (let i = 0; i < 6; i++) dispatches.push((await launchAndClaim("x/solo")).dispatch);
      const inputs = await client.loadInputs(dispatches);
      expect([...inputs.values()].every((v) => v.ok)).toBe(true);
      await client.started(dispatches.map((d) => ({ ...ref(d), workerId: "w", hostname: "h", pid: 1, startedAt: new Date() })));
      await client.heartbeat(dispatches.map(ref));
      await client.finished(dispatches.map((d) => ({ ...resultOf(d), outcome: { kind: "success", outputJson: '"ok"', sizeBytes: 4 } })));
      expect(calls).toEqual(["inputs", "start", "heartbeat", "finish"].map((r) => `POST /execution/v1/batch/${r}`));
      for (const d of dispatches) expect((await rows(d.stepId)).step.state).toBe("success");
    });
  });

  describe("bad bodies: 400 naming the field, nothing written", () => {
    let dispatch: StepDispatch & { token: string };
    beforeAll(async () => {
      ({ dispatch } = await launchAndClaim("x/solo"));
    });

    it.each([
      ["start", { hostname: "h", pid: 1, startedAt: new Date().toISOString() }, "body.workerId"],
      ["start", { workerId: "w", hostname: "h", pid: -1, startedAt: new Date().toISOString() }, "body.pid"],
      ["start", { workerId: "w", hostname: "h", pid: 1, startedAt: "yesterday" }, "body.startedAt"],
      ["finish", finishBody({ kind: "bogus" }), "body.outcome.kind"],
      ["finish", finishBody({ kind: "success", outputJson: "{not json", sizeBytes: 9 }), "body.outcome.outputJson"],
      ["finish", finishBody({ kind: "failed", error: { name: "E", message: "m" }, retryable: false }), "body.outcome.error.code"],
      [
        "finish",
        finishBody({ kind: "failed", error: { name: "E", code: "C", message: "m" }, retryable: true, failureClass: "ours" }),
        "body.outcome.failureClass",
      ],
      ["finish", finishBody({ kind: "expanded", count: 3, itemsJson: "[1,2]", labels: null }), "body.outcome.count"],
      ["finish", { ...finishBody({ kind: "skipped", reason: "r" }), endedAt: 12 }, "body.endedAt"],
      [
        "defer",
        { ...finishBody(null), trigger: { kind: "file", args: {}, timeoutMs: -5, pollIntervalMs: 10, softFail: false } },
        "body.trigger.timeoutMs",
      ],
      ["dynamic-partitions", { name: "regions", keys: [""] }, "body.keys.0"],
    ])("POST %s → %s", async (route, body, field) => {
      const before = await rows(dispatch.stepId);
      const res = await post(tryUrl(dispatch, route), dispatch.token, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(res.body.error.message.startsWith(`${field}:`), res.body.error.message).toBe(true);
      expect(await rows(dispatch.stepId)).toEqual(before);
    });

    it("400 for a body that is not JSON", async () => {
      const notJson = await post(tryUrl(dispatch, "finish"), dispatch.token, "{", "application/json");
      expect(notJson.status).toBe(400);
      expect(notJson.body.error.message).toMatch(/^body: not valid JSON/);
    });

    it("a retried log chunk (same offset) is appended once", async () => {
      const chunk = "line one\nline two\n";
      for (let i = 0; i < 2; i++)
        expect((await post(`${tryUrl(dispatch, "logs")}?offset=0`, dispatch.token, chunk, "text/plain")).status).toBe(200);
      const next = await post(
        `${tryUrl(dispatch, "logs")}?offset=${chunk.length - 9}`,
        dispatch.token,
        "line two\nline three\n",
        "text/plain",
      );
      expect(next.body).toEqual({ size: chunk.length + "line three\n".length });
      expect(readFileSync(serverLogOf(dispatch), "utf8")).toBe("line one\nline two\nline three\n");
    });

    // Last: the server answers before reading the whole body and drops that connection.
    it("413 for a log chunk over 1 MB", async () => {
      const before = readFileSync(serverLogOf(dispatch), "utf8");
      const big = await post(tryUrl(dispatch, "logs"), dispatch.token, "x".repeat(1024 * 1024 + 1), "text/plain");
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe("BODY_TOO_LARGE");
      expect(readFileSync(serverLogOf(dispatch), "utf8")).toBe(before);
    });
  });
});

// The client's batching against a fake server: no database needed.
describe("HttpExecutionBackend batch calls", () => {
  const dispatchOf = (stepId: number): StepDispatch => ({
    stepId,
    runId: "r",
    tryNumber: 1,
    assetKey: "a",
    partitionKey: "",
    mapIndex: -1,
    partition: { window: null, dimensions: null },
    file: "a.ts",
    exportName: "a",
    timeoutMs: null,
    logRef: "/nonexistent/a.log",
    token: `tt_${stepId}`,
  });
  const tries = (n: number) => Array.from({ length: n }, (_, i) => ({ stepId: i + 1, tryNumber: 1 }));
  const clientWith = (fake: typeof fetch, rejected: number[] = []) =>
    new HttpExecutionBackend({
      url: "http://fake",
      shipLogs: false,
      fetch: fake,
      backoffMs: 1,
      onTryRejected: (s) => rejected.push(s.stepId),
      log: () => {},
    });
  const answerAll = (body: unknown, status: (stepId: number) => number = () => 200) => {
    const { tries } = JSON.parse(String(body)) as { tries: { stepId: number; tryNumber: number }[] };
    return Response.json({
      results: tries.map((t) => ({
        ...t,
        status: status(t.stepId),
        ...(status(t.stepId) === 200 ? { value: {} } : { error: { code: "TRY_NOT_ACTIVE", message: "stale" } }),
      })),
    });
  };

  it("splits a report into calls of at most 1 000 tries; a refused item is dropped, the rest go on", async () => {
    const sizes: number[] = [];
    const rejected: number[] = [];
    const client = clientWith(async (_url, init) => {
      sizes.push((JSON.parse(String(init!.body)) as { tries: unknown[] }).tries.length);
      return answerAll(init!.body, (stepId) => (stepId === 7 ? 409 : 200));
    }, rejected);
    for (const t of tries(2500)) client.register(dispatchOf(t.stepId));
    await client.heartbeat(tries(2500));
    expect(sizes.sort((a, b) => a - b)).toEqual([500, 1000, 1000]);
    expect(rejected).toEqual([7]);
    // A try given twice goes out once.
    sizes.length = 0;
    await client.heartbeat([...tries(3), ...tries(3)]);
    expect(sizes).toEqual([3]);
  });

  it("input reads asked for one by one while 4 are in flight go out together", async () => {
    const sizes: number[] = [];
    const client = clientWith(async (_url, init) => {
      const { tries } = JSON.parse(String(init!.body)) as { tries: { stepId: number; tryNumber: number }[] };
      sizes.push(tries.length);
      await sleep(20);
      return Response.json({ results: tries.map((t) => ({ ...t, status: 200, value: { ok: true, inputs: { id: t.stepId } } })) });
    });
    const answers = await Promise.all(tries(10).map((t) => client.loadInputs([dispatchOf(t.stepId)])));
    expect(sizes).toEqual([1, 1, 1, 1, 6]);
    expect(answers.map((a, i) => a.get(i + 1))).toEqual(tries(10).map((t) => ({ ok: true, inputs: { id: t.stepId } })));
  });

  it("retries a batch call the server fails (5xx), then succeeds", async () => {
    let calls = 0;
    const client = clientWith(async (_url, init) =>
      ++calls === 1 ? Response.json({ error: { code: "INTERNAL", message: "down" } }, { status: 503 }) : answerAll(init!.body),
    );
    for (const t of tries(3)) client.register(dispatchOf(t.stepId));
    await client.heartbeat(tries(3));
    expect(calls).toBe(2);
  });

  it("a batch the server refuses as a whole (400) is sent per try, so only the bad report fails", async () => {
    const paths: string[] = [];
    const client = clientWith(async (url) => {
      const path = new URL(String(url)).pathname;
      paths.push(path);
      if (path.includes("/batch/") || path.includes("/tries/2/"))
        return Response.json({ error: { code: "BAD_REQUEST", message: "body.pid: bad" } }, { status: 400 });
      return Response.json({ expiresAt: null });
    });
    for (const t of tries(3)) client.register(dispatchOf(t.stepId));
    const err = await client.heartbeat(tries(3)).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, message: expect.stringContaining("body.pid") });
    expect(paths).toEqual(["/execution/v1/batch/heartbeat", ...[1, 2, 3].map((id) => `/execution/v1/tries/${id}/1/heartbeat`)]);
  });

  it("an execution API that cannot be reached fails the inputs as an infrastructure failure, naming the server", async () => {
    const port = freePort(); // nothing listens there
    const client = new HttpExecutionBackend({ url: `http://127.0.0.1:${port}`, shipLogs: false, attempts: 2, backoffMs: 1, log: () => {} });
    const inputs = await client.loadInputs([dispatchOf(1)]);
    expect(inputs.get(1)).toMatchObject({
      ok: false,
      failureClass: "infrastructure",
      error: { code: "EXECUTION_API_UNREACHABLE", message: expect.stringContaining(`127.0.0.1:${port}`) },
    });
    // A server from before failure classes answers an inputs failure without one: the step's, as it was then.
    const older = clientWith(async (_url, init) => {
      const { tries } = JSON.parse(String(init!.body)) as { tries: { stepId: number; tryNumber: number }[] };
      const error = { name: "TributaryError", code: "UPSTREAM_NOT_MATERIALIZED", message: "x/up has not been materialised" };
      return Response.json({ results: tries.map((t) => ({ ...t, status: 200, value: { ok: false, error } })) });
    });
    expect((await older.loadInputs([dispatchOf(2)])).get(2)).toMatchObject({ ok: false, failureClass: "user" });
  });

  it("falls back to the per-try routes against a server without the batch routes", async () => {
    const paths: string[] = [];
    const client = clientWith(async (url) => {
      const path = new URL(String(url)).pathname;
      paths.push(path);
      if (path.includes("/batch/")) return Response.json({ error: { code: "NOT_FOUND", message: "no such route" } }, { status: 404 });
      return Response.json({ expiresAt: null });
    });
    for (const t of tries(2)) client.register(dispatchOf(t.stepId));
    await client.heartbeat(tries(2));
    await client.heartbeat(tries(2));
    expect(paths).toEqual(["/execution/v1/batch/heartbeat", ...[1, 2, 1, 2].map((id) => `/execution/v1/tries/${id}/1/heartbeat`)]);
  });
});

function resultOf(d: StepDispatch): Omit<StepResult, "outcome"> {
  return {
    stepId: d.stepId,
    runId: d.runId,
    tryNumber: d.tryNumber,
    startedAt: new Date(),
    endedAt: new Date(),
    workerId: "w",
    logRef: d.logRef,
  };
}

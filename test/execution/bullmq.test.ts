import type { ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { BullmqExecutor } from "../../src/executor/bullmq-executor.js";
import { Reconciler } from "../../src/reconciler/index.js";
import { PgTryTokenStore } from "../../src/storage/index.js";
import { CLI_COMMAND_BUDGET_MS, cliBudget, freePort, runCli, startCli } from "../cli/run-cli.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-services.js";

// The BullMQ fleet end to end: a reconciler enqueues steps of `executor: "bullmq"` assets into Redis with a token
// per try, and real `tributary worker` processes take and run them, reporting through the execution API of a real
// `tributary api` process: the workers have no database credentials. Redis is a private redis-server per test (it
// is stopped, restarted and emptied here), Postgres the test database.
const DEFS = `
import { appendFileSync } from "node:fs";
import { allPartitions, asset, dep, staticPartitions } from "tributary";
const keys = staticPartitions(Array.from({ length: 20 }, (_, i) => "k" + String(i).padStart(2, "0")));
const ran = (what) => { if (process.env.TRIBUTARY_TEST_RAN) appendFileSync(process.env.TRIBUTARY_TEST_RAN, what + "\\n"); };
export const fleet = asset({ key: "q/fleet", partitions: keys, executor: "bullmq" }, async (ctx) => {
  ran(ctx.partition.key);
  await new Promise((r) => setTimeout(r, Number(process.env.TRIBUTARY_TEST_STEP_MS ?? 100)));
  return { key: ctx.partition.key, pid: process.pid };
});
export const total = asset({ key: "q/total", executor: "bullmq", deps: { fleet: dep(fleet, allPartitions()) } },
  async (_ctx, { fleet }) => fleet.length);
export const gpu = asset({ key: "q/gpu", executor: "bullmq", queue: "gpu" }, async () => "on a gpu");
export const slow = asset({ key: "q/slow", executor: "bullmq", retries: { max: 2, delay: 0 } }, async (ctx) => {
  ran("slow try " + ctx.tryNumber);
  await new Promise((r) => setTimeout(r, 2500));
  return ctx.tryNumber;
});
// No retries: only a failure of its own code would fail it.
export const once = asset({ key: "q/once", executor: "bullmq" }, async (ctx) => {
  ran("once try " + ctx.tryNumber);
  await new Promise((r) => setTimeout(r, 2500));
  return ctx.tryNumber;
});
`;

describePostgres("the BullMQ executor and tributary worker", () => {
  let h: Harness | undefined;
  let redis: PrivateRedis | undefined;
  let reconciler: Reconciler | undefined;
  let executor: BullmqExecutor | undefined;
  const workers: (ChildProcess & { output: () => string })[] = [];
  let api: { url: string; proc: ChildProcess & { output: () => string } } | undefined;

  afterEach(async () => {
    for (const w of [...workers.splice(0), ...(api ? [api.proc] : [])]) {
      if (w.exitCode === null && w.signalCode === null) {
        w.kill("SIGKILL");
        await new Promise((r) => w.once("exit", r));
      }
    }
    await reconciler?.stop();
    await executor?.close();
    await h?.stop();
    await redis?.stop();
    reconciler = executor = h = redis = api = undefined;
  });

  async function setUp(options: { zombieAfterMs?: number; queuedTimeoutMs?: number } = {}): Promise<{ ranFile: string }> {
    redis = await startPrivateRedis();
    h = await Harness.create({ files: { "fleet.ts": DEFS }, nodes: 0 });
    const tokens = new PgTryTokenStore(h.db);
    executor = new BullmqExecutor({
      redisUrl: redis.url,
      definitionsDir: h.dir,
      logsDir: h.logsDir,
      onError: () => undefined,
      issueTokens: async (steps) =>
        new Map(
          (
            await tokens.issue(
              steps.map((s) => ({ stepId: s.stepId, tryNumber: s.tryNumber })),
              new Date(),
              600_000,
            )
          ).map((t) => [t.stepId, t.token]),
        ),
    });
    reconciler = new Reconciler({
      store: h.runs,
      database: h.handle,
      graphs: h.graphs,
      executors: { bullmq: executor },
      definitionsDir: h.dir,
      logsDir: h.logsDir,
      pollIntervalMs: 100,
      housekeepingIntervalMs: 200,
      zombieAfterMs: options.zombieAfterMs ?? 60_000,
      queuedTimeoutMs: options.queuedTimeoutMs ?? 60_000,
    });
    await reconciler.start();
    // The API the workers report to (its own logs directory: shipped logs land there).
    const port = freePort();
    const proc = startCli(
      ["api", "--insecure-no-auth", "--port", String(port), "--definitions", h.dir, "--data-dir", path.join(h.scratch, "api")],
      {
        env: { DATABASE_URL: h.url },
      },
    );
    api = { url: `http://127.0.0.1:${port}`, proc };
    const deadline = Date.now() + CLI_COMMAND_BUDGET_MS;
    while (
      !(await fetch(`${api.url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`tributary api did not start:\n${proc.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return { ranFile: path.join(h.scratch, "ran.txt") };
  }

  /** A real `tributary worker` process, reporting through the API (no DATABASE_URL). */
  async function startWorker(args: string[] = [], env: Record<string, string> = {}): Promise<ChildProcess & { output: () => string }> {
    const w = startCli(
      [
        "worker",
        "--url",
        api!.url,
        "--definitions",
        h!.dir,
        "--data-dir",
        path.join(h!.scratch, `worker-${workers.length}`),
        "--processes",
        "1",
        ...args,
      ],
      { env: { REDIS_URL: redis!.url, ...env } },
    );
    workers.push(w);
    const deadline = Date.now() + CLI_COMMAND_BUDGET_MS;
    while (!w.output().includes("takes steps from queue")) {
      if (w.exitCode !== null) throw new Error(`tributary worker exited with ${w.exitCode}:\n${w.output()}`);
      if (Date.now() > deadline) throw new Error(`tributary worker did not start:\n${w.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return w;
  }

  const ranLines = async (file: string): Promise<string[]> =>
    (await readFile(file, "utf8").catch(() => "")).split("\n").filter((l) => l !== "");

  it(
    "runs a run's steps on two workers through Redis, every step once",
    async () => {
      const { ranFile } = await setUp();
      const env = { TRIBUTARY_TEST_RAN: ranFile };
      await startWorker([], env);
      await startWorker([], env);
      const run = await h!.waitForRun(await h!.launch(["q/fleet", "q/total"], { all: true }), 60_000);
      expect(run.status, JSON.stringify(run.steps.filter((s) => s.state === "failed").map((s) => s.error))).toBe("success");
      expect((await ranLines(ranFile)).sort()).toEqual(Array.from({ length: 20 }, (_, i) => "k" + String(i).padStart(2, "0")));
      const workerIds = new Set(run.steps.flatMap((s) => s.tries.map((t) => t.workerId)));
      expect(workerIds.size, JSON.stringify([...workerIds])).toBe(2);
      const total = await sql<{ v: unknown }>`select o.inline_value as v from outputs o join steps s on s.id = o.step_id
                                            where s.run_id = ${run.id} and s.asset_key = 'q/total'`.execute(h!.db);
      expect(total.rows[0]!.v).toBe(20);
      expect(await executor!.queueDepths()).toEqual(expect.arrayContaining([{ queue: "default", waiting: 0, active: 0 }]));
      // Every try had its own token (stored hashed), and its log was shipped to the API's logs directory.
      const tokens = await sql<{ n: number; hashed: number }>`
      select count(*)::int as n, count(*) filter (where t.token_hash ~ '^[0-9a-f]{64}$')::int as hashed
      from step_tries t where t.run_id = ${run.id}`.execute(h!.db);
      expect(tokens.rows[0]).toEqual({ n: 21, hashed: 21 });
      for (const w of workers) expect(w.output()).toContain("reporting through the execution API");
    },
    cliBudget(3),
  );

  it(
    "routes a step to the workers of its queue only",
    async () => {
      await setUp();
      await startWorker();
      const runId = await h!.launch(["q/gpu"]);
      await new Promise((r) => setTimeout(r, 1_500));
      const waiting = (await h!.runs.getRun(runId))!;
      expect(waiting.steps[0]!.state).toBe("queued");
      expect((await executor!.queueDepths()).find((d) => d.queue === "gpu")).toEqual({ queue: "gpu", waiting: 1, active: 0 });
      await startWorker(["--queues", "gpu"]);
      const run = await h!.waitForRun(runId, 60_000);
      expect(run.status).toBe("success");
    },
    cliBudget(3),
  );

  it(
    "SIGTERM: the worker takes no more steps and lets the running one finish",
    async () => {
      const { ranFile } = await setUp();
      const w = await startWorker(["--grace", "20s"], { TRIBUTARY_TEST_RAN: ranFile });
      const runId = await h!.launch(["q/slow"]);
      await h!.until(async () => (await ranLines(ranFile)).includes("slow try 1"), 30_000, "the slow step to start");
      w.kill("SIGTERM");
      const run = await h!.waitForRun(runId, 60_000);
      expect(run.status).toBe("success");
      expect(run.steps[0]!.tryNumber).toBe(1);
      await new Promise((r) => (w.exitCode === null ? w.once("exit", r) : r(null)));
      expect(w.exitCode, w.output()).toBe(0);
      expect(w.output()).toContain("worker stopped");
    },
    cliBudget(2),
  );

  it(
    "SIGKILL: the dead worker's step is noticed by its missing heartbeat and run again on another, though it has no retries",
    async () => {
      const { ranFile } = await setUp({ zombieAfterMs: 7_000 }); // over the workers' 5 s heartbeat
      const a = await startWorker([], { TRIBUTARY_TEST_RAN: ranFile });
      const runId = await h!.launch(["q/once"]);
      await h!.until(async () => (await ranLines(ranFile)).includes("once try 1"), 30_000, "the step to start");
      a.kill("SIGKILL");
      await startWorker([], { TRIBUTARY_TEST_RAN: ranFile });
      const run = await h!.waitForRun(runId, 60_000);
      // The worker's death is not the step's failure: it ran again on the infrastructure budget, its retries (0) untouched.
      expect(run.status, JSON.stringify(run.steps[0]!.tries)).toBe("success");
      expect(run.steps[0]!.tries.map((t) => [t.tryNumber, t.state, t.failureClass])).toEqual([
        [1, "failed", "infrastructure"],
        [2, "success", null],
      ]);
      expect((run.steps[0]!.tries[0]!.error as { code: string }).code).toBe("STEP_ZOMBIE");
      // The code of try 1 had run (at least once, here partly) before its worker died.
      expect((await ranLines(ranFile)).filter((l) => l.startsWith("once try"))).toEqual(["once try 1", "once try 2"]);

      // What people see: `tributary run` through the API server lists the lost try as an infrastructure failure.
      const shown = await runCli(["run", runId, "--url", api!.url], { env: { DATABASE_URL: "" } });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/^run \S+: success/);
      expect(shown.stdout).toContain("failed tries:");
      expect(shown.stdout).toMatch(/q\/once\s+-\s+1\s+infrastructure\s+\[STEP_ZOMBIE\] no heartbeat from worker/);
    },
    cliBudget(4),
  );

  it(
    "a worker runs the definitions version a step was planned with: a new asset, an edited body, without a restart",
    async () => {
      await setUp();
      await startWorker();
      const outputOf = async (runId: string): Promise<unknown> => {
        const run = await h!.waitForRun(runId, 60_000);
        expect(run.status, JSON.stringify(run.steps.map((s) => s.error))).toBe("success");
        const { rows } = await sql<{ v: unknown }>`select o.inline_value as v from outputs o where o.step_id = ${run.steps[0]!.id}`.execute(
          h!.db,
        );
        return rows[0]!.v;
      };
      // The worker's process imports fleet.ts as it is now.
      expect(await outputOf(await h!.launch(["q/fleet"], { partition: "k00" }))).toMatchObject({ key: "k00" });
      const echo = (body: string) =>
        `${DEFS}\nexport const echo = asset({ key: "q/echo", executor: "bullmq" }, async () => ${JSON.stringify(body)});\n`;
      await h!.redefine({ "fleet.ts": echo("one") });
      expect(await outputOf(await h!.launch(["q/echo"]))).toBe("one");
      await h!.redefine({ "fleet.ts": echo("two") });
      expect(await outputOf(await h!.launch(["q/echo"]))).toBe("two");
    },
    cliBudget(3),
  );

  it(
    "Redis stopped mid-run (and back empty): the lost jobs are handed out again at once, no step lost or run twice",
    async () => {
      // The queued timeout is far off: what brings the lost steps back is the reconciler asking Redis for their jobs.
      const { ranFile } = await setUp({ queuedTimeoutMs: 600_000 });
      const env = { TRIBUTARY_TEST_RAN: ranFile, TRIBUTARY_TEST_STEP_MS: "400" };
      await startWorker([], env);
      const runId = await h!.launch(["q/fleet", "q/total"], { all: true });
      await h!.until(async () => (await ranLines(ranFile)).length >= 3, 30_000, "a few steps to run");
      await redis!.stop();
      // The outage itself: long enough for the reconciler and the worker to notice it.
      await new Promise((r) => setTimeout(r, 5_000));
      await redis!.start();
      const run = await h!.waitForRun(runId, 120_000);
      const lostCodes = run.steps.flatMap((s) => s.tries.map((t) => (t.error as { code?: string } | null)?.code)).filter(Boolean);
      expect(lostCodes.length, JSON.stringify(lostCodes)).toBeGreaterThan(0);
      expect(new Set(lostCodes)).toEqual(new Set(["STEP_DISPATCH_LOST"]));
      expect(run.status, await h!.describe([runId])).toBe("success");
      const ran = await ranLines(ranFile);
      // Every partition ran exactly once: a step whose job Redis lost ran as a later try, never twice.
      expect(ran.sort()).toEqual(Array.from({ length: 20 }, (_, i) => "k" + String(i).padStart(2, "0")));
      const successes = run.steps.filter((s) => s.assetKey === "q/fleet").map((s) => s.tries.filter((t) => t.state === "success").length);
      expect(successes.every((n) => n === 1)).toBe(true);
    },
    cliBudget(3),
  );
});

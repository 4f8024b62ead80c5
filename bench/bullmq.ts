// W1–W3 (see bench/execution.ts) through the BullMQ fleet: one reconciler
// enqueues into Redis, N real `tributary worker` processes (1 worker process
// each) run the steps. Prints one JSON object.
//
//   npx tsx bench/bullmq.ts [--workers 1,2,4] [--only w1,w2,w3] [--report api|database]
//
// --report api (default): workers report through the execution API of a
// `tributary api` process started here, holding no database credentials
// (each try has its own token); --report database: workers write results to
// Postgres themselves (DATABASE_URL). The difference is the API's cost.
import path from "node:path";
import { parseArgs } from "node:util";
import { loadBullmq } from "../src/executor/index.js";
import { PgTryTokenStore } from "../src/storage/index.js";
import { runToEnd, storeBenchGraph } from "./_definitions.js";
import { answers, printResult, startTributary, stopProcess, unlimitedDefaultPool, withScope, type StartedProcess } from "./_setup.js";

const { values: args } = parseArgs({
  options: {
    workers: { type: "string", default: "1,2,4" },
    only: { type: "string", default: "w1,w2,w3" },
    report: { type: "string", default: "api" },
  },
});
const redisUrl = process.env.REDIS_URL || "redis://127.0.0.1:6379";

const DEFINITIONS = `
import { allPartitions, asset, dep, staticPartitions } from "tributary";
const keys = (n: number, p: string) => Array.from({ length: n }, (_, i) => p + String(i).padStart(5, "0"));
const chains = staticPartitions(keys(2000, "c"));
const executor = "bullmq";
export const a = asset({ key: "w1/a", partitions: chains, executor }, () => 1);
export const b = asset({ key: "w1/b", partitions: chains, deps: { a }, executor }, (_ctx, { a }) => a + 1);
export const c = asset({ key: "w1/c", partitions: chains, deps: { b }, executor }, (_ctx, { b }) => b + 1);
export const root = asset({ key: "w2/root", executor }, () => 1);
export const child = asset({ key: "w2/child", partitions: staticPartitions(keys(500, "k")), deps: { root }, executor }, () => 1);
export const join = asset({ key: "w2/join", deps: { all: dep(child, allPartitions()) }, executor }, (_ctx, { all }) => all.length);
export const burst = asset({ key: "w3/burst", partitions: staticPartitions(keys(5000, "b")), executor }, () => null);
`;

async function main(): Promise<void> {
  const results: Record<string, unknown> = { bench: "bullmq", report: args.report, database: "postgres (local)", redis: redisUrl };
  for (const n of args.workers.split(",").map(Number)) results[`workers${n}`] = await withWorkers(n);
  printResult(results);
}

async function withWorkers(count: number): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  await withScope(async (scope) => {
    const { db, url, handle } = await scope.database(`bullmq_${count}`);
    const dir = await scope.tempDir("defs");
    const logsDir = await scope.tempDir("logs");
    const stores = await storeBenchGraph(db, dir, DEFINITIONS, 60_000);
    await unlimitedDefaultPool(db);
    const tokens = new PgTryTokenStore(db);
    // A Redis prefix of this configuration's own: jobs of an earlier one (or another deployment) never mix in.
    const prefix = `tributary-bench-${process.pid}-${count}`;
    const executor = new (await loadBullmq()).BullmqExecutor({
      redisUrl,
      prefix,
      definitionsDir: dir,
      logsDir,
      maxWaiting: 2_000,
      ...(args.report === "api"
        ? {
            issueTokens: async (steps: readonly { stepId: number; tryNumber: number }[]) =>
              new Map(
                (
                  await tokens.issue(
                    steps.map((s) => ({ stepId: s.stepId, tryNumber: s.tryNumber })),
                    new Date(),
                  )
                ).map((t) => [t.stepId, t.token]),
              ),
          }
        : {}),
    });
    await scope.reconciler({
      store: stores.runs,
      database: handle,
      graphs: stores.graphs,
      executors: { bullmq: executor },
      definitionsDir: dir,
      logsDir,
      pollIntervalMs: 500,
      claimBatch: 512,
    });
    let apiUrl: string | undefined;
    if (args.report === "api") {
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      apiUrl = `http://127.0.0.1:${port}`;
      const api = await startProcess(
        ["api", "--insecure-no-auth", "--port", String(port), "--definitions", dir, "--data-dir", path.join(logsDir, "api")],
        { DATABASE_URL: url },
        answers(`${apiUrl}/readyz`),
      );
      scope.onClose(() => stopProcess(api.child));
    }
    const workers: StartedProcess[] = [];
    scope.onClose(() => Promise.all(workers.map((w) => stopProcess(w.child))));
    const takesSteps = (output: string) => output.includes("takes steps from queue");
    for (let i = 0; i < count; i++) {
      const common = [
        "worker",
        "--definitions",
        dir,
        "--data-dir",
        path.join(logsDir, `w${i}`),
        "--processes",
        "1",
        "--concurrency",
        "256",
      ];
      workers.push(
        apiUrl
          ? await startProcess(
              [...common, "--url", apiUrl],
              { REDIS_URL: redisUrl, DATABASE_URL: "", TRIBUTARY_REDIS_PREFIX: prefix },
              takesSteps,
            )
          : await startProcess(common, { REDIS_URL: redisUrl, DATABASE_URL: url, TRIBUTARY_REDIS_PREFIX: prefix }, takesSteps),
      );
    }
    await runToEnd(stores, ["w2/root"], undefined); // warm-up: each worker imports the file
    if (args.only.includes("w1")) {
      const t = await runToEnd(stores, ["w1/a", "w1/b", "w1/c"], { all: true });
      out.w1 = { steps: t.steps, wallMs: Math.round(t.ms), stepsPerSec: Math.round((t.steps / t.ms) * 1000) };
    }
    if (args.only.includes("w2")) {
      const t = await runToEnd(stores, ["w2/root", "w2/child", "w2/join"], { all: true });
      out.w2 = { steps: t.steps, wallMs: Math.round(t.ms) };
    }
    if (args.only.includes("w3")) {
      const t = await runToEnd(stores, ["w3/burst"], { all: true });
      out.w3 = { steps: t.steps, wallMs: Math.round(t.ms), stepsPerSec: Math.round((t.steps / t.ms) * 1000) };
    }
  });
  return out;
}

/** A `tributary …` child process, once `ready` (BENCH_VERBOSE=1: its stderr echoed). */
function startProcess(
  argv: string[],
  env: Record<string, string>,
  ready: (output: string) => boolean | Promise<boolean>,
): Promise<StartedProcess> {
  return startTributary(argv, { env, ready, echo: Boolean(process.env.BENCH_VERBOSE) });
}

await main();

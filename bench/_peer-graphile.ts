// graphile-worker's side of the execution workloads (bench/_workloads.ts), in this process on a scratch database of
// the same Postgres server, with its batched dequeue (local queue) and batched job completion. A job is the only
// unit it knows, so the workloads are written the way its users write them: an upstream job enqueues its
// downstream job itself (W1), and W2's join is enqueued by the child that brings a counter row to zero.
// A workload ends when its last job's code has run and no job is left in the queue table (completions flushed).
import { Logger, makeWorkerUtils, run, type Runner, type Task } from "graphile-worker";
import { sleep, type BenchScope } from "./_setup.js";
import { PeerWorkloads, W2_CHILDREN, type PeerBench } from "./_workloads.js";

/** How the peer is tuned: worker concurrency, local queue size, completion batching delay (ms). */
export const GRAPHILE_SETTINGS = { concurrentJobs: 32, localQueueSize: 500, completeJobBatchDelay: 0 } as const;

const silent = new Logger(() => () => {});

export async function startGraphileBench(scope: BenchScope): Promise<PeerBench> {
  const url = await scope.scratchDatabase("peer_graphile");
  const workloads = new PeerWorkloads({
    enqueue: async (identifier, payloads) => {
      await utils.addJobs(payloads.map((payload) => ({ identifier, payload })));
    },
    settled: async () => {
      for (;;) {
        const { rows } = await pool.query<{ left: boolean }>("select exists (select 1 from graphile_worker._private_jobs) as left");
        if (!rows[0]!.left) return;
        await sleep(5);
      }
    },
    armFanIn: async (children) => {
      await pool.query("delete from bench_fan_in");
      await pool.query("insert into bench_fan_in values ($1)", [children]);
    },
  });
  const ledger = () => workloads.ledger;
  const partition = (payload: unknown) => (payload as { p: string }).p;
  const taskList: Record<string, Task> = {
    a: async (payload, helpers) => {
      ledger().upstreamEnded(`b/${partition(payload)}`);
      await helpers.addJob("b", { p: partition(payload) });
    },
    b: async (payload, helpers) => {
      ledger().started(`b/${partition(payload)}`);
      ledger().upstreamEnded(`c/${partition(payload)}`);
      await helpers.addJob("c", { p: partition(payload) });
    },
    c: (payload) => ledger().started(`c/${partition(payload)}`),
    root: async (_payload, helpers) => {
      await helpers.addJobs(Array.from({ length: W2_CHILDREN }, (_, i) => ({ identifier: "child", payload: { i } })));
    },
    child: async (_payload, helpers) => {
      const { rows } = await helpers.query<{ remaining: number }>("update bench_fan_in set remaining = remaining - 1 returning remaining");
      if (rows[0]!.remaining === 0) await helpers.addJob("join", {});
    },
    join: () => {},
    burst: () => {},
  };
  // A job counts as ended when its code has returned (its completion is then batched).
  const counted = Object.fromEntries(
    Object.entries(taskList).map(([name, task]): [string, Task] => [
      name,
      async (payload, helpers) => {
        await task(payload, helpers);
        ledger().ended(name);
      },
    ]),
  );
  // The runner's and the utilities' connections come from a pool of ours, ended when the scope closes: graphile-worker
  // leaves a pool it made itself open after stopping, and dropping the database then kills its idle connections.
  const { Pool } = (await import("pg")).default;
  const workerPool = new Pool({ connectionString: url, max: GRAPHILE_SETTINGS.concurrentJobs + 2 });
  workerPool.on("error", () => undefined);
  workerPool.on("connect", (client) => client.on("error", () => undefined));
  scope.onClose(() => workerPool.end());
  const runner: Runner = await run({
    taskList: counted,
    pgPool: workerPool,
    preset: {
      worker: {
        concurrentJobs: GRAPHILE_SETTINGS.concurrentJobs,
        pollInterval: 500,
        logger: silent,
        localQueue: { size: GRAPHILE_SETTINGS.localQueueSize },
        completeJobBatchDelay: GRAPHILE_SETTINGS.completeJobBatchDelay,
        failJobBatchDelay: GRAPHILE_SETTINGS.completeJobBatchDelay,
      },
    },
    noHandleSignals: true,
  });
  scope.onClose(() => runner.stop());
  const utils = await makeWorkerUtils({ pgPool: workerPool, logger: silent });
  scope.onClose(() => utils.release());
  const pool = new Pool({ connectionString: url, max: 2 });
  scope.onClose(() => pool.end());
  await pool.query("create table bench_fan_in (remaining int not null)");

  await workloads.warmUp();
  return workloads;
}

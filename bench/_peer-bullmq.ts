// BullMQ's side of the execution workloads (bench/_workloads.ts): a plain queue and a worker in this process on the
// local Redis, under a prefix of their own that is removed afterwards. Jobs are removed on completion; as for
// graphile-worker, an upstream job enqueues its downstream job itself (W1) and W2's join is enqueued by the child
// that brings a Redis counter to zero. A workload ends when its last job's completion is recorded in Redis.
import { Queue, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { BenchScope } from "./_setup.js";
import type { PeerBench } from "./_peer-graphile.js";
import { chainKey, StepLedger, throughput, W1_CHAINS, W2_CHILDREN, W3_STEPS } from "./_workloads.js";

/** How the peer is tuned: the worker's concurrency. */
export const BULLMQ_SETTINGS = { concurrency: 256 } as const;

export async function startBullmqBench(scope: BenchScope, redisUrl: string): Promise<PeerBench> {
  const prefix = `tributary-bench-peer-${process.pid}`;
  const connection = () => new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queueConnection = connection();
  const counter = connection();
  const queue = new Queue("peer", { connection: queueConnection, prefix, defaultJobOptions: { removeOnComplete: true } });
  scope.onClose(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    queueConnection.disconnect();
    counter.disconnect();
  });
  let ledger = new StepLedger();
  const fanInKey = `${prefix}:fan-in`;
  const handlers: Record<string, (job: Job) => Promise<void> | void> = {
    a: async (job) => {
      ledger.upstreamEnded(`b/${job.data.p}`);
      await queue.add("b", { p: job.data.p });
    },
    b: async (job) => {
      ledger.started(`b/${job.data.p}`);
      ledger.upstreamEnded(`c/${job.data.p}`);
      await queue.add("c", { p: job.data.p });
    },
    c: (job) => ledger.started(`c/${job.data.p}`),
    root: async () => {
      await queue.addBulk(Array.from({ length: W2_CHILDREN }, (_, i) => ({ name: "child", data: { i } })));
    },
    child: async () => {
      if ((await counter.decr(fanInKey)) === 0) await queue.add("join", {});
    },
    join: () => {},
    burst: () => {},
  };
  const workerConnection = connection();
  const worker = new Worker("peer", async (job) => handlers[job.name]!(job), {
    connection: workerConnection,
    prefix,
    concurrency: BULLMQ_SETTINGS.concurrency,
  });
  worker.on("completed", (job) => ledger.ended(job.name));
  scope.onClose(async () => {
    await worker.close();
    workerConnection.disconnect();
  });
  await worker.waitUntilReady();

  /** Enqueues `jobs` named `name`, waits for `count` completions of `kind`; the time from enqueueing. */
  const timed = async (name: string, jobs: readonly object[], kind: string, count: number) => {
    ledger = new StepLedger();
    const done = ledger.until(kind, count);
    const started = performance.now();
    await queue.addBulk(jobs.map((data) => ({ name, data })));
    await done;
    return performance.now() - started;
  };
  await timed("burst", [{}], "burst", 1);
  return {
    async w1() {
      const ms = await timed(
        "a",
        Array.from({ length: W1_CHAINS }, (_, i) => ({ p: chainKey(i) })),
        "c",
        W1_CHAINS,
      );
      return { ...throughput(3 * W1_CHAINS, ms), handoffMs: ledger.handoff() };
    },
    async w2() {
      await counter.set(fanInKey, W2_CHILDREN);
      const ms = await timed("root", [{}], "join", 1);
      return { steps: W2_CHILDREN + 2, wallMs: Math.round(ms) };
    },
    async w3() {
      return throughput(
        W3_STEPS,
        await timed(
          "burst",
          Array.from({ length: W3_STEPS }, () => ({})),
          "burst",
          W3_STEPS,
        ),
      );
    },
  };
}

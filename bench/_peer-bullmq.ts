// BullMQ's side of the execution workloads (bench/_workloads.ts): a plain queue and a worker in this process on the
// local Redis, under a prefix of their own that is removed afterwards. Jobs are removed on completion; as for
// graphile-worker, an upstream job enqueues its downstream job itself (W1) and W2's join is enqueued by the child
// that brings a Redis counter to zero. A workload ends when its last job's completion is recorded in Redis.
import { Queue, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { BenchScope } from "./_setup.js";
import { PeerWorkloads, W2_CHILDREN, type PeerBench } from "./_workloads.js";

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
  const fanInKey = `${prefix}:fan-in`;
  const workloads = new PeerWorkloads({
    enqueue: async (name, payloads) => {
      await queue.addBulk(payloads.map((data) => ({ name, data })));
    },
    settled: async () => {},
    armFanIn: async (children) => {
      await counter.set(fanInKey, children);
    },
  });
  const ledger = () => workloads.ledger;
  const handlers: Record<string, (job: Job) => Promise<void> | void> = {
    a: async (job) => {
      ledger().upstreamEnded(`b/${job.data.p}`);
      await queue.add("b", { p: job.data.p });
    },
    b: async (job) => {
      ledger().started(`b/${job.data.p}`);
      ledger().upstreamEnded(`c/${job.data.p}`);
      await queue.add("c", { p: job.data.p });
    },
    c: (job) => ledger().started(`c/${job.data.p}`),
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
  worker.on("completed", (job) => ledger().ended(job.name));
  scope.onClose(async () => {
    await worker.close();
    workerConnection.disconnect();
  });
  await worker.waitUntilReady();

  await workloads.warmUp();
  return workloads;
}

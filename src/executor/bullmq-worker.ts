import { Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import {
  BULLMQ_PREFIX,
  bullQueueName,
  CANCEL_CHANNEL,
  DEFAULT_QUEUE_NAME,
  localDispatch,
  redisConnection,
  type CancelMessage,
  type StepJob,
} from "./bullmq-queues.js";
import { LocalExecutor, type LocalExecutorOptions } from "./local-executor.js";
import type { ExecutionBackend, StepDispatch, StepResult } from "../execution/index.js";
import { reportOutages, type DependencyHealth } from "../health/index.js";

export interface BullmqStepWorkerOptions extends Omit<LocalExecutorOptions, "onError" | "definitionsDir"> {
  readonly redisUrl: string;
  /** Key prefix in Redis (default "tributary"); the reconcilers' must be the same. */
  readonly prefix?: string;
  /** The asset queues to take steps from (`queue` in asset configs); default ["default"]. */
  readonly queues?: readonly string[];
  /** Where results go: the execution API (HttpExecutionBackend) on a worker without database credentials. */
  readonly backend: ExecutionBackend;
  /** Where this worker writes step logs (jobs name them relative to it). */
  readonly logsDir: string;
  /** Where this worker finds the definitions files (jobs name them relative to it). */
  readonly definitionsDir: string;
  /** A name for this worker in BullMQ and in logs. */
  readonly name?: string;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
  /** Told when Redis cannot be reached and when it answers again (logged once per outage, not per attempt). */
  readonly health?: DependencyHealth;
}

/**
 * `tributary worker`: takes steps from BullMQ queues and runs them in its own
 * pool of worker processes (a LocalExecutor: definitions imported once per
 * process, the same timeout, memory and heartbeat rules as on one machine),
 * reporting through the backend. It takes a job only when a slot is free, so
 * the backlog stays in Redis for other workers.
 *
 * BullMQ only carries the steps: a job is done once its step's result is
 * reported, and a stalled job is never re-delivered (`maxStalledCount: 0`) —
 * a worker that dies is noticed by its missing heartbeats in Postgres, which
 * hands the step out again as a new try. Stopping (SIGTERM) takes no new
 * jobs, lets running steps finish within the grace period, and hands back
 * (or fails, as retryable) whatever is still running after it.
 */
export class BullmqStepWorker {
  private readonly executor: LocalExecutor;
  private readonly workers: Worker<StepJob>[] = [];
  private readonly connections: Redis[] = [];
  private subscriber: Redis | undefined;
  /** Each submitted try, until its result is reported. */
  private readonly running = new Map<string, () => void>();
  /** Tries whose result is being reported now: they have ended. */
  private readonly reporting = new Set<string>();
  private readonly slotWaiters: (() => void)[] = [];
  private used = 0;
  /** The executor's slots: a job is taken only when one is free. */
  private capacity = 0;
  private readonly log: (level: "info" | "warn" | "error", message: string) => void;
  private stopping: Promise<void> | undefined;

  constructor(private readonly options: BullmqStepWorkerOptions) {
    this.log = options.log ?? ((level, message) => (level === "info" ? undefined : console.error(`tributary worker: ${message}`)));
    const inner = options.backend;
    // Results resolve the jobs they belong to; a remote worker gets no follow-up steps (they go through Redis).
    const backend: ExecutionBackend = {
      loadInputs: (steps) => inner.loadInputs(steps),
      started: (events) => inner.started(events),
      heartbeat: (steps) => inner.heartbeat(steps),
      addDynamicPartitions: (name, keys) => inner.addDynamicPartitions(name, keys),
      materialized: (assetKey, partitionKey) => inner.materialized(assetKey, partitionKey),
      finished: async (results: readonly StepResult[]) => {
        for (const r of results) this.reporting.add(`${r.stepId}:${r.tryNumber}`);
        try {
          await inner.finished(results, { freeSlots: 0 });
        } finally {
          for (const r of results) {
            this.reporting.delete(`${r.stepId}:${r.tryNumber}`);
            this.settle(`${r.stepId}:${r.tryNumber}`);
          }
        }
        return [];
      },
    };
    const {
      redisUrl: _url,
      prefix: _prefix,
      queues: _queues,
      backend: _backend,
      name: _name,
      log: _log,
      health: _health,
      logsDir: _logs,
      ...local
    } = options;
    this.executor = new LocalExecutor(backend, {
      ...local,
      onError: (err, what) => this.log("error", `${what}: ${err instanceof Error ? err.message : String(err)}`),
    });
  }

  /** Starts the worker processes, then takes jobs from the queues; resolves once it listens. */
  async start(): Promise<void> {
    await this.executor.ready();
    this.capacity = this.executor.freeSlots();
    const queues = this.options.queues?.length ? this.options.queues : [DEFAULT_QUEUE_NAME];
    for (const queue of queues) {
      const connection = redisConnection(this.options.redisUrl, "worker");
      connection.on("error", this.redisError(`redis (queue ${queue})`));
      connection.on("ready", () => this.options.health?.recovered("redis"));
      this.connections.push(connection);
      const worker = new Worker<StepJob>(bullQueueName(queue), (job) => this.process(job), {
        connection,
        prefix: this.options.prefix ?? BULLMQ_PREFIX,
        concurrency: this.capacity,
        maxStalledCount: 0,
        ...(this.options.name ? { name: this.options.name } : {}),
      });
      worker.on("error", this.redisError(`queue ${queue}`));
      this.workers.push(worker);
    }
    const subscriber = redisConnection(this.options.redisUrl, "subscriber");
    subscriber.on("error", this.redisError("redis (cancel channel)"));
    subscriber.on("message", (_channel: string, text: string) => {
      try {
        const message = JSON.parse(text) as CancelMessage;
        this.executor.cancel(message.stepIds, message.reason);
      } catch {
        // Not ours.
      }
    });
    await subscriber.subscribe(CANCEL_CHANNEL);
    this.subscriber = subscriber;
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /** A lost Redis goes to the health view (said once per outage); other errors are logged. */
  private redisError(what: string): (err: Error) => void {
    return reportOutages(this.options.health, "redis", (err) => this.log("warn", `${what}: ${(err as Error).message}`));
  }

  /** Aborts these steps (the server refused their tries: reassigned, ended, or their token expired). */
  cancel(stepIds: readonly number[], reason: string): void {
    this.executor.cancel(stepIds, reason);
  }

  /**
   * Aborts try `tryNumber` of a step if it is still running here. A refusal about a try that already ended (its
   * result was being reported), or about an older try of a step that runs here again as a newer try (it was handed
   * out again while this worker could not reach the server), stops nothing: the newer try is not the one refused.
   */
  cancelTry(stepId: number, tryNumber: number, reason: string): void {
    const key = `${stepId}:${tryNumber}`;
    if (!this.running.has(key) || this.reporting.has(key)) return;
    for (const other of this.running.keys()) if (other !== key && other.startsWith(`${stepId}:`)) return;
    this.executor.cancel([stepId], reason);
  }

  /** Steps this worker is running now. */
  get active(): number {
    return this.used;
  }

  /**
   * Graceful stop: no new jobs; running steps get `graceMs` to finish (their results are reported), then the
   * rest are stopped and reported (unstarted ones handed back, started ones failed as retryable).
   */
  stop(graceMs = 30_000): Promise<void> {
    this.stopping ??= (async () => {
      const deadline = Date.now() + graceMs;
      // Stop fetching; wait for the jobs in hand (their steps' results) up to the grace period.
      const closing = Promise.all(this.workers.map((w) => w.close()));
      await Promise.race([closing, new Promise((r) => setTimeout(r, Math.max(0, graceMs)).unref())]);
      await this.executor.close({ graceMs: Math.max(0, deadline - Date.now()) });
      for (const settle of this.running.values()) settle();
      await Promise.race([closing, new Promise((r) => setTimeout(r, 2_000).unref())]);
      await this.subscriber?.quit().catch(() => undefined);
      for (const c of this.connections) c.disconnect();
    })();
    return this.stopping;
  }

  private async process(job: Job<StepJob>): Promise<void> {
    const dispatch: StepDispatch = localDispatch(job.data.dispatch, {
      definitionsDir: this.options.definitionsDir,
      logsDir: this.options.logsDir,
    });
    await this.slot();
    try {
      const key = `${dispatch.stepId}:${dispatch.tryNumber}`;
      const done = new Promise<void>((resolve) => this.running.set(key, resolve));
      this.executor.submit([dispatch]);
      await done;
    } finally {
      this.release();
    }
  }

  private settle(key: string): void {
    const resolve = this.running.get(key);
    if (!resolve) return;
    this.running.delete(key);
    resolve();
  }

  private async slot(): Promise<void> {
    if (this.used < this.capacity) {
      this.used++;
      return;
    }
    await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    this.used++;
  }

  private release(): void {
    this.used--;
    this.slotWaiters.shift()?.();
  }
}

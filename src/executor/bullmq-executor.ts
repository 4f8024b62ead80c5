import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import {
  BULLMQ_PREFIX,
  bullQueueName,
  CANCEL_CHANNEL,
  DEFAULT_QUEUE_NAME,
  portableDispatch,
  redisConnection,
  stepJobId,
  type CancelMessage,
  type StepJob,
} from "./bullmq-queues.js";
import type { Executor, StepDispatch } from "../execution/index.js";
import type { HandedOutTry } from "../storage/index.js";

export interface BullmqExecutorOptions {
  readonly redisUrl: string;
  /** Key prefix in Redis (default "tributary"); workers must use the same. */
  readonly prefix?: string;
  /** The reconciler's directories: jobs carry paths relative to them (see portableDispatch). */
  readonly definitionsDir: string;
  readonly logsDir: string;
  /**
   * Most steps waiting in Redis (all queues together) before the executor takes no more: the rest stay
   * `scheduled` in Postgres, where priorities and pools still order them. Default 1 000.
   */
  readonly maxWaiting?: number;
  /** How often the waiting counts are read back from Redis. Default 1 000 ms. */
  readonly depthRefreshMs?: number;
  /** Gives each try its execution-API token before it is enqueued (workers hold no database credentials). */
  readonly issueTokens?: (steps: readonly StepDispatch[]) => Promise<ReadonlyMap<number, string>>;
  /** Failed enqueues (the steps stay queued in Postgres and are handed out again) and Redis errors. */
  readonly onError?: (err: unknown, what: string) => void;
}

/** Waiting steps per queue, for the queue-depth metric an autoscaler reads. */
export interface QueueDepth {
  readonly queue: string;
  readonly waiting: number;
  readonly active: number;
}

/**
 * The reconciler's side of the BullMQ fleet: claimed steps go into Redis
 * queues (one per asset `queue`, in bulk), and any number of `tributary
 * worker` processes take them from there. It runs nothing itself.
 *
 * Capacity is the room left under `maxWaiting`, so a fleet that falls behind
 * leaves the backlog in Postgres rather than in Redis. A failed enqueue
 * (Redis down) is reported and otherwise ignored: the steps are `queued` in
 * Postgres, and the reconciler asks `lostTries` every few seconds which
 * queued tries Redis does not hold, handing them out again once Redis is
 * back — Postgres stays the source of truth.
 */
export class BullmqExecutor implements Executor {
  readonly kind = "bullmq";
  private readonly connection: Redis;
  private readonly queues = new Map<string, Queue<StepJob>>();
  private readonly maxWaiting: number;
  private readonly onError: (err: unknown, what: string) => void;
  /** Waiting jobs as last read, plus those submitted since. */
  private waiting = 0;
  private readonly depthTimer: NodeJS.Timeout;
  private refreshing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: BullmqExecutorOptions) {
    this.maxWaiting = options.maxWaiting ?? 1_000;
    this.onError = options.onError ?? ((err, what) => console.error(`tributary bullmq executor: ${what}:`, err));
    this.connection = redisConnection(options.redisUrl, "producer");
    this.connection.on("error", (err) => this.onError(err, "redis"));
    this.queueOf(DEFAULT_QUEUE_NAME);
    this.depthTimer = setInterval(() => void this.refreshDepth(), options.depthRefreshMs ?? 1_000);
    this.depthTimer.unref();
    void this.refreshDepth();
  }

  freeSlots(): number {
    return this.closed ? 0 : Math.max(0, this.maxWaiting - this.waiting);
  }

  submit(steps: readonly StepDispatch[]): void {
    if (steps.length === 0) return;
    this.waiting += steps.length;
    void this.enqueue(steps).catch((err: unknown) =>
      this.onError(err, `enqueuing ${steps.length} step(s) (they stay queued in Postgres and are handed out again)`),
    );
  }

  cancel(stepIds: readonly number[], reason: string): void {
    if (stepIds.length === 0) return;
    const message: CancelMessage = { stepIds: [...stepIds], reason };
    void this.connection.publish(CANCEL_CHANNEL, JSON.stringify(message)).catch((err: unknown) => this.onError(err, "publishing a cancel"));
  }

  /** Waiting and active jobs per queue (the queues this executor has enqueued into). */
  async queueDepths(): Promise<QueueDepth[]> {
    const out: QueueDepth[] = [];
    for (const [queue, q] of this.queues) {
      const counts = await q.getJobCounts("waiting", "prioritized", "active");
      out.push({ queue, waiting: (counts["waiting"] ?? 0) + (counts["prioritized"] ?? 0), active: counts["active"] ?? 0 });
    }
    return out;
  }

  /**
   * The tries whose job Redis no longer has, or whose job ended without its step starting (a Redis restarted
   * empty, a flushed or evicted key): read in one round trip per call, from the job hashes BullMQ keeps.
   */
  async lostTries(tries: readonly HandedOutTry[]): Promise<readonly HandedOutTry[]> {
    if (tries.length === 0) return [];
    const prefix = this.options.prefix ?? BULLMQ_PREFIX;
    const pipeline = this.connection.pipeline();
    for (const t of tries) pipeline.hmget(`${prefix}:${bullQueueName(t.queue)}:${stepJobId(t)}`, "timestamp", "finishedOn");
    const answers = (await pipeline.exec()) ?? [];
    return tries.filter((_t, i) => {
      const [err, fields] = answers[i] ?? [new Error("no answer"), null];
      if (err) throw err;
      const [createdAt, finishedOn] = fields as (string | null)[];
      return createdAt === null || finishedOn !== null;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.depthTimer);
    await this.refreshing?.catch(() => undefined);
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.connection.disconnect();
  }

  private async enqueue(steps: readonly StepDispatch[]): Promise<void> {
    const tokens = this.options.issueTokens ? await this.options.issueTokens(steps) : new Map<number, string>();
    const byQueue = new Map<string, StepDispatch[]>();
    const dirs = { definitionsDir: this.options.definitionsDir, logsDir: this.options.logsDir };
    for (const d of steps) {
      const token = tokens.get(d.stepId);
      const dispatch = portableDispatch(token ? { ...d, token } : d, dirs);
      const name = d.queue ?? DEFAULT_QUEUE_NAME;
      const list = byQueue.get(name);
      if (list) list.push(dispatch);
      else byQueue.set(name, [dispatch]);
    }
    await Promise.all(
      [...byQueue].map(([name, dispatches]) =>
        this.queueOf(name).addBulk(
          dispatches.map((dispatch) => ({
            name: dispatch.assetKey,
            data: { dispatch },
            // One job per try: a retried enqueue adds nothing; finished jobs leave Redis at once.
            opts: { jobId: stepJobId(dispatch), removeOnComplete: true, removeOnFail: { count: 1_000 } },
          })),
        ),
      ),
    );
  }

  private queueOf(name: string): Queue<StepJob> {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue<StepJob>(bullQueueName(name), { connection: this.connection, prefix: this.options.prefix ?? BULLMQ_PREFIX });
      q.on("error", (err) => this.onError(err, `queue ${name}`));
      this.queues.set(name, q);
    }
    return q;
  }

  private refreshDepth(): Promise<void> {
    if (this.refreshing || this.closed) return this.refreshing ?? Promise.resolve();
    this.refreshing = (async () => {
      try {
        const depths = await this.queueDepths();
        this.waiting = depths.reduce((n, d) => n + d.waiting, 0);
      } catch {
        // Redis unreachable: keep the last count; enqueues fail and are reported on their own.
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }
}

import os from "node:os";
import { randomUUID } from "node:crypto";
import { dispatchClaims, type Executor } from "../execution/index.js";
import { backoffDelayMs, isConnectionError, RECONNECT_BACKOFF, type DependencyHealth } from "../health/index.js";
import { WAKE_CHANNEL, type DatabaseHandle, type GraphCache, type HandedOutTry, type RunStore } from "../storage/index.js";

export interface ReconcilerOptions {
  readonly store: RunStore;
  readonly database: Pick<DatabaseHandle, "listen">;
  readonly graphs: GraphCache;
  /** Executors by kind (`local`, `bullmq`…): steps naming another kind wait for a reconciler that has it. */
  readonly executors: Readonly<Record<string, Executor>>;
  readonly definitionsDir: string;
  readonly logsDir: string;
  readonly clock?: () => Date;
  readonly id?: string;
  /** Fallback wake-up when no notification arrives (default 1 s). */
  readonly pollIntervalMs?: number;
  /** Retries due, zombies, stuck queued steps, cancellations: at most this often (default 1 s). */
  readonly housekeepingIntervalMs?: number;
  readonly zombieAfterMs?: number;
  readonly queuedTimeoutMs?: number;
  /** How often tries handed out and not started are checked against executors that can lose them (default 5 s). */
  readonly lostTriesIntervalMs?: number;
  /**
   * Executor kinds that start their steps in this process (local, transactional). Their claimed steps are held by
   * this reconciler until they start, and it heartbeats (`component_heartbeats`) so that, if it dies, another
   * reconciler hands them out again after `holderDeadAfterMs` instead of the queued timeout.
   */
  readonly holds?: readonly string[];
  /**
   * A reconciler silent this long is presumed dead and the steps it holds are handed out again (default 30 s). It
   * heartbeats every 5 s, or every quarter of this when that is shorter.
   */
  readonly holderDeadAfterMs?: number;
  /** Most steps claimed per transaction (default 512). */
  readonly claimBatch?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
  /**
   * Where a pass that could not reach the database is reported (logged once per outage, not per pass); without it,
   * every failed pass is logged.
   */
  readonly health?: DependencyHealth;
  /**
   * Work done at the start of every pass, in order, before steps are handed
   * out: automation, backfills, alerts. Each decides for itself whether it
   * has anything to do; one that throws is logged and does not stop the others.
   */
  readonly tasks?: readonly ReconcilerTask[];
  /** Called after every pass, failed ones included (metrics: pass duration, steps handed out). */
  readonly onPass?: (durationMs: number, stats: ReconcilerPassStats) => void;
}

/** What one reconciler pass did (see ReconcilerOptions.onPass). */
export interface ReconcilerPassStats {
  /** Steps claimed and handed to executors (or failed for a removed asset). */
  readonly dispatched: number;
  /** The pass threw (it is retried by the loop). */
  readonly failed: boolean;
  /** How long each task of the pass took, in the order they ran (a task that threw has `failed`). */
  readonly tasks?: readonly { readonly name: string; readonly durationMs: number; readonly failed: boolean }[];
}

/** One part of a reconciler pass (see ReconcilerOptions.tasks). */
export interface ReconcilerTask {
  readonly name: string;
  run(now: Date): Promise<void>;
}

/**
 * The scheduler loop: a thin shell that wakes on notifications (a step
 * finished, a run was created or canceled) and on a fallback timer, and asks
 * storage to move steps. Every decision commits in storage transactions that
 * lock with SKIP LOCKED, so any number of reconcilers may run side by side.
 */
export class Reconciler {
  readonly id: string;
  private readonly clock: () => Date;
  private readonly log: NonNullable<ReconcilerOptions["log"]>;
  private running = false;
  private passing = false;
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private lastHousekeeping = 0;
  private lastLostTriesCheck = 0;
  private lastHeartbeat = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private currentPass: Promise<void> = Promise.resolve();
  private consecutiveErrors = 0;
  /** The database was unreachable at the last attempt: the next pass starts the time limits' count again. */
  private databaseAway = false;
  /** When the database answered again after an outage (this reconciler's clock); see HousekeepingOptions. */
  private reachableSince: Date | undefined;
  private readonly heartbeatIntervalMs: number;

  constructor(private readonly options: ReconcilerOptions) {
    this.id = options.id ?? `reconciler-${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.clock = options.clock ?? (() => new Date());
    this.heartbeatIntervalMs = Math.min(HEARTBEAT_INTERVAL_MS, (options.holderDeadAfterMs ?? HOLDER_DEAD_AFTER_MS) / 4);
    this.log = options.log ?? ((level, message) => process.stderr.write(`[${level}] ${message}\n`));
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.unlisten = await this.options.database.listen(WAKE_CHANNEL, () => this.wake());
    // Passes heartbeat too (the first one before it claims anything); the timer keeps it fresh through a long pass.
    this.heartbeatTimer = setInterval(() => {
      if (this.lastHeartbeat > 0) void this.heartbeatIfDue().catch((err: unknown) => this.failed("reconciler heartbeat failed", err));
    }, this.heartbeatIntervalMs);
    this.heartbeatTimer.unref();
    this.wake();
  }

  /** Asks for a pass soon; passes never overlap, and wakes during a pass cause one more. */
  wake(): void {
    if (!this.running) return;
    if (this.passing) {
      this.dirty = true;
      return;
    }
    this.passing = true;
    clearTimeout(this.timer);
    this.currentPass = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    clearInterval(this.heartbeatTimer);
    await this.unlisten?.();
    await this.currentPass;
    // What it still holds is handed out again by the others at once, not after holderDeadAfterMs.
    if (this.lastHeartbeat > 0) {
      await this.options.store
        .holderStopped(this.id)
        .catch((err: unknown) => this.failed("the reconciler's heartbeat row was not removed", err));
    }
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.dirty = false;
        try {
          await this.pass();
          this.consecutiveErrors = 0;
        } catch (err) {
          // The loop survives anything: a lost connection, a failed statement.
          this.consecutiveErrors++;
          this.failed("reconciler pass failed", err);
          await sleep(backoffDelayMs(this.consecutiveErrors - 1, RECONNECT_BACKOFF));
        }
      } while (this.dirty && this.running);
    } finally {
      this.passing = false;
      if (this.running) {
        this.timer = setTimeout(() => this.wake(), this.options.pollIntervalMs ?? 1_000);
        this.timer.unref();
      }
    }
  }

  /** One pass: housekeeping (rate-limited), then dispatch until no capacity or no runnable step is left. */
  async pass(): Promise<void> {
    const started = performance.now();
    let dispatched = 0;
    let failed = true;
    const tasks: { name: string; durationMs: number; failed: boolean }[] = [];
    try {
      dispatched = await this.passOnce(tasks);
      failed = false;
    } finally {
      this.options.onPass?.(performance.now() - started, { dispatched, failed, tasks });
    }
  }

  /** The pass itself; returns the number of steps claimed. */
  private async passOnce(timings: { name: string; durationMs: number; failed: boolean }[]): Promise<number> {
    const now = this.clock();
    if (this.databaseAway) {
      this.databaseAway = false;
      this.reachableSince = now;
    }
    // Before anything is claimed: a step held by a reconciler without a heartbeat row is taken to be lost.
    await this.heartbeatIfDue();
    const sinceHousekeeping = now.getTime() - this.lastHousekeeping;
    // A clock that went backwards (NTP step, injected clock) must not pause housekeeping until it catches up.
    if (sinceHousekeeping >= (this.options.housekeepingIntervalMs ?? 1_000) || sinceHousekeeping < 0) {
      this.lastHousekeeping = now.getTime();
      const hk = await this.options.store.housekeeping({
        now,
        zombieAfterMs: this.options.zombieAfterMs ?? 60_000,
        queuedTimeoutMs: this.options.queuedTimeoutMs ?? 300_000,
        holderDeadAfterMs: this.options.holderDeadAfterMs ?? HOLDER_DEAD_AFTER_MS,
        ...(this.reachableSince ? { reachableSince: this.reachableSince } : {}),
      });
      if (hk.holderLost > 0)
        this.log(
          "warn",
          `${hk.holderLost} queued step(s) of a reconciler that is gone handed out again: infrastructure failures, which do not use up retries`,
        );
      for (const a of hk.toAbort) this.options.executors[a.executor]?.cancel([a.stepId], "run canceled");
      if (hk.zombies > 0)
        this.log(
          "warn",
          `${hk.zombies} zombie step(s) failed (no heartbeat from their worker): infrastructure failures, which do not use up retries`,
        );
    }
    const sinceLostCheck = now.getTime() - this.lastLostTriesCheck;
    const lostInterval = this.options.lostTriesIntervalMs ?? LOST_TRIES_INTERVAL_MS;
    if (sinceLostCheck >= lostInterval || sinceLostCheck < 0) {
      this.lastLostTriesCheck = now.getTime();
      await this.handOutLostTries(new Date(now.getTime() - lostInterval));
    }
    for (const task of this.options.tasks ?? []) {
      const taskStarted = performance.now();
      let taskFailed = false;
      try {
        await task.run(this.clock());
      } catch (err) {
        taskFailed = true;
        this.failed(`reconciler task ${task.name} failed`, err);
      }
      timings.push({ name: task.name, durationMs: performance.now() - taskStarted, failed: taskFailed });
    }
    return this.dispatch();
  }

  /**
   * Tries handed out before `before` that their executor no longer holds (Redis restarted empty) are handed out
   * again now, rather than at the queued timeout, and stop holding their pool slots. One failing executor (its
   * queue unreachable) does not keep the others from being checked.
   */
  private async handOutLostTries(before: Date): Promise<void> {
    const byExecutor = new Map<Executor, string[]>();
    for (const [kind, executor] of Object.entries(this.options.executors)) {
      if (executor.lostTries) byExecutor.set(executor, [...(byExecutor.get(executor) ?? []), kind]);
    }
    for (const [executor, kinds] of byExecutor) {
      const handedOut = await this.options.store.handedOut(kinds, before, LOST_TRIES_BATCH);
      if (handedOut.length === 0) continue;
      let lost: readonly HandedOutTry[];
      try {
        lost = await executor.lostTries!(handedOut);
      } catch (err) {
        // Its queue is away too: the tries stay queued, and are checked again once it answers.
        if (this.options.health && isConnectionError(err)) this.options.health.failed("redis", err);
        else this.log("warn", `checking the ${executor.kind} executor for lost tries: ${(err as Error)?.message ?? String(err)}`);
        continue;
      }
      const requeued = await this.options.store.requeueLost(
        lost,
        this.clock(),
        `the ${executor.kind} executor's queue no longer holds this try`,
      );
      if (requeued > 0) this.log("warn", `${requeued} step(s) whose ${executor.kind} job was lost before it started were handed out again`);
    }
  }

  private async heartbeatIfDue(): Promise<void> {
    const since = Date.now() - this.lastHeartbeat;
    if (since < this.heartbeatIntervalMs && since >= 0) return;
    await this.options.store.holderAlive({ id: this.id, hostname: os.hostname(), pid: process.pid });
    this.lastHeartbeat = Date.now();
  }

  /** A lost database goes to the health view (said once per outage); anything else is logged with its stack. */
  private failed(what: string, err: unknown): void {
    if (isConnectionError(err)) this.databaseAway = true;
    if (this.options.health && isConnectionError(err)) this.options.health.failed("postgres", err);
    else this.log("error", `${what}: ${(err as Error)?.stack ?? String(err)}`);
  }

  private async dispatch(): Promise<number> {
    let dispatched = 0;
    for (;;) {
      const capacity: Record<string, number> = {};
      for (const [kind, ex] of Object.entries(this.options.executors)) capacity[kind] = ex.freeSlots();
      const claims = await this.options.store.claimRunnable({
        now: this.clock(),
        capacity,
        limit: this.options.claimBatch ?? 512,
        ...(this.options.holds?.length ? { holder: { id: this.id, kinds: this.options.holds } } : {}),
      });
      if (claims.length === 0) return dispatched;
      dispatched += claims.length;
      const { byExecutor, unrunnable } = await dispatchClaims(claims, {
        graphs: this.options.graphs,
        dirs: this.options,
        now: this.clock(),
        workerId: this.id,
      });
      if (unrunnable.length > 0) await this.options.store.completeSteps(unrunnable, this.clock());
      for (const [kind, steps] of byExecutor) {
        const executor = this.options.executors[kind];
        if (executor) executor.submit(steps);
      }
      if (claims.length < (this.options.claimBatch ?? 512)) return dispatched;
    }
  }
}

/** See ReconcilerOptions.holderDeadAfterMs. */
const HEARTBEAT_INTERVAL_MS = 5_000;
const HOLDER_DEAD_AFTER_MS = 30_000;
/** See ReconcilerOptions.lostTriesIntervalMs. */
const LOST_TRIES_INTERVAL_MS = 5_000;
/** Most handed-out tries checked per executor and pass. */
const LOST_TRIES_BATCH = 2_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

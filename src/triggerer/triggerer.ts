import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { serializeError } from "../errors/index.js";
import { TRIGGERS_CHANNEL, triggerBackoffMs, type ClaimedTrigger, type TriggerCheckResult, type TriggerStore } from "../storage/index.js";
import { checkTrigger, PERMANENT_TRIGGER_ERRORS, TriggerError, type CheckResult, type TriggerRegistry } from "../trigger-checks/index.js";

export interface TriggererOptions {
  readonly store: TriggerStore;
  /** Every kind this triggerer can check: builtInTriggers() plus custom kinds; a function is asked at each check (kinds may be reloaded). */
  readonly registry: TriggerRegistry | (() => TriggerRegistry);
  /** Wakes the triggerer when triggers are created (DatabaseHandle.listen); without it, it polls. */
  readonly listen?: (channel: string, handler: (payload: string) => void) => Promise<() => Promise<void>>;
  /** Lease owner id (default: host, pid and a random suffix). */
  readonly owner?: string;
  /** Checks running at once (default 1000); held triggers due for a check beyond it wait their turn. */
  readonly concurrency?: number;
  /** Triggers held at once, each checked every poll interval (default 10 000); more wait for another triggerer or a free place. */
  readonly capacity?: number;
  /** Each check's own time limit (default 30 s). */
  readonly checkTimeoutMs?: number;
  /** Lease on held triggers, renewed every third of it (default 30 s). */
  readonly leaseMs?: number;
  /** Triggers claimed per query (default 500). */
  readonly claimBatch?: number;
  /** How often to look for due triggers without a notification: lapsed leases, missed notifies (default 1 s). */
  readonly claimIntervalMs?: number;
  /** How often to time out expired waits (default 1 s). */
  readonly expireIntervalMs?: number;
  /** An unchanged "not there yet" is written at most this often per trigger (default 30 s); changes at once. */
  readonly waitingWriteMs?: number;
  /** Results wait at most this long to be written together (default 50 ms)… */
  readonly flushMs?: number;
  /** …or until this many are ready (default 500). */
  readonly flushBatch?: number;
  readonly clock?: () => Date;
  /** Storage errors and failing checks' details; the loop carries on. */
  readonly onError?: (error: unknown, what: string) => void;
}

/** A trigger this triggerer holds the lease of, and checks on its own schedule. */
interface Held {
  readonly trigger: ClaimedTrigger;
  failures: number;
  /** Checks since the last result written for it. */
  unwritten: number;
  /** When its last result was handed to a write, and what that said. */
  writtenAt: number;
  writtenDetail: string | undefined;
  timer: NodeJS.Timeout | undefined;
  running: AbortController | undefined;
}

/**
 * Checks triggers for deferred steps and source observations. A triggerer
 * claims due triggers (SKIP LOCKED, with a lease its heartbeat renews) while
 * it holds fewer than `capacity`, and keeps each until it fires, fails or
 * times out, checking it every poll interval (backing off after errors); every
 * check runs concurrently under its own timeout. Results are written in
 * batches. When a triggerer dies, another claims its triggers once their
 * leases lapse (a check may then run twice, which is harmless for a read).
 *
 * @example
 * import { RUN_DECISIONS } from "../planner/index.js";
 * import { PgTriggerStore, type DatabaseHandle } from "../storage/index.js";
 * import { builtInTriggers } from "../trigger-checks/index.js";
 * // given handle: DatabaseHandle
 * const triggerer = new Triggerer({ store: new PgTriggerStore(handle.db, RUN_DECISIONS), registry: builtInTriggers(), listen: (c, h) => handle.listen(c, h) });
 * await triggerer.start();
 * // …
 * await triggerer.stop();
 */
export class Triggerer {
  readonly owner: string;
  readonly #o: Required<Omit<TriggererOptions, "listen" | "owner">> & { readonly listen: TriggererOptions["listen"] | undefined };
  readonly #held = new Map<number, Held>();
  /** Results not written yet, the latest per trigger (the store keeps one result per trigger per write). */
  #results = new Map<number, TriggerCheckResult>();
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #claiming: Promise<void> | undefined;
  #claimAgain = false;
  #timers: NodeJS.Timeout[] = [];
  #runningChecks = 0;
  /** Held triggers due for a check while `concurrency` checks run. */
  #dueChecks: Held[] = [];
  #unlisten: (() => Promise<void>) | undefined;
  #stopped = true;
  #expiring = false;

  constructor(options: TriggererOptions) {
    this.owner = options.owner ?? `triggerer-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.#o = {
      store: options.store,
      registry: options.registry,
      listen: options.listen,
      concurrency: options.concurrency ?? 1000,
      capacity: options.capacity ?? 10_000,
      checkTimeoutMs: options.checkTimeoutMs ?? 30_000,
      leaseMs: options.leaseMs ?? 30_000,
      claimBatch: options.claimBatch ?? 500,
      claimIntervalMs: options.claimIntervalMs ?? 1000,
      expireIntervalMs: options.expireIntervalMs ?? 1000,
      flushMs: options.flushMs ?? 50,
      waitingWriteMs: options.waitingWriteMs ?? 30_000,
      flushBatch: options.flushBatch ?? 500,
      clock: options.clock ?? (() => new Date()),
      onError: options.onError ?? (() => undefined),
    };
  }

  /** Triggers held now (each checked on its own schedule). */
  get held(): number {
    return this.#held.size;
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    if (this.#o.listen) {
      // A created trigger is checked now, not at the next claim interval.
      this.#unlisten = await this.#o.listen(TRIGGERS_CHANNEL, () => this.#claim());
    }
    this.#every(this.#o.claimIntervalMs, () => this.#claim());
    this.#every(this.#o.leaseMs / 3, () => this.#renew());
    this.#every(this.#o.expireIntervalMs, () => this.#expire());
    this.#claim();
  }

  /** Stops claiming, aborts running checks, writes the results it has and gives its leases back. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.#unlisten?.().catch((err: unknown) => this.#o.onError(err, "unlisten"));
    await this.#claiming;
    for (const h of this.#held.values()) {
      clearTimeout(h.timer);
      h.running?.abort(new TriggerError("TRIGGER_CHECK_ABORTED", "the triggerer is stopping"));
    }
    this.#held.clear();
    this.#dueChecks = [];
    await this.#flush();
    await this.#o.store.releaseLeases(this.owner).catch((err: unknown) => this.#o.onError(err, "releasing leases"));
  }

  #every(ms: number, fn: () => void): void {
    const t = setInterval(fn, Math.max(1, Math.floor(ms)));
    t.unref();
    this.#timers.push(t);
  }

  /** Claims due triggers while there is room; a call while a claim runs makes it go round once more. */
  #claim(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = this.#claimLoop()
      .catch((err: unknown) => this.#o.onError(err, "claiming triggers"))
      .finally(() => {
        this.#claiming = undefined;
        if (this.#claimAgain) {
          this.#claimAgain = false;
          this.#claim();
        }
      });
  }

  async #claimLoop(): Promise<void> {
    for (;;) {
      this.#claimAgain = false;
      const room = this.#o.capacity - this.#held.size;
      if (this.#stopped || room <= 0) return;
      const limit = Math.min(room, this.#o.claimBatch);
      const claimed = await this.#o.store.claimDue(this.owner, this.#o.clock(), { limit, leaseMs: this.#o.leaseMs });
      if (this.#stopped) return; // stop() releases them
      for (const trigger of claimed) {
        if (this.#held.has(trigger.id)) continue;
        const h: Held = {
          trigger,
          failures: 0,
          unwritten: 0,
          writtenAt: 0,
          writtenDetail: undefined,
          timer: undefined,
          running: undefined,
        };
        this.#held.set(trigger.id, h);
        this.#check(h);
      }
      if (claimed.length < limit && !this.#claimAgain) return;
    }
  }

  /** Starts the check, or queues it while `concurrency` checks run. */
  #check(h: Held): void {
    if (this.#runningChecks >= this.#o.concurrency) {
      this.#dueChecks.push(h);
      return;
    }
    this.#runningChecks++;
    this.#start(h);
  }

  /** A check settled: the longest-queued held trigger gets its place. */
  #checkDone(): void {
    this.#runningChecks--;
    while (this.#dueChecks.length > 0 && this.#runningChecks < this.#o.concurrency) {
      const next = this.#dueChecks.shift()!;
      if (this.#held.get(next.trigger.id) !== next) continue;
      this.#runningChecks++;
      this.#start(next);
    }
  }

  #start(h: Held): void {
    const { trigger } = h;
    const controller = new AbortController();
    h.running = controller;
    const now = this.#o.clock();
    // An unpartitioned asset's steps have the partition key "".
    const partition =
      trigger.partitionKey === null || trigger.partitionKey === ""
        ? undefined
        : { key: trigger.partitionKey, ...(trigger.partitionWindow ? { window: trigger.partitionWindow } : {}) };
    checkTrigger(
      { kind: trigger.kind, args: trigger.args },
      { partition, now, signal: controller.signal, ...(trigger.assetKey !== null ? { assetKey: trigger.assetKey } : {}) },
      { timeoutMs: this.#o.checkTimeoutMs, registry: typeof this.#o.registry === "function" ? this.#o.registry() : this.#o.registry },
    )
      .then(
        (result) => this.#done(h, controller, result, undefined),
        (err: unknown) => this.#done(h, controller, undefined, err),
      )
      .finally(() => this.#checkDone());
  }

  #done(h: Held, controller: AbortController, result: CheckResult | undefined, err: unknown): void {
    // Stopped, or dropped (lease lost, timed out) while it ran: nothing to report.
    if (controller.signal.aborted || this.#held.get(h.trigger.id) !== h) return;
    h.running = undefined;
    h.unwritten++;
    const id = h.trigger.id;
    if (result?.fired) return this.#end(h, { triggerId: id, outcome: "fired", payload: result.payload });
    if (result) {
      // An unchanged "not yet" is written now and then, not after every check: thousands of triggers polled
      // every few seconds would otherwise cost as many row updates.
      const now = Date.now();
      if (h.failures > 0 || result.detail !== h.writtenDetail || now - h.writtenAt >= this.#o.waitingWriteMs) {
        this.#record(h, {
          triggerId: id,
          outcome: "waiting",
          result: result.detail === undefined ? null : { detail: result.detail },
          pollIntervalMs: h.trigger.pollIntervalMs,
        });
        h.writtenAt = now;
        h.writtenDetail = result.detail;
      }
      h.failures = 0;
      return this.#schedule(h, h.trigger.pollIntervalMs);
    }
    const error = serializeError(err);
    if (err instanceof TriggerError && PERMANENT_TRIGGER_ERRORS.has(err.code)) {
      return this.#end(h, { triggerId: id, outcome: "failed", error });
    }
    this.#o.onError(err, `checking trigger ${id} (${h.trigger.kind})`);
    h.failures++;
    this.#record(h, { triggerId: id, outcome: "error", error, pollIntervalMs: h.trigger.pollIntervalMs });
    this.#schedule(h, triggerBackoffMs(h.trigger.pollIntervalMs, h.failures));
  }

  /** The trigger is done here: its result ends its lease, and its place goes to the next due one. */
  #end(h: Held, result: TriggerCheckResult): void {
    this.#drop(h.trigger.id);
    this.#record(h, result);
    this.#claim();
  }

  #schedule(h: Held, delayMs: number): void {
    h.timer = setTimeout(() => {
      h.timer = undefined;
      if (this.#held.get(h.trigger.id) === h) this.#check(h);
    }, delayMs);
  }

  #drop(id: number): void {
    const h = this.#held.get(id);
    if (!h) return;
    clearTimeout(h.timer);
    h.running?.abort(new TriggerError("TRIGGER_CHECK_ABORTED", `trigger ${id} is no longer held by this triggerer`));
    this.#held.delete(id);
  }

  /** Queues the result for the next write, counting the checks it stands for. */
  #record(h: Held, result: TriggerCheckResult): void {
    const earlier = this.#results.get(result.triggerId)?.checks ?? 0;
    this.#results.set(result.triggerId, { ...result, checks: earlier + h.unwritten });
    h.unwritten = 0;
    if (this.#results.size >= this.#o.flushBatch) void this.#flush();
    else this.#flushTimer ??= setTimeout(() => void this.#flush(), this.#o.flushMs);
  }

  /** Writes the results gathered so far; one write at a time, a failed one is retried with the next. */
  async #flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#results.size === 0) return;
    const pending = this.#results;
    this.#results = new Map();
    const batch = [...pending.values()];
    this.#flushing = this.#o.store
      .recordChecks(this.owner, batch, this.#o.clock())
      .then(
        (written) => {
          // Taken over, or no longer waiting (timed out, canceled): not ours to check any more.
          const dropped = written.ignored.filter((id) => this.#held.has(id));
          for (const id of dropped) this.#drop(id);
          if (dropped.length > 0) this.#claim();
        },
        (err: unknown) => {
          this.#o.onError(err, `writing ${batch.length} trigger check result(s)`);
          if (this.#stopped) return;
          // A result that came in meanwhile is newer than the one that failed to be written.
          for (const [id, result] of this.#results) pending.set(id, result);
          this.#results = pending;
          this.#flushTimer ??= setTimeout(() => void this.#flush(), Math.max(this.#o.flushMs, 1000));
        },
      )
      .finally(() => {
        this.#flushing = undefined;
      });
    await this.#flushing;
  }

  #renew(): void {
    if (this.#held.size === 0) return;
    this.#o.store
      .renewLeases(this.owner, this.#o.clock(), this.#o.leaseMs)
      .catch((err: unknown) => this.#o.onError(err, "renewing leases"));
  }

  /** Any triggerer may time out expired waits; those it held stop being checked. */
  #expire(): void {
    if (this.#expiring) return;
    this.#expiring = true;
    this.#o.store
      .expire(this.#o.clock())
      .then(({ timedOut }) => {
        const mine = timedOut.filter((id) => this.#held.has(id));
        for (const id of mine) this.#drop(id);
        if (mine.length > 0) this.#claim();
      })
      .catch((err: unknown) => this.#o.onError(err, "timing out expired triggers"))
      .finally(() => {
        this.#expiring = false;
      });
  }
}

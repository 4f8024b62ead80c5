import { hostname } from "node:os";
import { sql, type KyselyPlugin } from "kysely";
import { serializeError, TributaryError, type SerializedError } from "../errors/index.js";
import { isConnectionError } from "../health/index.js";
import type { DatabaseHandle, PgRunStore, StepCompletion } from "../storage/index.js";
import { hit } from "./fault-points.js";
import { captureConsole, guardProcessExit } from "./process-guards.js";
import { SecretResolver, SettingsSecretBackend } from "./secrets.js";
import { describeTry, serializedStepError, stepError, withoutStack } from "./step-errors.js";
import { StepRuntime, type TryEnd } from "./step-runtime.js";
import { definitionsImporter } from "./definitions-importer.js";
import type { Lane, LaneStep } from "./lane.js";
import { ScheduledExecutor } from "./scheduled-executor.js";
import { ABANDONED } from "./step-outcomes.js";
import { StepScheduler } from "./step-scheduler.js";
import type { StoreExecutionBackend } from "./store-backend.js";
import type { ExecutionBackend, Executor, StepDispatch, StepOutcome, StepResult, StepStarted } from "../execution/index.js";

/** What the executor needs of its backend: the store-backed one, whose completions it records itself. */
export type TransactionalBackend = ExecutionBackend & Pick<StoreExecutionBackend, "completionOf">;

export interface TransactionalExecutorOptions {
  /** The metadata database: the steps' transactions are opened on it. Postgres only (see below). */
  readonly database: Pick<DatabaseHandle, "kind" | "db">;
  /** The run store on that same database: records a completion inside the step's transaction. */
  readonly runs: Pick<PgRunStore, "completeStepsWithin">;
  /**
   * Steps run at once. Each holds one connection of the database pool from
   * its first statement to its commit, so keep it well below the pool's size
   * (the reconciler shares the pool). Default 4.
   */
  readonly concurrency?: number;
  /**
   * Steps accepted beyond those running, waiting (queued, no connection held)
   * for a free one. Each commit frees one slot and wakes the reconciler for
   * it; with steps waiting here the next one starts at once instead of after
   * the reconciler's pass, and passes claim several steps at a time.
   * Default: as many as `concurrency`.
   */
  readonly prefetch?: number;
  /** After a timeout or cancel aborts ctx.signal, how long the function gets before the try is abandoned and rolled back. Default 5 000. */
  readonly killGraceMs?: number;
  readonly flushDelayMs?: number;
  readonly maxBatchSize?: number;
  /**
   * The definitions directory: files under it load as ES modules and resolve
   * `tributary` to this SDK, as in a worker process (the module hooks are
   * registered in this process at the first import).
   */
  readonly definitionsDir?: string;
  /** How a definitions file is imported. Default: `import()` through the worker's module hooks (see definitionsDir). */
  readonly importModule?: (file: string, codeHash?: string) => Promise<Record<string, unknown>>;
  /** Where ctx.secrets.get looks; default: what a worker process reads (environment, TRIBUTARY_SECRETS_DIR, TRIBUTARY_SECRETS_BACKEND). */
  readonly secrets?: SecretResolver;
  readonly clock?: () => Date;
  readonly onError?: (err: unknown, what: string) => void;
}

/** Why a try's transaction was rolled back, when that is not an error to report as such. */
class Rollback {
  constructor(
    /** What to report once rolled back; null: nothing (the try is stale: another try owns the step). */
    readonly outcome: StepOutcome | null,
  ) {}
}

export const TRANSACTIONAL_NEEDS_POSTGRES = "TRANSACTIONAL_NEEDS_POSTGRES";
export const TRANSACTION_FAILED = "TRANSACTION_FAILED";
const TX_ENDED = "TRANSACTION_ENDED";
/** Outcomes whose completion commits with the function's writes; the others roll them back (the function runs again). */
const COMMITTING: ReadonlySet<StepOutcome["kind"]> = new Set(["success", "expanded"]);
/** Completions that keep the function's writes (a failed completion, e.g. an output too large, rolls them back). */
const KEEPING: ReadonlySet<StepCompletion["outcome"]> = new Set(["success", "check", "expanded"]);

/**
 * Exactly-once steps for database effects (DBOS-style): runs the asset
 * function in this process with `ctx.tx`, a transaction on the metadata
 * database, and records the step's completion (its output, materialisation and
 * state change) in that same transaction. A crash anywhere before COMMIT leaves
 * nothing; the retry applies the writes once; the try that committed is the one
 * recorded.
 *
 * Per try: (1) the start is recorded (its own short transaction); (2) one
 * transaction locks the step row (`for no key update`): a try that is no longer
 * current finds nothing and ends without a report, and while the lock is held
 * zombie detection (`skip locked`) leaves the step alone, so no heartbeat is
 * needed; if this process dies, the transaction aborts and the step's stale
 * heartbeat makes it a zombie, retried elsewhere; (3) the function runs with
 * `ctx.tx` (after a savepoint); (4) on success the completion is recorded in
 * the transaction, which commits. A failure, skip, timeout, deferral or
 * reschedule rolls back to the savepoint (none of the function's writes stay)
 * and is recorded in the same transaction, still under the lock, so no zombie
 * check can slip in between. Should recording it fail, it is reported the
 * ordinary way. A try the scheduler gave up on (it ignored its signal past the
 * grace period) rolls back entirely; the scheduler reports it.
 *
 * Postgres only: under PGlite one session serves the whole process, and a
 * transaction held for a step's length would stall everything else; the
 * executor then fails its steps with a clear error.
 *
 * @example
 * import type { Executor } from "../execution/index.js";
 * import { Reconciler, type ReconcilerOptions } from "../reconciler/index.js";
 * import type { DatabaseHandle, PgRunStore } from "../storage/index.js";
 * // given backend: TransactionalBackend, database: DatabaseHandle, runs: PgRunStore, local: Executor, options: ReconcilerOptions
 * const executor = new TransactionalExecutor(backend, { database, runs });
 * new Reconciler({ ...options, executors: { local, transactional: executor } });
 */
export class TransactionalExecutor extends ScheduledExecutor implements Executor {
  readonly kind = "transactional";
  protected readonly scheduler: StepScheduler;
  private readonly undo: (() => void)[] = [];
  private closing: Promise<void> | undefined;

  constructor(backend: TransactionalBackend, options: TransactionalExecutorOptions) {
    super();
    const concurrency = options.concurrency ?? 4;
    const prefetch = options.prefetch ?? concurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError(`TransactionalExecutor: concurrency must be a positive integer, got ${concurrency}`);
    }
    if (!Number.isInteger(prefetch) || prefetch < 0) {
      throw new RangeError(`TransactionalExecutor: prefetch must be a non-negative integer, got ${prefetch}`);
    }
    const onError = options.onError ?? ((err, what) => console.error(`tributary transactional executor: ${what}:`, err));
    const workerId = `transactional:${hostname()}:${process.pid}`;
    const reports = new ReportFilter(backend);
    this.scheduler = new StepScheduler(reports, {
      capacity: concurrency + prefetch,
      killGraceMs: options.killGraceMs ?? 5_000,
      // Never sent (see ReportFilter.heartbeat); the timer only needs to exist.
      heartbeatIntervalMs: 60_000,
      flushDelayMs: options.flushDelayMs ?? 1,
      maxBatchSize: options.maxBatchSize ?? 500,
      workerId,
      onError,
    });
    const runtime = new StepRuntime({
      importModule: options.importModule ?? definitionsImporter(options.definitionsDir),
      addDynamicPartitions: (name, keys) => backend.addDynamicPartitions(name, keys),
      materialized: (assetKey, partitionKey) => backend.materialized(assetKey, partitionKey),
      secrets: options.secrets ?? new SecretResolver(new SettingsSecretBackend()),
    });
    const lane =
      options.database.kind === "postgres"
        ? new TransactionalLane(runtime, concurrency, this.scheduler, backend, reports, options, workerId, onError)
        : new RefusingLane(concurrency, this.scheduler, workerId);
    this.scheduler.addLane(lane);
    if (lane instanceof TransactionalLane) this.undo.push(captureConsole(), guardProcessExit("exit").undo);
  }

  close(options: { graceMs?: number } = {}): Promise<void> {
    this.closing ??= this.scheduler.close(options.graceMs ?? 30_000).finally(() => {
      for (const undo of this.undo) undo();
    });
    return this.closing;
  }
}

/**
 * The scheduler's view of the backend: results whose completion already
 * committed with the step's transaction (or that are stale) are not reported
 * again, and running steps are not heartbeated: their row lock keeps zombie
 * detection away, and an UPDATE of the locked row would wait for the commit.
 */
class ReportFilter implements ExecutionBackend {
  private readonly settled = new Set<string>();

  constructor(private readonly backend: TransactionalBackend) {}

  /** The try's result is already recorded (or must not be): the scheduler's report of it is dropped. */
  settle(stepId: number, tryNumber: number): void {
    this.settled.add(`${stepId}:${tryNumber}`);
  }

  loadInputs(steps: readonly StepDispatch[]) {
    return this.backend.loadInputs(steps);
  }

  started(events: readonly StepStarted[]): Promise<void> {
    return this.backend.started(events);
  }

  async heartbeat(): Promise<void> {}

  async finished(results: readonly StepResult[], options?: { readonly freeSlots: number }): Promise<readonly StepDispatch[] | void> {
    const rest = results.filter((r) => !this.settled.delete(`${r.stepId}:${r.tryNumber}`));
    if (rest.length === 0) return [];
    return this.backend.finished(rest, options);
  }

  addDynamicPartitions(name: string, keys: readonly string[]): Promise<void> {
    return this.backend.addDynamicPartitions(name, keys);
  }

  materialized(assetKey: string, partitionKey: string) {
    return this.backend.materialized(assetKey, partitionKey);
  }
}

/** A try in its transaction: the database session to cancel when it is aborted while the function runs. */
interface Running {
  backendPid: number | null;
  inFunction: boolean;
  /** The scheduler gave up on the try and reported it itself. */
  abandoned: boolean;
}

class TransactionalLane implements Lane {
  readonly endsBy = "abandon" as const;
  readonly accepting = true;
  readonly pid = process.pid;
  private readonly running = new Map<number, Running>();
  private readonly clock: () => Date;

  constructor(
    private readonly runtime: StepRuntime,
    readonly capacity: number,
    private readonly scheduler: StepScheduler,
    private readonly backend: TransactionalBackend,
    private readonly reports: ReportFilter,
    private readonly options: TransactionalExecutorOptions,
    readonly workerId: string,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.clock = options.clock ?? (() => new Date());
  }

  run(steps: readonly LaneStep[]): void {
    void this.startAll(steps);
  }

  abort(stepId: number, reason: TributaryError): void {
    this.runtime.abort(stepId, reason);
    // A query of the function's may be what it waits on: cancel it, so the function sees its signal.
    const r = this.running.get(stepId);
    if (r?.inFunction && r.backendPid !== null) {
      sql`select pg_cancel_backend(${r.backendPid})`
        .execute(this.options.database.db)
        .catch((err: unknown) => this.onError(err, "canceling a step's query"));
    }
  }

  abandon(stepId: number): void {
    const r = this.running.get(stepId);
    if (r) r.abandoned = true;
    // The runtime's try ends now; its transaction rolls back as soon as the connection is free.
    this.runtime.abandon(stepId, ABANDONED);
  }

  kill(): void {
    // Nothing to kill in-process.
  }

  /** Records the batch's starts in one short transaction, before any step takes its row lock. */
  private async startAll(steps: readonly LaneStep[]): Promise<void> {
    const startedAt = Date.now();
    const events = steps.map(({ dispatch: d }) => ({
      stepId: d.stepId,
      tryNumber: d.tryNumber,
      workerId: this.workerId,
      hostname: hostname(),
      pid: process.pid,
      startedAt: new Date(startedAt),
    }));
    try {
      await this.backend.started(events);
    } catch (err) {
      for (const { dispatch: d } of steps) {
        const error = serializedStepError(
          "START_NOT_RECORDED",
          d,
          `${describeTry(d)}: recording its start failed: ${(err as Error)?.message ?? String(err)}; this try can run again`,
        );
        const outcome: StepOutcome = { kind: "failed", error, retryable: true, failureClass: "infrastructure" };
        this.scheduler.finished(this, d.stepId, d.tryNumber, outcome, startedAt, Date.now());
      }
      return;
    }
    for (const step of steps) void this.runOne(step, startedAt);
  }

  private async runOne({ dispatch: d, inputs }: LaneStep, startedAt: number): Promise<void> {
    const running: Running = { backendPid: null, inFunction: false, abandoned: false };
    this.running.set(d.stepId, running);
    const guard = new TransactionGuard();
    let end: TryEnd | undefined;
    /** The outcome recorded in the transaction; if recording it fails, it is reported the ordinary way. */
    let recording: StepOutcome | undefined;
    /** Reported through the scheduler (and the backend's own transaction); null: nothing left to report. */
    let report: StepOutcome | null = null;
    let committed = false;
    try {
      await this.options.database.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`
          select pg_backend_pid() as pid from steps
          where id = ${d.stepId} and try_number = ${d.tryNumber} and state in ('queued', 'running')
          for no key update`.execute(trx);
        // Another try owns the step now (or it ended): this one must not write anything.
        if (rows.length === 0) throw new Rollback(null);
        running.backendPid = rows[0]!.pid;
        // Given up on while it waited for the lock (a timeout, a cancel, the executor closing): it never runs.
        if (running.abandoned) throw new Rollback(null);
        await point("tx:after-lock");
        // The function's writes can be undone alone: a try that does not succeed records that under the same lock.
        await sql`savepoint tributary_step`.execute(trx);
        running.inFunction = true;
        try {
          end = await this.runtime.run(d, inputs, undefined, { tx: trx.withPlugin(guard) });
        } finally {
          running.inFunction = false;
          guard.close();
        }
        // Given up on (it ignored its signal past the grace period): the scheduler reported it; its writes go.
        if (running.abandoned) throw new Rollback(null);
        let completion: StepCompletion | undefined;
        if (COMMITTING.has(end.outcome.kind)) {
          await point("tx:after-function");
          completion = await this.backend.completionOf(this.resultOf(d, end.outcome, end.startedAt, end.endedAt));
        }
        if (!completion || !KEEPING.has(completion.outcome)) {
          // Failed, skipped, deferred, rescheduled, or an output that cannot be stored: none of its writes stay.
          recording = completion ? outcomeOf(completion) : end.outcome;
          await sql`rollback to savepoint tributary_step`.execute(trx);
          completion = await this.backend.completionOf(this.resultOf(d, recording, end.startedAt, end.endedAt));
        }
        const summary = await this.options.runs.completeStepsWithin(trx, [completion], this.clock());
        // Cannot happen while the row lock holds; should it, the function's writes must not outlive the step's state.
        if (summary.applied !== 1) throw new Rollback(null);
        await point("tx:after-completion");
      });
      committed = true;
    } catch (err) {
      if (err instanceof Rollback) {
        report = err.outcome;
      } else if (recording && !isConnectionError(err)) {
        report = recording;
      } else {
        // The transaction's connection was lost: whatever the function made of that (a failed query of ctx.tx is
        // its error too), the try ended because of the database, not its code.
        // A fault, a lost connection, a failed COMMIT: nothing of the try is known to have committed. Should the
        // COMMIT have gone through after all, this report is stale and ignored: the committed try stays recorded.
        const error = stepError(
          TRANSACTION_FAILED,
          d,
          `${describeTry(d)}: its transaction did not commit: ${(err as Error)?.message ?? String(err)}; this try can run again`,
          err,
        );
        // Not the function's doing, unless it left the transaction aborted (it caught a failed query and went on).
        report = {
          kind: "failed",
          error: withoutStack(error),
          retryable: true,
          failureClass: leftAborted(err) ? "user" : "infrastructure",
        };
      }
    } finally {
      this.running.delete(d.stepId);
    }
    if (report === null && !running.abandoned) {
      // Recorded (or stale): the scheduler frees the slot, and its report of the try is dropped.
      this.reports.settle(d.stepId, d.tryNumber);
      if (!committed) await this.forget(d);
      if (committed) {
        try {
          const p = hit("tx:after-commit");
          if (p) await p;
        } catch (err) {
          this.onError(err, "fault point tx:after-commit");
        }
      }
    }
    const outcome = report ?? end?.outcome ?? { kind: "skipped", reason: "stale try: nothing to report" };
    this.scheduler.finished(this, d.stepId, d.tryNumber, outcome, end?.startedAt ?? startedAt, end?.endedAt ?? Date.now());
  }

  /** A stale try: the backend drops what it kept of it since loadInputs (building a failure's completion writes nothing). */
  private async forget(d: StepDispatch): Promise<void> {
    const outcome: StepOutcome = {
      kind: "failed",
      error: serializedStepError(TRANSACTION_FAILED, d, "stale try"),
      retryable: false,
      failureClass: "infrastructure",
    };
    await this.backend.completionOf(this.resultOf(d, outcome, Date.now(), Date.now())).catch(() => undefined);
  }

  private resultOf(d: StepDispatch, outcome: StepOutcome, startedAt: number, endedAt: number): StepResult {
    return {
      stepId: d.stepId,
      runId: d.runId,
      tryNumber: d.tryNumber,
      outcome,
      startedAt: new Date(startedAt),
      endedAt: new Date(endedAt),
      workerId: this.workerId,
      logRef: d.logRef,
    };
  }
}

/** Under PGlite: every step fails at once, saying why and what to do. */
class RefusingLane implements Lane {
  readonly endsBy = "abandon" as const;
  readonly accepting = true;
  readonly pid = process.pid;

  constructor(
    readonly capacity: number,
    private readonly scheduler: StepScheduler,
    readonly workerId: string,
  ) {}

  run(steps: readonly LaneStep[]): void {
    for (const { dispatch: d } of steps) {
      const error = serializedStepError(
        TRANSACTIONAL_NEEDS_POSTGRES,
        d,
        `${describeTry(d)}: executor "transactional" needs a Postgres metadata database (set DATABASE_URL); ` +
          `the embedded PGlite database has one session for the whole process, which a step's transaction would hold ` +
          `for the step's length. Use executor "local" for this asset in embedded mode`,
      );
      queueMicrotask(() =>
        this.scheduler.finished(
          this,
          d.stepId,
          d.tryNumber,
          // The asset asks for an executor this setup cannot give it: its definition must change.
          { kind: "failed", error, retryable: false, failureClass: "user" },
          Date.now(),
          Date.now(),
        ),
      );
    }
  }

  abort(): void {}
  abandon(): void {}
  kill(): void {}
}

/**
 * Makes `ctx.tx` refuse every query once the function returned: the
 * connection then belongs to the executor (and, after the commit, to the
 * pool), never again to code the step left running.
 */
class TransactionGuard implements KyselyPlugin {
  private closed = false;

  close(): void {
    this.closed = true;
  }

  transformQuery: KyselyPlugin["transformQuery"] = (args) => {
    if (this.closed) {
      throw new TributaryError(
        TX_ENDED,
        "ctx.tx was used after the asset function returned: its transaction belongs to that try and has ended. " +
          "Await every query before returning (callbacks such as onSuccess cannot use ctx.tx)",
      );
    }
    return args.node;
  };

  transformResult: KyselyPlugin["transformResult"] = async (args) => args.result;
}

async function point(name: string): Promise<void> {
  const p = hit(name);
  if (p) await p;
}

/** The outcome to report for a completion that rolls the try back (the store backend turned it into a failure). */
function outcomeOf(completion: StepCompletion): StepOutcome {
  if (completion.outcome === "failed") {
    return { kind: "failed", error: completion.error, retryable: completion.retryable, failureClass: completion.failureClass };
  }
  const error: SerializedError = serializeError(
    new TributaryError(TRANSACTION_FAILED, `unexpected completion "${completion.outcome}" of a committing try`),
  );
  return { kind: "failed", error, retryable: true, failureClass: "infrastructure" };
}

/** Postgres's "current transaction is aborted" (25P02), anywhere in an error's causes. */
function leftAborted(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === "25P02") return true;
  }
  return false;
}

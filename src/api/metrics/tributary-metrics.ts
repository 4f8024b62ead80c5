import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { DependencyState } from "../../health/index.js";
import type { MetricsQueryStore, MetricsSnapshot, TriggerStatusCounts } from "../../storage/index.js";

export interface TributaryMetricsOptions {
  /**
   * The database the gauges, trigger counts and dispatch latencies are read
   * from at scrape time. Without it only this process's own metrics are
   * rendered (reconciler passes, process metrics): what a reconciler serves,
   * so that database-wide series come from one place (the API) and are not
   * duplicated by every process.
   */
  readonly store?: MetricsQueryStore;
  readonly clock?: () => Date;
  /** Also export prom-client's process metrics (CPU, memory, event loop lag), prefixed `tributary_`. Default false. */
  readonly processMetrics?: boolean;
  /** Most step tries whose dispatch latency one scrape reads (default 5 000); a larger backlog is read by the next scrapes. */
  readonly dispatchBatch?: number;
  /** This process's dependencies (Postgres, Redis, the API, the object store) and whether each answers now. */
  readonly dependencies?: () => readonly DependencyState[];
}

/** What the reconciler reports after each pass (ReconcilerOptions.onPass has this shape). */
export interface PassReport {
  readonly dispatched: number;
  readonly failed: boolean;
  /** Each task of the pass (automation, backfills, alerts, openlineage, ...) and how long it took. */
  readonly tasks?: readonly { readonly name: string; readonly durationMs: number; readonly failed: boolean }[];
}

const PASS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

/**
 * Tributary's Prometheus metrics, in a registry of their own (several apps in
 * one process, as in tests, never share or clash). Gauges are read from the
 * database at scrape time with a few bounded statements; the dispatch latency
 * histogram reads the step tries queued since the previous scrape; the
 * reconciler pass and task histograms are fed by {@link observeReconcilerPass},
 * so they cover the reconciler running in this process only: a reconciler
 * running as its own process serves them itself (`tributary reconciler
 * --metrics-port`). Trigger counts by status are kept incrementally: ids below
 * the oldest waiting trigger never change status, so after the first scrape
 * only the triggers above them are counted.
 *
 * @example
 * import type { Kysely } from "kysely";
 * import { Reconciler, type ReconcilerOptions } from "../../reconciler/index.js";
 * import { PgMetricsQueryStore, type Database } from "../../storage/index.js";
 * // given db: Kysely<Database>, options: ReconcilerOptions
 * const metrics = new TributaryMetrics({ store: new PgMetricsQueryStore(db) });
 * new Reconciler({ ...options, onPass: metrics.observeReconcilerPass });
 * const text = await metrics.render();
 */
export class TributaryMetrics {
  readonly registry = new Registry();
  readonly #store: MetricsQueryStore | undefined;
  readonly #clock: () => Date;
  readonly #since: Date;
  readonly #dispatchBatch: number;
  #afterTryId: number | null = null;
  /** Counts of the triggers at or below #settledUpTo, by kind and status: they no longer change. */
  readonly #settledTriggers = new Map<string, { kind: string; status: string; n: number }>();
  #settledUpTo = 0;
  /** Settled at the previous scrape: counted as settled at the next one, when inserts open then have committed. */
  #settleNext = 0;
  /** Scrapes run one at a time: each resets and refills the gauges and moves the latency cursor. */
  #previous: Promise<unknown> = Promise.resolve();

  readonly #passDuration: Histogram<"outcome">;
  readonly #taskDuration: Histogram<"task" | "outcome">;
  readonly #dispatched: Counter;
  readonly #dispatchLatency: Histogram;
  readonly #steps: Gauge<"state">;
  readonly #queueDepth: Gauge<"executor" | "queue">;
  readonly #runs: Gauge<"status">;
  readonly #poolSlots: Gauge<"pool">;
  readonly #poolOccupied: Gauge<"pool">;
  readonly #triggersWaiting: Gauge<"kind">;
  readonly #triggersDue: Gauge<"kind">;
  readonly #triggers: Gauge<"kind" | "status">;
  readonly #poolQueued: Gauge<"pool">;
  readonly #handedOver: Gauge<"executor" | "queue">;
  readonly #rowEstimates: Gauge<"table">;

  constructor(options: TributaryMetricsOptions) {
    this.#store = options.store;
    this.#clock = options.clock ?? (() => new Date());
    this.#since = this.#clock();
    this.#dispatchBatch = options.dispatchBatch ?? 5_000;
    const registers = [this.registry];
    this.#passDuration = new Histogram({
      name: "tributary_reconciler_pass_duration_seconds",
      help: "Duration of reconciler passes in this process (housekeeping, tasks, dispatch), by outcome (ok, failed)",
      labelNames: ["outcome"],
      buckets: PASS_BUCKETS,
      registers,
    });
    this.#taskDuration = new Histogram({
      name: "tributary_reconciler_task_duration_seconds",
      help: "Duration of each reconciler pass task in this process (automation, observations, backfills, alerts, openlineage, ...), by task and outcome",
      labelNames: ["task", "outcome"],
      buckets: PASS_BUCKETS,
      registers,
    });
    this.#dispatched = new Counter({
      name: "tributary_reconciler_dispatched_steps_total",
      help: "Steps the reconciler in this process claimed and handed to executors",
      registers,
    });
    this.#dispatchLatency = new Histogram({
      name: "tributary_dispatch_latency_seconds",
      help: "Time from a step becoming runnable (scheduled) to being handed to an executor (queued), per try queued since this process started",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Gauge<L>({ name, help, labelNames, registers });
    this.#steps = gauge("tributary_steps", "Unfinished steps by state (finished steps are history and not counted)", ["state"]);
    this.#queueDepth = gauge(
      "tributary_queue_depth",
      "Scheduled steps waiting for a slot, by executor kind and queue (empty: the executor's default queue)",
      ["executor", "queue"],
    );
    this.#runs = gauge("tributary_runs", "Runs that have not ended, by status (queued, running)", ["status"]);
    this.#poolSlots = gauge("tributary_pool_slots", "Slots of each pool", ["pool"]);
    this.#poolOccupied = gauge("tributary_pool_occupied_slots", "Slots of each pool taken by queued and running steps", ["pool"]);
    this.#triggersWaiting = gauge("tributary_triggers_waiting", "Triggers (deferred steps' waits, source observations) waiting, by kind", [
      "kind",
    ]);
    this.#triggersDue = gauge("tributary_triggers_due", "Waiting triggers whose next check is due now (the triggerers' backlog), by kind", [
      "kind",
    ]);
    this.#triggers = gauge("tributary_triggers", "Triggers by kind and status (waiting, fired, failed, timed_out, canceled)", [
      "kind",
      "status",
    ]);
    this.#poolQueued = gauge("tributary_pool_queued_steps", "Scheduled steps waiting for a slot, by pool", ["pool"]);
    this.#handedOver = gauge(
      "tributary_executor_queued_steps",
      "Steps handed to an executor and not started yet, by executor kind and queue (empty: the executor's default queue)",
      ["executor", "queue"],
    );
    this.#rowEstimates = gauge(
      "tributary_table_rows_estimate",
      "Planner row estimates of the history tables (pg_class.reltuples, refreshed by ANALYZE)",
      ["table"],
    );
    const dependencies = options.dependencies;
    if (dependencies) {
      new Gauge({
        name: "tributary_dependency_up",
        help: "Whether this process reaches each dependency now (1) or not (0): postgres, redis, api, object-store",
        labelNames: ["dependency"],
        registers,
        collect() {
          this.reset();
          for (const d of dependencies()) this.set({ dependency: d.name }, d.up ? 1 : 0);
        },
      });
      new Gauge({
        name: "tributary_dependency_outages_total",
        help: "Outages of each dependency this process has seen since it started",
        labelNames: ["dependency"],
        registers,
        collect() {
          this.reset();
          for (const d of dependencies()) this.set({ dependency: d.name }, d.outages);
        },
      });
    }
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: "tributary_" });
  }

  /** Records one reconciler pass; pass it as the reconciler's `onPass`. */
  readonly observeReconcilerPass = (durationMs: number, report: PassReport): void => {
    this.#passDuration.observe({ outcome: report.failed ? "failed" : "ok" }, durationMs / 1000);
    this.#dispatched.inc(report.dispatched);
    for (const t of report.tasks ?? [])
      this.#taskDuration.observe({ task: t.name, outcome: t.failed ? "failed" : "ok" }, t.durationMs / 1000);
  };

  /** The content type of {@link render}'s text (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Reads the database and renders every metric in the Prometheus text format. */
  render(): Promise<string> {
    const scrape = this.#previous.then(() => this.#scrape());
    this.#previous = scrape.catch(() => undefined);
    return scrape;
  }

  async #scrape(): Promise<string> {
    const store = this.#store;
    if (!store) return this.registry.metrics();
    const snapshot = await store.snapshot(this.#clock());
    const latencies = await store.dispatchLatencies({ afterTryId: this.#afterTryId, since: this.#since, limit: this.#dispatchBatch });
    const triggers = await store.triggerCounts(this.#settledUpTo, this.#settleNext);
    this.#afterTryId = latencies.lastTryId;
    for (const ms of latencies.latenciesMs) this.#dispatchLatency.observe(ms / 1000);
    this.#setGauges(snapshot);
    this.#setTriggerCounts(triggers);
    return this.registry.metrics();
  }

  #setTriggerCounts(r: TriggerStatusCounts): void {
    const totals = new Map([...this.#settledTriggers].map(([key, c]) => [key, { ...c }]));
    for (const c of r.counts) {
      const key = `${c.kind}\u0000${c.status}`;
      const total = totals.get(key) ?? { kind: c.kind, status: c.status, n: 0 };
      total.n += c.triggers;
      totals.set(key, total);
      if (c.settled > 0) {
        const settled = this.#settledTriggers.get(key) ?? { kind: c.kind, status: c.status, n: 0 };
        settled.n += c.settled;
        this.#settledTriggers.set(key, settled);
      }
    }
    const below = r.settledBelow ?? this.#settledUpTo;
    this.#settledUpTo = Math.max(this.#settledUpTo, Math.min(this.#settleNext, below));
    this.#settleNext = Math.max(this.#settledUpTo, below);
    this.#triggers.reset();
    for (const t of totals.values()) this.#triggers.set({ kind: t.kind, status: t.status }, t.n);
  }

  #setGauges(s: MetricsSnapshot): void {
    const gauges = [this.#steps, this.#queueDepth, this.#poolQueued, this.#handedOver, this.#runs, this.#poolSlots, this.#poolOccupied];
    for (const g of [...gauges, this.#triggersWaiting, this.#triggersDue, this.#rowEstimates]) {
      g.reset();
    }
    for (const [state, n] of Object.entries(s.stepsByState)) this.#steps.set({ state }, n);
    for (const q of s.queueDepth) this.#queueDepth.set({ executor: q.executor, queue: q.queue ?? "" }, q.steps);
    for (const q of s.queuedByPool) this.#poolQueued.set({ pool: q.pool }, q.steps);
    for (const q of s.handedOver) this.#handedOver.set({ executor: q.executor, queue: q.queue ?? "" }, q.steps);
    for (const [status, n] of Object.entries(s.runsByStatus)) this.#runs.set({ status }, n);
    for (const p of s.pools) {
      this.#poolSlots.set({ pool: p.name }, p.slots);
      this.#poolOccupied.set({ pool: p.name }, p.occupied);
    }
    for (const t of s.waitingTriggers) {
      this.#triggersWaiting.set({ kind: t.kind }, t.waiting);
      this.#triggersDue.set({ kind: t.kind }, t.due);
    }
    for (const e of s.tableRowEstimates) this.#rowEstimates.set({ table: e.table }, e.rows);
  }
}

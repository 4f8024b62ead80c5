import type { AlertStore, DefinitionStore, GraphCache } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";
import { AlertDelivery } from "./alert-delivery.js";
import { AlertRouter } from "./alert-router.js";
import { DEFAULT_ALERTS_CONFIG, type AlertsConfig } from "./alerts-config.js";
import { DeadlineMonitor } from "./deadline-monitor.js";

export interface AlertsTaskOptions {
  readonly store: AlertStore;
  readonly graphs: Pick<GraphCache, "current">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  /** Sinks, routes and delivery policy (default: everything to the log sink). */
  readonly config?: AlertsConfig;
  /** Where the log sink writes its lines (default stderr). */
  readonly logLine?: (line: string) => void;
  /** Overrides the router built from `config` (tests, embedding). */
  readonly router?: AlertRouter;
  readonly clock?: () => Date;
  /** Checks at most this often (default 1 s); passes in between do nothing. */
  readonly intervalMs?: number;
  readonly maxDeadlinePartitionsPerCheck?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/**
 * The reconciler's alerts work, each pass (at most every `intervalMs`):
 * records alerts for definitions files that stopped loading and for
 * partitions past their deadline, then sends due alerts. Failed steps need
 * nothing here: the run store records their alert in the transaction that
 * fails them. Sending runs in the background so a slow webhook never holds
 * up dispatching steps; one delivery round at a time per task.
 *
 * @example
 * import type { Kysely } from "kysely";
 * import { PgAlertStore, type Database, type DefinitionStore, type GraphCache } from "../../storage/index.js";
 * // given db: Kysely<Database>, graphs: GraphCache, definitions: DefinitionStore, config: AlertsConfig, options: ReconcilerOptions
 * new Reconciler({ ...options, tasks: [new AlertsTask({ store: new PgAlertStore(db), graphs, definitions, config })] });
 */
export class AlertsTask implements ReconcilerTask {
  readonly name = "alerts";
  private readonly deadlines: DeadlineMonitor;
  private readonly delivery: AlertDelivery;
  private readonly log: NonNullable<AlertsTaskOptions["log"]>;
  private lastRun: number | undefined;
  private delivering: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: AlertsTaskOptions) {
    const config = options.config ?? DEFAULT_ALERTS_CONFIG;
    const router = options.router ?? AlertRouter.fromConfig(config, options.logLine);
    this.deadlines = new DeadlineMonitor({
      store: options.store,
      graphs: options.graphs,
      definitions: options.definitions,
      ...(options.maxDeadlinePartitionsPerCheck ? { maxPartitionsPerCheck: options.maxDeadlinePartitionsPerCheck } : {}),
    });
    this.delivery = new AlertDelivery({
      store: options.store,
      router,
      delivery: config.delivery,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    this.log = options.log ?? ((level, message) => process.stderr.write(`[${level}] ${message}\n`));
  }

  async run(now: Date): Promise<void> {
    if (this.stopped) return;
    const t = now.getTime();
    // A clock that went backwards must not pause alerts until it catches up.
    if (this.lastRun !== undefined && t - this.lastRun < (this.options.intervalMs ?? 1_000) && t >= this.lastRun) return;
    this.lastRun = t;
    const failures: string[] = [];
    await this.options.store.recordLoadErrors(now).catch((err: unknown) => failures.push(`definitions files: ${describe(err)}`));
    await this.deadlines.check(now).catch((err: unknown) => failures.push(`deadlines: ${describe(err)}`));
    this.delivering ??= this.delivery
      .deliver()
      .then((r) => {
        if (r.failed > 0) this.log("warn", `${r.failed} alert(s) could not be delivered and were given up (see the alerts query)`);
      })
      .catch((err: unknown) => this.log("error", `alert delivery failed: ${describe(err)}`))
      .finally(() => (this.delivering = undefined));
    if (failures.length > 0) throw new Error(`alerts: ${failures.join("; ")}`);
  }

  /** Stops starting work and waits for a delivery round in progress (call after the reconciler stopped). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.delivering;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

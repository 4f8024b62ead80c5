import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { launchBackfill } from "../api/index.js";
import type { Executor, StepDispatch } from "../execution/index.js";
import { definitionsImporter, loadBullmq, LocalExecutor, StoreExecutionBackend, TransactionalExecutor } from "../executor/index.js";
import {
  AlertsTask,
  AutomationTask,
  BackfillTask,
  ErasureTask,
  HistoryArchiveTask,
  lineageSinkFor,
  LogRetentionTask,
  ObservationsTask,
  OpenLineageTask,
  OutputDeletionsTask,
  OutputRetentionTask,
  Reconciler,
  type ReconcilerOptions,
} from "../reconciler/index.js";
import {
  PgAutomationStore,
  PgErasureStore,
  PgHistoryArchiveStore,
  PgLineageStore,
  PgLogRetentionStore,
  PgObservationStore,
  PgOpenLineageStore,
  PgOutputDeletionStore,
  PgOutputRetentionStore,
  PgTriggerStore,
  PgTryTokenStore,
} from "../storage/index.js";
import { logOutagesOnce, reportOutages } from "../health/index.js";
import { startTriggerer } from "./triggerer-start.js";
import type { Runtime } from "./runtime.js";
import type { EraseHook } from "../sdk/index.js";

/** The reconciler's default: steps queued this long without starting are handed out again. */
const DEFAULT_QUEUED_TIMEOUT_MS = 300_000;

export interface ExecutionOptions {
  /** Where steps of `executor: "local"` assets run: this process's worker processes (default) or the BullMQ fleet. */
  readonly localSteps?: "processes" | "workers";
  /** Worker processes of the local executor (default: the number of cores). */
  readonly processes?: number;
  readonly concurrencyPerProcess?: number;
  readonly zombieAfterMs?: number;
  readonly queuedTimeoutMs?: number;
  /** Queued steps of a reconciler silent this long are handed out again (default 30 s). */
  readonly presumedDeadAfterMs?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
  /** Evaluate automation conditions (dev and reconciler; not the in-process run of a one-off command). */
  readonly automation?: boolean;
  /** Also check deferred steps' triggers here (a one-off in-process run has no `tributary triggerer` to do it). */
  readonly triggerer?: boolean;
  /** See StartTriggererOptions.kindFiles. */
  readonly triggerKindFiles?: readonly string[];
  /** Called after every reconciler pass (the API's /metrics). */
  readonly onPass?: ReconcilerOptions["onPass"];
}

export interface Execution {
  readonly reconciler: Reconciler;
  readonly executor: Executor;
  stop(options?: { graceMs?: number }): Promise<void>;
}

/** Starts a reconciler and the local executor in this process (what `dev` and in-process commands run). */
export async function startExecution(runtime: Runtime, givenOptions: ExecutionOptions = {}): Promise<Execution> {
  // Lines that only say Postgres is away are the health view's to report, once per outage.
  const options: ExecutionOptions = givenOptions.log
    ? { ...givenOptions, log: logOutagesOnce(runtime.health, "postgres", givenOptions.log) }
    : givenOptions;
  const dirs = { definitionsDir: runtime.settings.definitionsDir, logsDir: runtime.logsDir };
  // The reconciler holds the steps its in-process executors claim until they start (see ClaimHolder).
  const reconcilerId = `reconciler-${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const logError = (err: unknown, what: string) => options.log?.("error", `${what}: ${(err as Error)?.message ?? String(err)}`);
  const backend = new StoreExecutionBackend({
    runs: runtime.runs,
    definitions: runtime.definitions,
    graphs: runtime.graphs,
    outputStore: runtime.outputStore,
    followUp: { executor: "local", dirs, holder: reconcilerId },
  });
  const executor = new LocalExecutor(backend, {
    processes: options.processes ?? os.availableParallelism(),
    ...(options.concurrencyPerProcess ? { concurrencyPerProcess: options.concurrencyPerProcess } : {}),
    definitionsDir: runtime.settings.definitionsDir,
    ...(options.log ? { onError: reportOutages(runtime.health, "postgres", logError) } : {}),
  });
  // Assets with `executor: "transactional"` run in this process, each in a transaction on the metadata database
  // that also records its completion (docs/transactional.md); under PGlite their steps fail, saying why.
  const transactional = new TransactionalExecutor(
    new StoreExecutionBackend({
      runs: runtime.runs,
      definitions: runtime.definitions,
      graphs: runtime.graphs,
      outputStore: runtime.outputStore,
      followUp: { executor: "transactional", dirs, holder: reconcilerId },
    }),
    {
      database: runtime.database,
      runs: runtime.runs,
      definitionsDir: runtime.settings.definitionsDir,
      ...(options.log ? { onError: reportOutages(runtime.health, "postgres", logError) } : {}),
    },
  );
  // Assets with `executor: "bullmq"` go to Redis queues for `tributary worker` processes, when REDIS_URL is set;
  // each try carries its own execution-API token (valid while the try is active, longer than it may wait queued).
  const tokens = new PgTryTokenStore(runtime.database.db);
  const tokenTtlMs = (options.queuedTimeoutMs ?? DEFAULT_QUEUED_TIMEOUT_MS) + 5 * 60_000;
  // BullMQ and ioredis load only when Redis is configured: they take a noticeable part of a second to load.
  const bullmq = runtime.settings.redisUrl
    ? new (await loadBullmq()).BullmqExecutor({
        redisUrl: runtime.settings.redisUrl,
        ...(runtime.settings.redisPrefix ? { prefix: runtime.settings.redisPrefix } : {}),
        definitionsDir: dirs.definitionsDir,
        logsDir: dirs.logsDir,
        issueTokens: async (steps: readonly StepDispatch[]) =>
          new Map(
            (
              await tokens.issue(
                steps.map((s) => ({ stepId: s.stepId, tryNumber: s.tryNumber })),
                new Date(),
                tokenTtlMs,
              )
            ).map((t) => [t.stepId, t.token]),
          ),
        ...(options.log
          ? {
              onError: reportOutages(runtime.health, "redis", (err: unknown, what: string) =>
                options.log?.("warn", `bullmq: ${what}: ${(err as Error)?.message ?? String(err)}`),
              ),
            }
          : {}),
      })
    : undefined;
  // Alerts: steps failed for good, partitions past their deadline, definitions files that stopped loading.
  const alerts = new AlertsTask({
    store: runtime.alerts,
    graphs: runtime.graphs,
    definitions: runtime.definitions,
    config: runtime.settings.alerts,
    ...(options.log ? { log: options.log, logLine: (line: string) => options.log?.("warn", line) } : {}),
  });
  // Backfills: each finished run wakes the reconciler, which creates the next chunks' runs.
  const backfills = new BackfillTask({
    backfills: runtime.backfills,
    graphs: runtime.graphs,
    definitions: runtime.definitions,
    ...(options.log ? { log: options.log } : {}),
  });
  // Automation: one reconciler at a time holds its lease; the others take over when it stops or dies.
  const automation = options.automation
    ? new AutomationTask({
        store: new PgAutomationStore(runtime.database.db),
        runs: runtime.runs,
        graphs: runtime.graphs,
        definitions: runtime.definitions,
        owner: `automation-${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
        ...(options.log ? { log: options.log } : {}),
      })
    : undefined;
  // Source assets: a waiting observation trigger on each due, unobserved partition (the triggerer checks them).
  const observations = options.automation
    ? new ObservationsTask({ store: new PgObservationStore(runtime.database.db), graphs: runtime.graphs, definitions: runtime.definitions })
    : undefined;
  // Waits past their timeout end even when no triggerer runs (any reconciler or triggerer may end them; it is idempotent).
  const triggerStore = new PgTriggerStore(runtime.database.db, runtime.decisions);
  const waitTimeouts = {
    name: "wait-timeouts",
    run: async (now: Date) => {
      await triggerStore.expire(now);
    },
  };
  // OpenLineage: run events for the steps that ended, when TRIBUTARY_OPENLINEAGE_URL or _FILE is set; one reconciler at a time sends.
  const openLineageConfig = runtime.settings.openLineage;
  const openLineage = openLineageConfig
    ? new OpenLineageTask({
        store: new PgOpenLineageStore(runtime.database.db),
        sink: lineageSinkFor(openLineageConfig),
        namespace: openLineageConfig.namespace,
        owner: `openlineage-${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
        ...(options.log ? { log: options.log } : {}),
      })
    : undefined;
  // Objects of removed outputs (a wipe) that the object store did not delete at once.
  const outputDeletions = new OutputDeletionsTask({
    queue: new PgOutputDeletionStore(runtime.database.db),
    outputStore: runtime.outputStore,
    ...(options.log ? { log: options.log } : {}),
  });
  // Outputs past TRIBUTARY_OUTPUT_RETENTION, or past their asset's own `retention.outputs`.
  const outputRetention = new OutputRetentionTask({
    store: new PgOutputRetentionStore(runtime.database.db),
    retentionMs: runtime.settings.outputRetentionMs,
    graphs: runtime.graphs,
    ...(options.log ? { log: options.log } : {}),
  });
  // Logs of tries past TRIBUTARY_LOG_RETENTION, or past their asset's own `retention.logs`.
  const logRetention = new LogRetentionTask({
    store: new PgLogRetentionStore(runtime.database.db),
    logsDir: runtime.logsDir,
    retentionMs: runtime.settings.logRetentionMs,
    graphs: runtime.graphs,
    ...(options.log ? { log: options.log } : {}),
  });
  // History past TRIBUTARY_HISTORY_RETENTION, or past its assets' own `retention.history`: archived, then deleted.
  const historyArchive = new HistoryArchiveTask({
    store: new PgHistoryArchiveStore(runtime.database.db),
    outputStore: runtime.outputStore,
    logsDir: runtime.logsDir,
    retentionMs: runtime.settings.historyRetentionMs,
    graphs: runtime.graphs,
    ...(options.log ? { log: options.log } : {}),
  });
  // Erasure requests: delete what they reach, call the assets' erase hooks (imported here at their code version),
  // re-materialise through a backfill.
  const definitionsDir = runtime.settings.definitionsDir;
  const importDefinitions = definitionsImporter(definitionsDir);
  const erasures = new ErasureTask({
    store: new PgErasureStore(runtime.database.db),
    archives: new PgHistoryArchiveStore(runtime.database.db),
    deletions: new PgOutputDeletionStore(runtime.database.db),
    outputStore: runtime.outputStore,
    logsDir: runtime.logsDir,
    graphs: runtime.graphs,
    lineage: new PgLineageStore(runtime.database.db),
    definitions: runtime.definitions,
    backfills: {
      launch: async (r) =>
        (
          await launchBackfill(
            { graphs: runtime.graphs, runs: runtime.runs, definitions: runtime.definitions, backfills: runtime.backfills },
            {
              assetKeys: r.assetKeys,
              assetPartitions: r.assetPartitions,
              maxPartitionsPerRun: 100,
              maxConcurrentRuns: 2,
              tags: { "tributary/erasure": r.requestId },
            },
            new Date(),
          )
        ).id,
      status: async (id) => (await runtime.backfills.get(id))?.status,
    },
    importHook: async (asset) => {
      const namespace = await importDefinitions(path.join(definitionsDir, asset.file), asset.codeHash);
      const definition = namespace[asset.exportName] as { erase?: unknown } | undefined;
      return typeof definition?.erase === "function" ? (definition.erase as EraseHook) : undefined;
    },
    ...(options.log ? { log: options.log } : {}),
  });
  // With localSteps "workers", `local` steps go to the fleet too (the local executor then runs nothing).
  const localSteps = options.localSteps === "workers" && bullmq ? bullmq : executor;
  const reconciler = new Reconciler({
    id: reconcilerId,
    holds: localSteps === executor ? ["local", "transactional"] : ["transactional"],
    store: runtime.runs,
    database: runtime.database,
    graphs: runtime.graphs,
    executors: { local: localSteps, transactional, ...(bullmq ? { bullmq } : {}) },
    definitionsDir: runtime.settings.definitionsDir,
    logsDir: runtime.logsDir,
    ...(options.zombieAfterMs ? { zombieAfterMs: options.zombieAfterMs } : {}),
    ...(options.queuedTimeoutMs ? { queuedTimeoutMs: options.queuedTimeoutMs } : {}),
    ...(options.presumedDeadAfterMs ? { holderDeadAfterMs: options.presumedDeadAfterMs } : {}),
    ...(options.log ? { log: options.log } : {}),
    health: runtime.health,
    ...(options.onPass ? { onPass: options.onPass } : {}),
    tasks: [
      ...(automation ? [automation] : []),
      ...(observations ? [observations] : []),
      backfills,
      waitTimeouts,
      alerts,
      ...(openLineage ? [openLineage] : []),
      outputRetention,
      logRetention,
      historyArchive,
      outputDeletions,
      erasures,
    ],
  });
  await reconciler.start();
  // Started in the background: importing the definitions for custom trigger kinds must not delay the run.
  const triggerer = options.triggerer
    ? startTriggerer(runtime, {
        log: options.log ?? (() => undefined),
        ...(options.triggerKindFiles ? { kindFiles: options.triggerKindFiles } : {}),
      }).catch((err: unknown) => {
        options.log?.("error", `the triggerer did not start, deferred steps wait until one runs: ${(err as Error).message}`);
        return undefined;
      })
    : undefined;
  return {
    reconciler,
    executor,
    async stop(stopOptions = {}) {
      await (await triggerer)?.stop();
      await reconciler.stop();
      await automation?.stop().catch(() => undefined);
      await alerts.stop();
      await erasures.idle();
      await historyArchive.idle();
      await openLineage?.stop();
      await Promise.all([executor.close(stopOptions), transactional.close(stopOptions), bullmq?.close()]);
    },
  };
}

import type { HandedOutTry } from "./runs/requeue.js";
import type { AuditEntry } from "./audit-trail.js";
import type { FailureClass, SerializedError } from "../errors/index.js";
import type { StepSettings } from "../graph/index.js";
import type { PartitionState, RunOrigin, RunStatus, StepState } from "./database.js";

/** One step of a run's plan, in plan order: its upstream steps by their index in the plan (always smaller). */
export interface PlannedStepRow {
  readonly assetKey: string;
  /** `""` for an unpartitioned asset. */
  readonly partitionKey: string;
  readonly upstream: readonly number[];
  /** The asset check the step runs, for a check's step. */
  readonly check?: string | undefined;
}

export interface NewRun {
  /** The plan's steps, in topological order. */
  readonly steps: readonly PlannedStepRow[];
  /** The plan as the run keeps it (runs.plan, returned as RunDetail.plan). */
  readonly plan: unknown;
  readonly snapshotVersion: number;
  readonly origin: RunOrigin;
  /** Added to every step's asset priority; backfills pass a negative one. */
  readonly priority?: number;
  readonly tags?: Readonly<Record<string, string>>;
  /** The asset job the run belongs to; with maxActiveRuns, runs of one job wait their turn. */
  readonly jobName?: string | null;
  readonly maxActiveRuns?: number | null;
  readonly maxActiveSteps?: number | null;
  /** Set by schedules, automation and backfills so two reconcilers never create the same run. */
  readonly idempotencyKey?: string | null;
  readonly backfillId?: string | null;
  readonly settings: (assetKey: string) => StepSettings;
}

/** A step the reconciler took out of `scheduled` and handed out (now `queued`). */
export interface ClaimedStep {
  readonly stepId: number;
  readonly runId: string;
  readonly tryNumber: number;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly mapIndex: number;
  readonly executor: string;
  readonly queue: string | null;
  readonly timeoutMs: number | null;
  /**
   * The last try number the step may reach: a user failure of this try is not retried (an infrastructure failure
   * runs again on its own budget, and moves it one later).
   */
  readonly lastTry: number;
  readonly snapshotVersion: number;
  /** The step's fired triggers, oldest first (empty unless it deferred). */
  readonly resumed: readonly FiredTrigger[];
  /** A reschedule-mode wait in progress: when it began. */
  readonly waitStartedAt: Date | null;
  /** The asset check this step runs; null for the asset's own step. */
  readonly checkName: string | null;
  /** A mapped step (mapIndex >= 0): its item and label. */
  readonly mapItem: unknown;
  readonly mapLabel: string | null;
}

export interface ClaimOptions {
  readonly now: Date;
  /** Free slots per executor kind; steps of other executors stay scheduled. */
  readonly capacity: Readonly<Record<string, number>>;
  /** Most steps to consider in one claim. */
  readonly limit: number;
  /** Share of each claim reserved for the longest-waiting steps whatever their priority (0–1). */
  readonly agingShare?: number;
  /** Slots given to a pool that a step names but nobody created. */
  readonly defaultPoolSlots?: number;
  /** The process that starts claimed steps of these kinds itself: see ClaimHolder. */
  readonly holder?: ClaimHolder;
}

/**
 * A reconciler whose in-process executors (local, transactional) start the steps it claims. Until a step starts,
 * its try is recorded as held by the reconciler (`steps.worker_id`); if the reconciler stops heartbeating
 * (`component_heartbeats`), any reconciler hands the try out again instead of waiting for the queued timeout.
 */
export interface ClaimHolder {
  readonly id: string;
  /** Executor kinds that run in the holder's process; steps of other kinds (queues) are not held. */
  readonly kinds: readonly string[];
}

export interface StepStart {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly workerId: string;
  readonly hostname: string;
  readonly pid: number;
  readonly startedAt: Date;
}

/** One mapped step of a run. */
export interface MappedStepRef {
  readonly runId: string;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly mapIndex: number;
}

export interface ClearedMappedStep {
  readonly run: RunSummary;
  readonly stepId: number;
  /** Every step set to run again, the mapped step first. */
  readonly cleared: readonly {
    readonly stepId: number;
    readonly assetKey: string;
    readonly partitionKey: string;
    readonly mapIndex: number;
    readonly checkName: string | null;
  }[];
}

/** Where a step's output lives: inline JSON text in the database, or a reference into object storage. */
export type StoredOutput = { readonly inline: string; readonly sizeBytes: number } | { readonly ref: string; readonly sizeBytes: number };

export interface LineageInput {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly eventId: number | null;
}

export type StepCompletion = {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly startedAt: Date | null;
  readonly endedAt: Date;
  readonly workerId: string | null;
  readonly logRef: string | null;
  /** Where the try ran, when its start was not reported separately. */
  readonly hostname?: string | null | undefined;
  readonly pid?: number | null | undefined;
  /** Ends a `deferred` step (its trigger timed out) instead of a queued or running one. */
  readonly deferred?: boolean | undefined;
} & (
  | {
      readonly outcome: "success";
      readonly output: StoredOutput;
      readonly dataVersion: string;
      readonly codeVersion: string | null;
      readonly inputs: readonly LineageInput[];
    }
  /**
   * The try failed. `failureClass` says whose fault it was: a `user` failure is retried under the asset's retry
   * policy, an `infrastructure` one under the infrastructure budget, without using up the asset's retries.
   */
  | { readonly outcome: "failed"; readonly error: SerializedError; readonly retryable: boolean; readonly failureClass: FailureClass }
  | { readonly outcome: "skipped"; readonly reason: string }
  /** The asset left the definitions while the run was open. */
  | { readonly outcome: "removed"; readonly reason: string }
  /**
   * The step fanned out over `count` (> 0) items: one mapped step per item joins the run, and the step waits
   * for them, then gathers their outputs (in item order) into the partition's materialisation.
   */
  | {
      readonly outcome: "expanded";
      /** JSON array of the items. */
      readonly itemsJson: string;
      readonly labels: readonly (string | null)[] | null;
      readonly count: number;
      readonly codeVersion: string | null;
      /** What the expanding try read: the gathered materialisation's lineage. */
      readonly inputs: readonly LineageInput[];
    }
  /** The try deferred: the step waits on this trigger (created in the same transaction) without a slot. */
  | { readonly outcome: "deferred"; readonly trigger: DeferredTrigger }
  /** A reschedule-mode wait: not there yet; the step is `up_for_reschedule` until `nextCheckAt`. */
  | { readonly outcome: "rescheduled"; readonly nextCheckAt: Date; readonly waitStartedAt: Date }
  /**
   * The executor gave the try back before it started (it was closing): the
   * step is handed out again, and the try does not count against its retry
   * policy. Had it started after all, it is an infrastructure failure.
   */
  | { readonly outcome: "released"; readonly error: SerializedError }
  /**
   * A check's step ran its check: the verdict (a check that threw is a failed
   * verdict carrying the error). A failed blocking check fails the step (its
   * readers end upstream_failed); any other verdict ends it in success.
   */
  | {
      readonly outcome: "check";
      readonly check: { readonly name: string; readonly blocking: boolean; readonly severity: "warn" | "error" };
      readonly passed: boolean;
      readonly metadata: Readonly<Record<string, unknown>>;
      readonly error: SerializedError | null;
      /** The materialisation event of the partition the check read; null when it read none. */
      readonly eventId: number | null;
    }
);

/** The trigger a deferring try leaves behind; templates are rendered by the triggerer with the partition. */
export interface DeferredTrigger {
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly timeoutAt: Date;
  readonly pollIntervalMs: number;
  readonly softFail: boolean;
  /** The partition's window (ISO), for `{start}`/`{end}` templates. */
  readonly partitionWindow: { readonly start: string; readonly end: string } | null;
}

/** A fired trigger of a step, handed back when the step runs again. */
export interface FiredTrigger {
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly payload: unknown;
}

export interface CompletionSummary {
  /** Completions applied (stale ones — an older try, a step no longer active — are ignored). */
  readonly applied: number;
  readonly ignored: readonly { readonly stepId: number; readonly tryNumber: number; readonly reason: string }[];
  /** Steps that became scheduled (downstream steps and retries). */
  readonly scheduled: number;
  readonly finishedRuns: readonly { readonly runId: string; readonly status: RunStatus }[];
  /** With a FollowUp: newly runnable steps already handed out to that executor. */
  readonly claimed: readonly ClaimedStep[];
}

/** Lets a completion hand the steps it made runnable straight to the reporting executor. */
export interface FollowUp {
  readonly executor: string;
  /** Most steps to hand out (the executor's free slots). */
  readonly limit: number;
  readonly defaultPoolSlots?: number;
  /** The reconciler in whose process the executor runs: the steps claimed are held by it (see ClaimHolder). */
  readonly holder?: string;
}

export interface HousekeepingOptions {
  readonly now: Date;
  /** Running steps whose heartbeat is older than this are zombies. */
  readonly zombieAfterMs: number;
  /** Queued steps not started within this are handed out again. */
  readonly queuedTimeoutMs: number;
  /**
   * Queued steps held by a reconciler whose heartbeat is older than this (or that stopped) are handed out again
   * (see ClaimHolder); without it they wait for the queued timeout.
   */
  readonly holderDeadAfterMs?: number;
  /**
   * When the database became reachable again after an outage, as the caller saw it. A time limit above that has not
   * passed since then is not applied: nobody could write a heartbeat or a start meanwhile, so a silence that the
   * outage explains is not held against a live worker or reconciler.
   */
  readonly reachableSince?: Date;
  readonly random?: () => number;
}

export interface HousekeepingResult {
  readonly retriesDue: number;
  readonly zombies: number;
  readonly requeued: number;
  /** Queued steps handed out again because the reconciler holding them is gone. */
  readonly holderLost: number;
  readonly runsStarted: number;
  /** Active steps of canceled runs that their executors must abort. */
  readonly toAbort: readonly { readonly stepId: number; readonly executor: string }[];
  readonly runsCanceled: number;
}

export interface RunSummary {
  readonly id: string;
  readonly status: RunStatus;
  readonly origin: RunOrigin;
  readonly snapshotVersion: number;
  readonly jobName: string | null;
  readonly priority: number;
  readonly tags: Readonly<Record<string, unknown>>;
  readonly stepsTotal: number;
  readonly stepsDone: number;
  readonly stepsFailed: number;
  readonly stepsActive: number;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly endedAt: Date | null;
  readonly cancelRequestedAt: Date | null;
  readonly backfillId: string | null;
  /** 1 as planned; bumped when steps join the run (a fan-out) or are cleared inside it. */
  readonly planVersion: number;
}

export interface StepTryRecord {
  readonly tryNumber: number;
  readonly state: StepState;
  readonly workerId: string | null;
  readonly hostname: string | null;
  readonly pid: number | null;
  readonly queuedAt: Date | null;
  readonly startedAt: Date | null;
  readonly endedAt: Date | null;
  readonly durationMs: number | null;
  readonly error: unknown;
  /** Whose fault the try's failure was; null for a try that did not fail. */
  readonly failureClass: FailureClass | null;
  readonly logRef: string | null;
}

export interface StepRecord {
  readonly id: number;
  readonly runId: string;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly mapIndex: number;
  /** The asset check this step runs; null for the asset's own step. */
  readonly checkName: string | null;
  /** A mapped step's readable label (mapIndex >= 0), when the asset gives one. */
  readonly mapLabel: string | null;
  /** A step that fanned out: how many mapped steps it expanded into (it gathers them); null otherwise. */
  readonly mapCount: number | null;
  readonly state: StepState;
  readonly tryNumber: number;
  readonly maxTries: number;
  readonly pool: string;
  readonly priority: number;
  readonly scheduledAt: Date | null;
  readonly queuedAt: Date | null;
  readonly startedAt: Date | null;
  readonly endedAt: Date | null;
  readonly nextRetryAt: Date | null;
  readonly workerId: string | null;
  readonly skipReason: string | null;
  readonly error: unknown;
  readonly upstream: readonly number[];
  readonly tries: readonly StepTryRecord[];
}

export interface RunDetail extends RunSummary {
  readonly plan: unknown;
  readonly steps: readonly StepRecord[];
}

export interface OutputRecord {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly eventId: number | null;
  readonly dataVersion: string | null;
  readonly inline: unknown;
  readonly ref: string | null;
  readonly hasOutput: boolean;
  /** A fanned-out partition: its value is these outputs of its mapped steps, in item order. */
  readonly gathered?: readonly GatheredItem[];
}

/** One mapped step's output inside a gathered value. */
export interface GatheredItem {
  readonly inline: unknown;
  readonly ref: string | null;
  readonly hasOutput: boolean;
}

/**
 * Runs, steps and their state machine. Every transition commits together with
 * its consequences (tries, events, partition status, downstream counters, pool
 * slots, run counters) in one transaction; claims use FOR UPDATE SKIP LOCKED,
 * so any number of reconcilers may share the database.
 */
export interface RunStore {
  createRun(run: NewRun, now: Date, audit?: AuditEntry): Promise<{ runId: string; created: boolean }>;
  /** Several runs in one transaction: all are created, or (on any error) none. In the order given. */
  createRuns(runs: readonly NewRun[], now: Date, audit?: AuditEntry): Promise<{ runId: string; created: boolean }[]>;
  claimRunnable(options: ClaimOptions): Promise<ClaimedStep[]>;
  markStarted(starts: readonly StepStart[], now: Date): Promise<void>;
  heartbeat(steps: readonly { stepId: number; tryNumber: number }[], now: Date): Promise<void>;
  completeSteps(completions: readonly StepCompletion[], now: Date, random?: () => number, followUp?: FollowUp): Promise<CompletionSummary>;
  housekeeping(options: HousekeepingOptions): Promise<HousekeepingResult>;
  /** Tries of these executor kinds handed out before `before` and not started yet, oldest first. */
  handedOut(executors: readonly string[], before: Date, limit: number): Promise<HandedOutTry[]>;
  /**
   * Tries an executor lost before they started (see Executor.lostTries), scheduled again at once as new tries that
   * do not count against the retry policy, giving back their pool slots. Returns how many were still queued.
   */
  requeueLost(tries: readonly { readonly stepId: number; readonly tryNumber: number }[], now: Date, reason: string): Promise<number>;
  /** Says this reconciler is alive (`component_heartbeats`): the steps it holds stay its own (see ClaimHolder). */
  holderAlive(holder: { readonly id: string; readonly hostname: string; readonly pid: number }): Promise<void>;
  /** This reconciler stopped: the steps it still holds are handed out again by the next housekeeping. */
  holderStopped(id: string): Promise<void>;
  requestCancel(runId: string, now: Date, audit?: AuditEntry): Promise<RunSummary>;
  /**
   * Clears one mapped step inside its run: it runs again (with a fresh retry budget), and the steps after it
   * in the run (its expanded step, which gathers again, and their downstream steps) wait for it; the run
   * reopens. Refused, writing nothing, when the step or a step after it is still active, or when a later
   * run has materialised (or is materialising) one of those partitions: the old run must not overwrite it.
   */
  clearMappedStep(target: MappedStepRef, now: Date, audit?: AuditEntry): Promise<ClearedMappedStep>;
  getRun(runId: string): Promise<RunDetail | undefined>;
  /** The steps of each run (as getRun gives them), for a page of runs at once; runs without steps are absent. */
  stepsOfRuns(runIds: readonly string[]): Promise<ReadonlyMap<string, readonly StepRecord[]>>;
  /** The run without its steps and plan: cheap enough to poll. */
  getRunSummary(runId: string): Promise<RunSummary | undefined>;
  listRuns(options?: { limit?: number; status?: RunStatus; before?: Date; backfillId?: string }): Promise<RunSummary[]>;
  /** The latest materialisation (event and output) of each (asset, partition). */
  latestOutputs(partitions: readonly { assetKey: string; partitionKey: string }[]): Promise<OutputRecord[]>;
  /** Materialised partition keys per asset. */
  materializedKeys(assetKeys: readonly string[]): Promise<Map<string, string[]>>;
  /** Partition keys of an asset whose partition_status is `status` (e.g. the failed ones, to rerun). */
  partitionKeysWithStatus(assetKey: string, status: PartitionState): Promise<string[]>;
}

/** The completion of a claimed step whose asset left the definitions while its run was open. */
export function removedAssetCompletion(claim: ClaimedStep, now: Date): StepCompletion {
  return {
    stepId: claim.stepId,
    tryNumber: claim.tryNumber,
    startedAt: null,
    endedAt: now,
    workerId: null,
    logRef: null,
    outcome: "removed",
    reason:
      claim.checkName === null
        ? `asset "${claim.assetKey}" is no longer in the definitions`
        : `check "${claim.checkName}" of asset "${claim.assetKey}" is no longer in the definitions`,
  };
}

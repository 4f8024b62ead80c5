import type { Authenticator, Caller, Guard } from "../access/index.js";
import type {
  AlertStore,
  AssetPauseState,
  BackfillRecord,
  BackfillStore,
  CheckResultStore,
  ErasureReport,
  ErasureRequestRecord,
  ErasureState,
  HistoryArchiveDay,
  RestoredHistory,
  MaterializationQueryStore,
  PartitionStatusStore,
  PauseStore,
  PauseTarget,
  PoolRecord,
  SetPoolSlots,
  RunSummary,
  MappedStepRef,
  ClearedMappedStep,
  AuditQuery,
  AuditEvent,
  RunStore,
  TriggerQueryStore,
} from "../storage/index.js";
import type { Catalog } from "./catalog.js";
import type { AddedDynamicPartitions } from "./commands/add-dynamic-partitions.js";
import type { AutomationEvaluations, AutomationEvaluationsRequest } from "./commands/automation-evaluations.js";
import type { ClearedRun, ClearPartitionsRequest } from "./commands/clear-partitions.js";
import type { LaunchBackfillRequest } from "./commands/launch-backfill.js";
import type { LaunchedRun, LaunchRunRequest } from "./commands/launch-run.js";
import type { ReportAssetEventRequest, ReportedAssetEvent } from "./commands/report-event.js";
import type { RunChecksRequest } from "./commands/run-checks.js";
import type { PartitionWipeResult, WipePartitionsRequest } from "./commands/wipe-partitions.js";
import type { ErasureImpact, ErasureImpactRequest } from "./lineage/erasure-impact.js";
import type { ErasurePlan, RequestErasureInput } from "./commands/request-erasure.js";
import type { Lineage, LineageRequest } from "./lineage/lineage.js";
import type { RestoreHistoryInput } from "./commands/restore-history.js";

/**
 * Everything the API serves, in groups: built once by the composition root;
 * GraphQL reads them all, every other transport only the groups it uses
 * (e.g. `Pick<ApiServices, "runs" | "assets">`).
 */
export interface ApiServices {
  readonly runs: RunsApi;
  readonly backfills: BackfillsApi;
  readonly assets: AssetsApi;
  readonly automation: AutomationApi;
  readonly lineage: LineageApi;
  /** Who may call: credentials, sign-in, and the audit trail. */
  readonly access: AccessApi;
  /** Triggers (what deferred steps and source assets wait for), for `triggers`, `triggerCounts` and Step.waitingFor. */
  readonly triggers: TriggerQueryStore;
  /** Pools with their occupancy, for `pools` and `setPoolSlots`. */
  readonly pools: PoolsApi;
  /** Archived history: the days archived, and bringing one back. */
  readonly history: HistoryApi;
  /** Stored alerts, for the `alerts` query. */
  readonly alerts: Pick<AlertStore, "list">;
  /** The current time as requests see it (partition status, existing partitions, cancel times); tests and benchmarks fix it. */
  readonly now: () => Date;
}

/** Runs: reading them, and the commands that create or change them. */
export interface RunsApi {
  /** Runs and their steps: get, list, cancel, clear a mapped step. */
  readonly store: RunStore;
  /** Materialisation history (Asset.materializations), filtered run pages (runs, runsConnection) and the assets of listed runs. */
  readonly reads: MaterializationQueryStore;
  /** Plans and creates a run of the selected partitions of the selected assets. */
  launch(request: LaunchRunRequest, guard: Guard): Promise<LaunchedRun>;
  /** Clears partitions of an asset and reruns them. */
  clearPartitions(request: ClearPartitionsRequest, guard: Guard): Promise<ClearedRun>;
  /** Runs an asset's checks again on the latest materialisation of chosen partitions. */
  runChecks(request: RunChecksRequest, guard: Guard): Promise<LaunchedRun>;
  /** Asks a run to stop: its queued steps end canceled, running ones are told to abort. */
  cancel(runId: string, guard: Guard): Promise<RunSummary>;
  /** Runs one mapped step of a run again, inside that run. */
  clearMappedStep(target: MappedStepRef, guard: Guard): Promise<ClearedMappedStep>;
}

/** Backfills: reading them, launching, cancelling, resuming and retrying them. */
export interface BackfillsApi {
  /** Stored backfills, for the `backfills` and `backfill(id)` queries and Run.backfill. */
  readonly store: Pick<BackfillStore, "get" | "list">;
  launch(request: LaunchBackfillRequest, guard: Guard): Promise<BackfillRecord>;
  /** Stops creating runs and cancels the backfill's runs in flight. */
  cancel(id: string, guard: Guard): Promise<BackfillRecord>;
  /** Continues a canceled backfill where it stopped. */
  resume(id: string, guard: Guard): Promise<BackfillRecord>;
  /** Re-runs the failed partitions of an ended backfill as a new backfill. */
  retryFailures(id: string, guard: Guard): Promise<BackfillRecord>;
}

/** Assets: the current definitions, their partitions' status, check results, and what is reported or added about them. */
export interface AssetsApi {
  /** The current asset graph (rebuilt when the stored definitions change), and dynamic partition keys. */
  readonly catalog: Catalog;
  /** Per-file load status of the definitions. */
  definitionFiles(): Promise<DefinitionFileView[]>;
  /** Derived partition status (counts, ranges, staleness) for Asset.partitionStatus and Asset.partitions. */
  readonly partitionStatus: PartitionStatusStore;
  /** Recorded check results, for Asset.checks, Asset.checkResults and Run.checkResults. */
  readonly checkResults: CheckResultStore;
  /** Records an external event (validated against the current definitions). */
  reportEvent(request: ReportAssetEventRequest, guard: Guard): Promise<ReportedAssetEvent>;
  /** Adds keys to a dynamic partitions definition. */
  addDynamicPartitions(request: { name: string; keys: readonly string[] }, guard: Guard): Promise<AddedDynamicPartitions>;
  /** Removes chosen partitions' statuses, materialisations and outputs: they are missing again. */
  wipePartitions(request: WipePartitionsRequest, guard: Guard): Promise<PartitionWipeResult>;
}

/** Automation: why assets did or did not run, and pausing it. */
export interface AutomationApi {
  /** "Why did / didn't this run?": the latest automation evaluation records of an asset or partition. */
  evaluations(request: AutomationEvaluationsRequest): Promise<AutomationEvaluations>;
  /** Pause state of assets (Asset.paused, a DAG's is_paused). */
  readonly pauses: Pick<PauseStore, "pauseStates">;
  /** Pauses the automation of the target's assets. */
  pause(target: PauseTarget, guard: Guard): Promise<AssetPauseState[]>;
  /** Resumes the automation of the target's assets. */
  resume(target: PauseTarget, guard: Guard): Promise<AssetPauseState[]>;
}

/** Lineage: what was read from what. */
export interface LineageApi {
  /** Static and run-level lineage around an asset partition. */
  around(request: LineageRequest): Promise<Lineage>;
  /** Every derived partition holding data read from source partitions, for erasure requests. */
  erasureImpact(request: ErasureImpactRequest, guard: Guard): Promise<ErasureImpact>;
  /** Erasure requests: recording them (the reconcilers carry them out), their proof reports, retrying failed ones. */
  readonly erasures: ErasuresApi;
}

/** Erasure requests (see requestErasure). */
export interface ErasuresApi {
  request(input: RequestErasureInput, guard: Guard): Promise<ErasurePlan>;
  /** The proof report: ERASURE_NOT_FOUND for an unknown id or one the caller may not view. */
  report(id: string, guard: Guard): Promise<ErasureReport>;
  /** Newest first; only requests whose source asset the caller may view. */
  list(
    options: { readonly limit?: number | undefined; readonly state?: ErasureState | undefined },
    guard: Guard,
  ): Promise<ErasureRequestRecord[]>;
  retry(id: string, guard: Guard): Promise<ErasureRequestRecord>;
}

/** History past its retention, archived to the output store by the reconcilers (see HistoryArchiveTask). */
export interface HistoryApi {
  /** The days with archives, newest first. */
  days(guard: Guard): Promise<HistoryArchiveDay[]>;
  /** Puts a day's archived rows and logs back in place and holds the day out of archival for a while (admin). */
  restore(input: RestoreHistoryInput, guard: Guard): Promise<RestoredHistory>;
}

/** Pools: listing them, and changing their slots (an instance-wide action). */
export interface PoolsApi {
  list(): Promise<PoolRecord[]>;
  setSlots(input: SetPoolSlots, guard: Guard): Promise<PoolRecord>;
}

/** Access control: the authenticator every transport asks, and the audit trail. */
export interface AccessApi {
  readonly authenticator: Authenticator;
  /** A request's Guard for its caller, over the current definitions. */
  guardFor(caller: Caller): Guard;
  /** Audit records, newest first (admins only). */
  auditEvents(query: AuditQuery, guard: Guard): Promise<AuditEvent[]>;
}

export interface DefinitionFileView {
  path: string;
  status: string;
  error: { code: string; message: string; location?: Record<string, unknown> } | null;
  warnings: string[];
  /** Graph problems (cycles, duplicates, unknown deps…) that left definitions of this file out. */
  problems: { code: string; message: string; assetKey: string | null; field: string | null }[];
  loadMs: number | null;
  loadedAt: Date | null;
}

import SchemaBuilder from "@pothos/core";
import type { Catalog } from "../catalog.js";
import type { AddedDynamicPartitions } from "../commands/add-dynamic-partitions.js";
import type { ClearedRun, ClearPartitionsRequest } from "../commands/clear-partitions.js";
import type { AssetPauseState, PartitionStatusStore, PauseStore, PauseTarget, RunStore } from "../../storage/index.js";
import type { AlertStore } from "../../storage/index.js";
import type { LaunchedRun, LaunchRunRequest } from "../commands/launch-run.js";
import type { RunChecksRequest } from "../commands/run-checks.js";
import type { CheckResultStore } from "../../storage/index.js";
import type { ReportAssetEventRequest, ReportedAssetEvent } from "../commands/report-event.js";
import type { LaunchBackfillRequest } from "../commands/launch-backfill.js";
import type { AutomationEvaluations, AutomationEvaluationsRequest } from "../commands/automation-evaluations.js";
import type { BackfillRecord, BackfillStore, PoolStore, TriggerQueryStore } from "../../storage/index.js";
import type { Lineage, LineageRequest } from "../lineage/lineage.js";
import type { ErasureImpact, ErasureImpactRequest } from "../lineage/erasure-impact.js";
import type { MaterializationQueryStore } from "../../storage/index.js"; // GraphQL reads

export interface ApiContext {
  catalog: Catalog;
  /** Per-file load status of the definitions. */
  definitionFiles: () => Promise<DefinitionFileView[]>;
  now: () => Date;
  runs: RunStore;
  launchRun: (request: LaunchRunRequest) => Promise<LaunchedRun>;
  /** Records an external event (validated against the current definitions). */
  reportAssetEvent: (request: ReportAssetEventRequest) => Promise<ReportedAssetEvent>;
  clearPartitions: (request: ClearPartitionsRequest) => Promise<ClearedRun>;
  /** Runs an asset's checks again on the latest materialisation of chosen partitions (runChecks). */
  runChecks: (request: RunChecksRequest) => Promise<LaunchedRun>;
  /** Recorded check results, for Asset.checks, Asset.checkResults and Run.checkResults. */
  checkResults: CheckResultStore;
  addDynamicPartitions: (request: { name: string; keys: readonly string[] }) => Promise<AddedDynamicPartitions>;
  /** Stored alerts, for the `alerts` query. */
  alerts: Pick<AlertStore, "list">;
  /** Derived partition status (counts, ranges, staleness) for Asset.partitionStatus and Asset.partitions. */
  partitionStatus: PartitionStatusStore;
  /** Pause state of assets (Asset.paused), and pausing/resuming their automation. */
  pauses: Pick<PauseStore, "pauseStates">;
  pauseAutomation: (target: PauseTarget) => Promise<AssetPauseState[]>;
  resumeAutomation: (target: PauseTarget) => Promise<AssetPauseState[]>;
  /** Backfills, for the `backfills` and `backfill(id)` queries. */
  backfills: Pick<BackfillStore, "get" | "list">;
  launchBackfill: (request: LaunchBackfillRequest) => Promise<BackfillRecord>;
  cancelBackfill: (id: string) => Promise<BackfillRecord>;
  resumeBackfill: (id: string) => Promise<BackfillRecord>;
  /** Re-runs the failed partitions of an ended backfill as a new backfill. */
  retryBackfillFailures: (id: string) => Promise<BackfillRecord>;
  /** "Why did / didn't this run?": the latest automation evaluation records of an asset or partition. */
  automationEvaluations: (request: AutomationEvaluationsRequest) => Promise<AutomationEvaluations>;
  /** Triggers (what deferred steps and source assets wait for), for `triggers`, `triggerCounts` and Step.waitingFor. */
  triggers: TriggerQueryStore;
  /** Pools with their occupancy, for `pools` and `setPoolSlots`. */
  pools: PoolStore;
  /** Static and run-level lineage around an asset partition. */
  lineage: (request: LineageRequest) => Promise<Lineage>;
  /** Every derived partition holding data read from source partitions, for erasure requests. */
  erasureImpact: (request: ErasureImpactRequest) => Promise<ErasureImpact>;
  /** Materialisation history (Asset.materializations) and filtered run pages (runs, runsConnection). */
  reads: MaterializationQueryStore;
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

export const builder = new SchemaBuilder<{
  Context: ApiContext;
  Scalars: {
    JSON: { Input: unknown; Output: unknown };
    DateTime: { Input: Date; Output: Date };
  };
}>({});

builder.scalarType("JSON", {
  description: "Any JSON value",
  serialize: (v) => v,
  parseValue: (v) => v,
});

builder.scalarType("DateTime", {
  description: "An instant, as an ISO 8601 string in UTC",
  serialize: (v) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString()),
  parseValue: (v) => {
    const d = new Date(String(v));
    if (Number.isNaN(d.getTime())) throw new TypeError(`"${String(v)}" is not an ISO 8601 instant`);
    return d;
  },
});

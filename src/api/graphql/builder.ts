import SchemaBuilder from "@pothos/core";
import type { Catalog } from "../catalog.js";
import type { AddedDynamicPartitions } from "../commands/add-dynamic-partitions.js";
import type { ClearedRun, ClearPartitionsRequest } from "../commands/clear-partitions.js";
import type { RunStore } from "../../storage/index.js";
import type { LaunchedRun, LaunchRunRequest } from "../commands/launch-run.js";
import type { ReportAssetEventRequest, ReportedAssetEvent } from "../commands/report-event.js";

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
  addDynamicPartitions: (request: { name: string; keys: readonly string[] }) => Promise<AddedDynamicPartitions>;
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

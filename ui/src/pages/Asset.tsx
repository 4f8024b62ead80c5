// The asset page: definition, partition status (bar or matrix) with materialise/clear of a selection, the
// partitions of a status, materialisation history, lineage of a partition and automation decisions. What is
// selected (partition, range, tab, status) lives in the URL query, so a link shows the same view.
import { Link } from "wouter";
import { useQuery } from "../api";
import { ErrorView, Loading, NotFound } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { formatAgo } from "../format";
import { usePageParams } from "./asset-page-params";
import { ASSET_QUERY, STATUS_QUERY } from "./asset-queries";
import { AutomationTab } from "./AssetAutomationTab";
import { ChecksTab } from "./AssetChecksTab";
import { DefinitionCard, type AssetDefinition } from "./AssetDefinitionCard";
import { HistoryTab } from "./AssetHistoryTab";
import { LineageTab } from "./AssetLineageTab";
import { PartitionsTab } from "./AssetPartitionsTab";
import { StatusSection, useRangeIndex, type StatusData } from "./AssetStatusSection";
import "./Asset.css";

const TABS = [
  ["partitions", "Partitions"],
  ["history", "Materialisations"],
  ["lineage", "Lineage"],
  ["automation", "Automation"],
  ["checks", "Checks"],
] as const;
type Tab = (typeof TABS)[number][0];

const EVENT_KIND: Record<string, string> = { MATERIALIZATION: "materialisation", EXTERNAL: "report", OBSERVATION: "observation" };

export function AssetPage({ assetKey }: { assetKey: string }) {
  const state = useQuery<{ asset: AssetDefinition | null }>(ASSET_QUERY, { key: assetKey });
  const params = usePageParams();
  // Asked for at once, alongside the definition (not after it: the bar is what takes longest). Polled: statuses
  // change as runs progress. The ranges are shared by the bar and the partition list.
  const status = useQuery<StatusData>(STATUS_QUERY, { key: assetKey }, { pollMs: 15_000 });
  const ranges = useRangeIndex(status);
  const tab: Tab = TABS.some(([t]) => t === params.get("tab")) ? (params.get("tab") as Tab) : "partitions";

  if (state.error && !state.data) return <ErrorView error={state.error} />;
  if (!state.data) return <Loading what="the asset" />;
  const asset = state.data.asset;
  if (!asset) return <NotFound what="Asset" id={assetKey} />;
  const partitioned = asset.partitionsDefinition != null;
  const partition = params.get("partition");

  return (
    <div className="asset-page" data-testid="asset-page">
      <div className="asset-header">
        <div>
          <div className="muted asset-crumbs">
            <Link href="/assets">Assets</Link> / {asset.group}
          </div>
          <h1 data-testid="asset-key">{asset.key}</h1>
        </div>
        <div className="asset-header-side">
          {asset.paused ? <StateBadge state="paused" /> : null}
          <span className="muted">
            last {asset.latestMaterialization ? (EVENT_KIND[asset.latestMaterialization.kind ?? ""] ?? "event") : "materialisation"}:{" "}
            {asset.latestMaterialization ? (
              <>
                {formatAgo(asset.latestMaterialization.createdAt)}
                {asset.latestMaterialization.runId ? (
                  <>
                    {" "}
                    (<Link href={`/runs/${asset.latestMaterialization.runId}`}>run</Link>)
                  </>
                ) : null}
              </>
            ) : (
              "never"
            )}
          </span>
        </div>
      </div>
      {state.error ? <ErrorView error={state.error} /> : null}
      <DefinitionCard asset={asset} />
      <StatusSection asset={asset} params={params} status={status} ranges={ranges} />
      <div className="tabs" role="tablist">
        {TABS.map(([id, label]) => (
          <button
            key={id}
            type="button"
            role="tab"
            aria-selected={tab === id}
            className={tab === id ? "tab active" : "tab"}
            data-testid={`tab-${id}`}
            onClick={() => params.set({ tab: id })}
          >
            {label}
          </button>
        ))}
        {partitioned ? (
          <span className="muted tab-partition">
            {partition ? (
              <>
                partition <code data-testid="selected-partition">{partition}</code>{" "}
                <button type="button" className="link-button" onClick={() => params.set({ partition: undefined })}>
                  ×
                </button>
              </>
            ) : (
              "click a partition to choose one"
            )}
          </span>
        ) : null}
      </div>
      <div className="tab-body">
        {tab === "partitions" ? <PartitionsTab asset={asset} params={params} ranges={ranges} /> : null}
        {tab === "history" ? <HistoryTab assetKey={asset.key} partition={partition} /> : null}
        {tab === "lineage" ? <LineageTab assetKey={asset.key} partitioned={partitioned} partition={partition} params={params} /> : null}
        {tab === "automation" ? <AutomationTab assetKey={asset.key} partition={partition} /> : null}
        {tab === "checks" ? <ChecksTab assetKey={asset.key} partition={partition} params={params} /> : null}
      </div>
    </div>
  );
}

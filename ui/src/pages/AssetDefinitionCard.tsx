// The asset's definition as the current definitions state it.
import type { ReactNode } from "react";
import { formatDuration, formatTime, jsonText } from "../format";
import { AssetLink } from "./AssetPageLinks";

export interface AssetDefinition {
  key: string;
  kind: string;
  group: string;
  owner: string | null;
  description: string | null;
  file: string;
  tags: Record<string, string> | null;
  metadata: Record<string, unknown> | null;
  partitionsDefinition: unknown;
  partitionsDescription: string | null;
  automation: unknown;
  pool: string | null;
  priority: number;
  retries: unknown;
  timeoutMs: number | null;
  triggerRule: string;
  executor: string;
  codeVersion: string | null;
  paused: boolean;
  pausedAt: string | null;
  deps: { assetKey: string; name: string; mapping: unknown }[];
  upstream: { key: string }[];
  downstream: { key: string }[];
  latestMaterialization: { createdAt: string; runId: string | null; partitionKey: string | null; kind: string | null } | null;
  /** What the caller may do on it: materialise and clear need `operate`. */
  viewerCan: { operate: boolean; administer: boolean } | null;
}

/** A partition mapping in words; null is the default one (identity for like partitions, all otherwise). */
export function mappingText(mapping: unknown): string {
  if (mapping === null || mapping === undefined) return "default";
  if (typeof mapping !== "object") return String(mapping);
  const m = mapping as {
    kind?: string;
    startOffset?: number;
    endOffset?: number;
    map?: Record<string, string[]>;
    dimensions?: Record<string, { upstreamDimension: string; mapping: unknown }>;
  };
  switch (m.kind) {
    case "identity":
      return "identity";
    case "all":
      return "all partitions";
    case "last":
      return "last partition";
    case "timeWindow":
      return `time window (offsets ${m.startOffset ?? 0}, ${m.endOffset ?? 0})`;
    case "static":
      return `static: ${Object.entries(m.map ?? {})
        .map(([k, v]) => `${k} → ${v.join(", ")}`)
        .join("; ")}`;
    case "multi":
      return `multi: ${Object.entries(m.dimensions ?? {})
        .map(([d, x]) => `${d} ← ${x.upstreamDimension} (${mappingText(x.mapping)})`)
        .join("; ")}`;
    default:
      return jsonText(mapping);
  }
}

/** metadata.pii: true, or the columns that hold personal data. */
function piiOf(metadata: Record<string, unknown> | null): string | undefined {
  const pii = metadata?.pii;
  if (pii === undefined || pii === false || pii === null) return undefined;
  return Array.isArray(pii) ? pii.join(", ") : "yes";
}

function retriesText(retries: unknown): string {
  const r = retries as { max?: number; delayMs?: number; backoff?: string; maxDelayMs?: number | null; jitter?: boolean } | null;
  if (!r || typeof r.max !== "number") return jsonText(retries);
  if (r.max === 0) return "none";
  const delay = r.delayMs ? `, ${r.backoff ?? "fixed"} from ${formatDuration(r.delayMs)}` : "";
  const cap = r.maxDelayMs ? ` up to ${formatDuration(r.maxDelayMs)}` : "";
  return `${r.max}${delay}${cap}${r.jitter ? ", with jitter" : ""}`;
}

interface AutomationJson {
  kind: string;
  cron?: string;
  timezone?: string | null;
  operands?: AutomationJson[];
  operand?: AutomationJson;
  count?: number;
}

/** The automation condition as the SDK call that builds it. */
function automationText(automation: unknown): string {
  if (automation == null) return "none";
  const a = automation as AutomationJson;
  const tz = a.timezone ? `, { timezone: "${a.timezone}" }` : "";
  switch (a.kind) {
    case "cron":
      return `onCron("${a.cron}"${tz})`;
    case "eager":
      return "eager()";
    case "missing":
      return "onMissing()";
    case "and":
    case "or":
      return `${a.kind === "and" ? "allOf" : "anyOf"}(${(a.operands ?? []).map(automationText).join(", ")})`;
    case "not":
      return `not(${automationText(a.operand)})`;
    case "cron_tick":
      return `cronTick("${a.cron}"${tz})`;
    case "in_latest_window":
      return `inLatestWindow(${a.count})`;
    default:
      return typeof a.kind === "string" ? a.kind.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) + "()" : jsonText(automation);
  }
}

export function DefinitionCard({ asset }: { asset: AssetDefinition }) {
  const pii = piiOf(asset.metadata);
  const rows: [string, ReactNode][] = [
    ["Kind", asset.kind],
    ["Group", asset.group],
    ["Owner", asset.owner ?? <span className="muted">none</span>],
    ["Partitions", asset.partitionsDescription ?? <span className="muted">unpartitioned</span>],
    ["Automation", <code key="a">{automationText(asset.automation)}</code>],
    ["Pool", asset.pool ?? <span className="muted">none</span>],
    ["Priority", asset.priority],
    ["Retries", retriesText(asset.retries)],
    ["Timeout", asset.timeoutMs == null ? <span className="muted">none</span> : formatDuration(asset.timeoutMs)],
    ["Trigger rule", asset.triggerRule],
    ["Executor", asset.executor],
    ["Code version", asset.codeVersion ?? <span className="muted">none</span>],
    ["File", <code key="f">{asset.file}</code>],
    ["Automation state", asset.paused ? `paused since ${formatTime(asset.pausedAt)}` : "running"],
  ];
  const tags = Object.entries(asset.tags ?? {});
  const metadata = Object.entries(asset.metadata ?? {}).filter(([k]) => k !== "pii");
  return (
    <div className="card asset-definition" data-testid="asset-definition">
      {asset.description ? <p className="asset-description">{asset.description}</p> : null}
      {pii !== undefined ? (
        <div className="pii-flag" data-testid="pii-flag">
          Holds personal data{pii === "yes" ? "" : `: ${pii}`}
        </div>
      ) : null}
      <div className="asset-definition-grid">
        {[rows.slice(0, 7), rows.slice(7)].map((half, i) => (
          <dl className="definition-list" key={i}>
            {half.map(([label, value]) => (
              <div key={label}>
                <dt>{label}</dt>
                <dd data-testid={`def-${label.toLowerCase().replace(/ /g, "-")}`}>{value}</dd>
              </div>
            ))}
          </dl>
        ))}
        <div>
          <h3>Depends on</h3>
          {asset.deps.length === 0 ? (
            <div className="muted">nothing</div>
          ) : (
            <table className="grid compact" data-testid="asset-deps">
              <thead>
                <tr>
                  <th>Upstream</th>
                  <th>As</th>
                  <th>Partition mapping</th>
                </tr>
              </thead>
              <tbody>
                {asset.deps.map((d) => (
                  <tr key={d.name}>
                    <td>
                      <AssetLink assetKey={d.assetKey} />
                    </td>
                    <td className="mono">{d.name}</td>
                    <td>{mappingText(d.mapping)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>Downstream</h3>
          {asset.downstream.length === 0 ? (
            <div className="muted">nothing reads it</div>
          ) : (
            <ul className="asset-links" data-testid="asset-downstream">
              {asset.downstream.map((d) => (
                <li key={d.key}>
                  <AssetLink assetKey={d.key} />
                </li>
              ))}
            </ul>
          )}
          {tags.length > 0 ? (
            <>
              <h3>Tags</h3>
              <div className="tags">
                {tags.map(([k, v]) => (
                  <code key={k} className="tag">
                    {k}={String(v)}
                  </code>
                ))}
              </div>
            </>
          ) : null}
          {metadata.length > 0 ? (
            <>
              <h3>Metadata</h3>
              <dl className="definition-list">
                {metadata.map(([k, v]) => (
                  <div key={k}>
                    <dt>{k}</dt>
                    <dd className="mono">{jsonText(v)}</dd>
                  </div>
                ))}
              </dl>
            </>
          ) : null}
        </div>
      </div>
    </div>
  );
}

import { useEffect, useMemo } from "react";
import { Link, useLocation, useSearchParams } from "wouter";
import { useQuery } from "../api";
import { AssetGraph, type GraphNode } from "../components/AssetGraph";
import { DefinitionsGate } from "../components/DefinitionsGate";
import { prepareLayoutWorker } from "../components/graph-layout-client";
import { countsSummary, type StatusCounts } from "../components/HealthBar";
import { QueryView } from "../components/QueryStates";
import { assetPath, formatCount } from "../format";
import { PARTITION_COLORS } from "../status";
import "./Graph.css";

interface GraphAsset {
  key: string;
  group: string | null;
  upstream: { key: string }[] | null;
  partitionStatus: { counts: StatusCounts | null } | null;
}

const GRAPH_QUERY = `query AssetGraph {
  assets {
    key group
    upstream { key }
    partitionStatus { counts { total materialized stale failed materializing missing timedOut erased } }
  }
}`;

/**
 * One status per asset, the most pressing of its partitions': failed > timed out > materializing > erased > stale >
 * missing > materialized.
 */
export function assetStatus(c: StatusCounts | null | undefined): string {
  if (!c || !c.total) return "MISSING";
  if (c.failed) return "FAILED";
  if (c.timedOut) return "TIMED_OUT";
  if (c.materializing) return "MATERIALIZING";
  if (c.erased) return "ERASED";
  if (c.stale) return "STALE";
  if (c.missing) return "MISSING";
  return "MATERIALIZED";
}

const LEGEND = ["FAILED", "TIMED_OUT", "MATERIALIZING", "ERASED", "STALE", "MISSING", "MATERIALIZED"];
const NO_GROUP = "(no group)";

export function GraphPage() {
  // The layout worker loads while the definitions and the query do.
  useEffect(prepareLayoutWorker, []);
  return (
    <div className="graph-page">
      <DefinitionsGate>
        <GraphAssets />
      </DefinitionsGate>
    </div>
  );
}

function GraphAssets() {
  const state = useQuery<{ assets: GraphAsset[] | null }>(GRAPH_QUERY, {}, { pollMs: 15_000 });
  return (
    <QueryView state={state} what="the asset graph">
      {(data) => <Graph assets={data.assets ?? []} />}
    </QueryView>
  );
}

function Graph({ assets }: { assets: readonly GraphAsset[] }) {
  const [params, setParams] = useSearchParams();
  const [, navigate] = useLocation();
  const group = params.get("group") ?? "";
  const focus = params.get("focus") ?? undefined;
  const groups = useMemo(() => [...new Set(assets.map((a) => a.group ?? NO_GROUP))].sort(), [assets]);

  // Keyed by the graph's shape and statuses only, so a poll that changes nothing keeps the same objects.
  const shapeKey =
    JSON.stringify(assets.map((a) => [a.key, a.group, a.upstream?.map((u) => u.key), assetStatus(a.partitionStatus?.counts)])) + group;
  const { nodes, edges } = useMemo(() => {
    const shown = assets.filter((a) => !group || (a.group ?? NO_GROUP) === group);
    const keys = new Set(shown.map((a) => a.key));
    const nodes: GraphNode[] = shown.map((a) => {
      const counts = a.partitionStatus?.counts;
      return { key: a.key, group: a.group ?? NO_GROUP, status: assetStatus(counts), ...(counts ? { detail: countsSummary(counts) } : {}) };
    });
    const edges = shown.flatMap((a) => (a.upstream ?? []).filter((u) => keys.has(u.key)).map((u) => ({ from: u.key, to: a.key })));
    return { nodes, edges };
  }, [shapeKey]);

  const byStatus = useMemo(() => {
    const m = new Map<string, number>();
    for (const n of nodes) m.set(n.status, (m.get(n.status) ?? 0) + 1);
    return m;
  }, [nodes]);
  const focusMissing = focus !== undefined && !nodes.some((n) => n.key === focus);

  const set = (name: string, value: string) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (value) next.set(name, value);
        else next.delete(name);
        return next;
      },
      { replace: true },
    );

  return (
    <>
      <div className="toolbar graph-toolbar">
        <h1>Asset graph</h1>
        <label>
          Group{" "}
          <select value={group} onChange={(e) => set("group", e.target.value)} data-testid="graph-group">
            <option value="">all groups</option>
            {(group && !groups.includes(group) ? [group, ...groups] : groups).map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
        <span className="muted" data-testid="graph-count">
          {formatCount(nodes.length)} assets, {formatCount(edges.length)} dependencies
        </span>
        <span className="graph-legend">
          {LEGEND.filter((s) => byStatus.has(s)).map((s) => (
            <span key={s} className="graph-legend-item">
              <span className="graph-swatch" style={{ background: PARTITION_COLORS[s] }} />
              {s.toLowerCase().replace("_", " ")} {formatCount(byStatus.get(s))}
            </span>
          ))}
        </span>
        {focus ? (
          <span>
            Focus: <Link href={assetPath(focus)}>{focus}</Link>{" "}
            <button type="button" onClick={() => set("focus", "")}>
              Clear
            </button>
          </span>
        ) : null}
      </div>
      {focusMissing ? (
        <div className="error" role="alert" data-testid="graph-focus-missing">
          No asset <code>{focus}</code> {group ? `in group ${group}` : "in the graph"}.
        </div>
      ) : null}
      {nodes.length === 0 ? (
        <p className="muted">{assets.length === 0 ? "No assets are defined yet." : `No assets in group ${group}.`}</p>
      ) : (
        <AssetGraph nodes={nodes} edges={edges} focus={focusMissing ? undefined : focus} onOpen={(key) => navigate(assetPath(key))} />
      )}
    </>
  );
}

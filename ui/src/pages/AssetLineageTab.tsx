// Lineage around the chosen partition: the static graph (with partition mappings) and, run by run, which
// materialisation read which, upstream and downstream.
import { useQuery } from "../api";
import { ErrorView, Loading } from "../components/QueryStates";
import { formatTime } from "../format";
import type { PageParams } from "./asset-page-params";
import { AssetLink, RunLink } from "./AssetPageLinks";

const LINEAGE_QUERY = `query($key: String!, $partition: String, $depth: Int) {
  up: lineage(assetKey: $key, partitionKey: $partition, direction: UPSTREAM, depth: $depth) { ...L }
  down: lineage(assetKey: $key, partitionKey: $partition, direction: DOWNSTREAM, depth: $depth) { ...L }
}
fragment L on Lineage {
  partitionKey
  assets { key depth partitions pii }
  dependencies { upstreamKey downstreamKey name mappingDescription }
  start { eventId kind assetKey partitionKey runId createdAt dataVersion }
  materializations { eventId kind assetKey partitionKey runId createdAt dataVersion codeVersion depth }
  inputs { eventId upstreamAssetKey upstreamPartitionKey upstreamEventId }
}`;

interface LineageMaterialization {
  eventId: string;
  kind: string;
  assetKey: string;
  partitionKey: string;
  runId: string | null;
  createdAt: string;
  dataVersion: string | null;
  codeVersion?: string | null;
  depth?: number;
}

interface Lineage {
  partitionKey: string | null;
  assets: { key: string; depth: number; partitions: string | null; pii: unknown }[];
  dependencies: { upstreamKey: string; downstreamKey: string; name: string; mappingDescription: string }[];
  start: LineageMaterialization | null;
  materializations: LineageMaterialization[];
  inputs: { eventId: string; upstreamAssetKey: string; upstreamPartitionKey: string; upstreamEventId: string | null }[];
}

export function LineageTab({
  assetKey,
  partitioned,
  partition,
  params,
}: {
  assetKey: string;
  partitioned: boolean;
  partition: string | undefined;
  params: PageParams;
}) {
  const depth = Math.min(20, Math.max(1, Number(params.get("depth") ?? 3) || 3));
  const state = useQuery<{ up: Lineage | null; down: Lineage | null }>(LINEAGE_QUERY, {
    key: assetKey,
    partition: partitioned ? (partition ?? null) : null,
    depth,
  });
  return (
    <div data-testid="lineage">
      <div className="toolbar">
        <label>
          depth{" "}
          <select value={depth} onChange={(e) => params.set({ depth: e.target.value === "3" ? undefined : e.target.value })}>
            {[1, 2, 3, 5, 10, 20].map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        {partitioned && partition === undefined ? (
          <span className="muted">Choose a partition (click the bar or a listed partition) for run-level lineage.</span>
        ) : null}
        {partition !== undefined ? (
          <span className="muted">
            of partition <code>{partition}</code>
          </span>
        ) : null}
      </div>
      {state.error ? <ErrorView error={state.error} /> : null}
      {!state.data ? (
        state.error ? null : (
          <Loading what="the lineage" />
        )
      ) : (
        <>
          {state.data.up?.start ? (
            <p data-testid="lineage-start">
              Latest materialisation: event <code>{state.data.up.start.eventId}</code> at {formatTime(state.data.up.start.createdAt)}, run{" "}
              <RunLink runId={state.data.up.start.runId} />
              {state.data.up.start.dataVersion ? (
                <>
                  , data version <code>{state.data.up.start.dataVersion}</code>
                </>
              ) : null}
            </p>
          ) : partition !== undefined || !partitioned ? (
            <p className="muted">Never materialised.</p>
          ) : null}
          <div className="lineage-columns">
            <LineageSide title="Upstream" lineage={state.data.up} direction="up" />
            <LineageSide title="Downstream" lineage={state.data.down} direction="down" />
          </div>
        </>
      )}
    </div>
  );
}

function LineageSide({ title, lineage, direction }: { title: string; lineage: Lineage | null; direction: "up" | "down" }) {
  if (!lineage) return null;
  const events = new Map([...(lineage.start ? [lineage.start] : []), ...lineage.materializations].map((m) => [m.eventId, m]));
  const others = lineage.assets.filter((a) => a.depth > 0);
  return (
    <div className="lineage-side" data-testid={`lineage-${direction}`}>
      <h3>{title}</h3>
      {others.length === 0 ? (
        <div className="muted">No {title.toLowerCase()} assets.</div>
      ) : (
        <table className="grid compact">
          <thead>
            <tr>
              <th>Asset</th>
              <th>Levels</th>
              <th>Partitions</th>
            </tr>
          </thead>
          <tbody>
            {others.map((a) => (
              <tr key={a.key}>
                <td>
                  <AssetLink assetKey={a.key} /> {a.pii != null && a.pii !== false ? <span className="pii-chip">PII</span> : null}
                </td>
                <td>{a.depth}</td>
                <td className="muted">{a.partitions ?? "unpartitioned"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {lineage.dependencies.length > 0 ? (
        <details>
          <summary className="muted">{lineage.dependencies.length} dependencies with their mappings</summary>
          <ul className="reasons">
            {lineage.dependencies.map((d) => (
              <li key={`${d.upstreamKey}>${d.downstreamKey}:${d.name}`}>
                <span className="mono">{d.upstreamKey}</span> → <span className="mono">{d.downstreamKey}</span> ({d.name}):{" "}
                {d.mappingDescription}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      <h4>Run-level: which materialisation read which</h4>
      {lineage.inputs.length === 0 ? (
        <div className="muted">No recorded reads.</div>
      ) : (
        <table className="grid compact" data-testid={`lineage-inputs-${direction}`}>
          <thead>
            <tr>
              <th>Materialisation</th>
              <th>read</th>
              <th>Run</th>
            </tr>
          </thead>
          <tbody>
            {lineage.inputs.map((i) => {
              const reader = events.get(i.eventId);
              const read = i.upstreamEventId ? events.get(i.upstreamEventId) : undefined;
              return (
                <tr key={`${i.eventId}:${i.upstreamAssetKey}:${i.upstreamPartitionKey}`}>
                  <td>
                    {reader ? <AssetLink assetKey={reader.assetKey} /> : null} <code>{reader?.partitionKey ?? ""}</code>{" "}
                    <span className="muted">#{i.eventId}</span>
                  </td>
                  <td>
                    <AssetLink assetKey={i.upstreamAssetKey} /> <code>{i.upstreamPartitionKey}</code>{" "}
                    <span className="muted">{i.upstreamEventId ? `#${i.upstreamEventId}` : "(no event recorded)"}</span>
                    {read?.runId ? (
                      <>
                        {" "}
                        from run <RunLink runId={read.runId} />
                      </>
                    ) : null}
                  </td>
                  <td>
                    <RunLink runId={reader?.runId} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

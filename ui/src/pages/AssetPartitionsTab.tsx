// The partitions of one status, a page at a time. The API lists partitions by key range; the status ranges say
// where the partitions of a status are, so a page asks for the next of those ranges (aliases of one request).
import { useEffect, useMemo, useState } from "react";
import { Link } from "wouter";
import { gql, useQuery } from "../api";
import { statusLabel, type RangeIndex, type StatusRange } from "../components/PartitionBar";
import { ErrorView, Loading } from "../components/QueryStates";
import { StackPager } from "../components/StackPager";
import { formatCount, formatTime } from "../format";
import { PARTITION_COLORS } from "../status";
import type { PageParams } from "./asset-page-params";
import type { AssetDefinition } from "./AssetDefinitionCard";

const PAGE = 50;
const PARTITION_FIELDS = `endCursor hasNextPage nodes { key status start end materializedAt dataVersion staleReasonsTruncated
  staleReasons { kind message upstreamAssetKey upstreamPartitionKey } }`;

interface PartitionNode {
  key: string;
  status: StatusRange["status"];
  start: string | null;
  end: string | null;
  materializedAt: string | null;
  dataVersion: string | null;
  staleReasonsTruncated: boolean;
  staleReasons: { kind: string; message: string; upstreamAssetKey: string | null; upstreamPartitionKey: string | null }[];
}

interface PartitionPage {
  endCursor: string | null;
  hasNextPage: boolean;
  nodes: PartitionNode[];
}

/** Where a page starts: the position among the status's ranges and the cursor inside that range. */
interface Pointer {
  readonly range: number;
  readonly after: string | null;
}

interface Page {
  readonly nodes: PartitionNode[];
  readonly next: Pointer | undefined;
}

/** One request: a `partitions(from, to)` alias per range until the page is full. */
async function loadStatusPage(assetKey: string, ranges: readonly StatusRange[], at: Pointer): Promise<Page> {
  const parts: string[] = [];
  const decls: string[] = ["$key: String!"];
  const vars: Record<string, unknown> = { key: assetKey };
  let planned = 0;
  let k = at.range;
  for (; k < ranges.length && planned < PAGE; k++) {
    const r = ranges[k]!;
    const first = Math.min(r.count, PAGE - planned);
    const i = k - at.range;
    decls.push(`$f${i}: String`, `$t${i}: String`, `$a${i}: String`);
    Object.assign(vars, { [`f${i}`]: r.from, [`t${i}`]: r.to, [`a${i}`]: k === at.range ? at.after : null });
    parts.push(`r${i}: partitions(from: $f${i}, to: $t${i}, first: ${first}, after: $a${i}) { ${PARTITION_FIELDS} }`);
    planned += first;
  }
  if (parts.length === 0) return { nodes: [], next: undefined };
  const data = await gql<{ asset: Record<string, PartitionPage> | null }>(
    `query(${decls.join(", ")}) { asset(key: $key) { ${parts.join("\n")} } }`,
    vars,
  );
  if (!data.asset) throw new Error(`asset "${assetKey}" is no longer defined`);
  const nodes: PartitionNode[] = [];
  let next: Pointer | undefined;
  for (let i = 0; i < parts.length; i++) {
    const page = data.asset[`r${i}`]!;
    nodes.push(...page.nodes);
    const range = at.range + i;
    if (i === parts.length - 1)
      next = page.hasNextPage
        ? { range, after: page.endCursor }
        : range + 1 < ranges.length
          ? { range: range + 1, after: null }
          : undefined;
  }
  return { nodes, next };
}

export function PartitionsTab({ asset, params, ranges }: { asset: AssetDefinition; params: PageParams; ranges: RangeIndex | undefined }) {
  const status = params.get("status") as StatusRange["status"] | undefined;
  const ofStatus = useMemo(() => ranges?.ranges.filter((r) => r.status === status) ?? [], [ranges, status]);
  if (!ranges) return <Loading what="the partitions" />;
  if (!status) return <AllPartitions asset={asset} params={params} />;
  const count = ofStatus.reduce((n, r) => n + r.count, 0);
  return (
    <div data-testid="partition-list" data-status={status}>
      <div className="toolbar">
        <span>
          <span className="swatch" style={{ background: PARTITION_COLORS[status] }} /> <strong>{formatCount(count)}</strong>{" "}
          {statusLabel(status)} partition{count === 1 ? "" : "s"}
        </span>
        <button type="button" className="link-button" onClick={() => params.set({ status: undefined })}>
          all partitions
        </button>
      </div>
      {/* A new answer of the status ranges starts the listing over. */}
      <StatusPages key={`${status}:${ranges.ranges.length}:${count}`} asset={asset} ranges={ofStatus} params={params} />
    </div>
  );
}

function StatusPages({ asset, ranges, params }: { asset: AssetDefinition; ranges: readonly StatusRange[]; params: PageParams }) {
  const [stack, setStack] = useState<Pointer[]>([{ range: 0, after: null }]);
  const at = stack[stack.length - 1]!;
  const [state, setState] = useState<{ at: Pointer; page?: Page; error?: Error } | undefined>(undefined);
  useEffect(() => {
    let live = true;
    loadStatusPage(asset.key, ranges, at).then(
      (page) => live && setState({ at, page }),
      (error: Error) => live && setState({ at, error }),
    );
    return () => {
      live = false;
    };
  }, [asset.key, ranges, at]);
  if (ranges.length === 0) return <div className="muted">None.</div>;
  const page = state?.at === at ? state.page : undefined;
  const error = state?.at === at ? state.error : undefined;
  return (
    <>
      {error ? <ErrorView error={error} /> : null}
      {page ? <PartitionTable nodes={page.nodes} params={params} /> : error ? null : <Loading what="the partitions" />}
      <StackPager
        depth={stack.length}
        onBack={() => setStack((s) => s.slice(0, -1))}
        next={page?.next}
        onNext={(pointer) => setStack((s) => [...s, pointer])}
        labels={["← previous", "next →"]}
        nextTestId="next-page"
      />
    </>
  );
}

const ALL_QUERY = `query($key: String!, $after: String) { asset(key: $key) { partitions(first: ${PAGE}, after: $after) { totalCount ${PARTITION_FIELDS} } } }`;

function AllPartitions({ asset, params }: { asset: AssetDefinition; params: PageParams }) {
  const [stack, setStack] = useState<(string | null)[]>([null]);
  const state = useQuery<{ asset: { partitions: PartitionPage & { totalCount: number } } | null }>(ALL_QUERY, {
    key: asset.key,
    after: stack[stack.length - 1],
  });
  const page = state.data?.asset?.partitions;
  return (
    <div data-testid="partition-list">
      <div className="toolbar muted">
        All partitions, oldest first{page ? ` (${formatCount(page.totalCount)})` : ""}. Click a status above to list only those.
      </div>
      {state.error ? <ErrorView error={state.error} /> : null}
      {page ? <PartitionTable nodes={page.nodes} params={params} /> : state.error ? null : <Loading what="the partitions" />}
      <StackPager
        depth={stack.length}
        onBack={() => setStack((s) => s.slice(0, -1))}
        next={page?.hasNextPage ? (page.endCursor ?? undefined) : undefined}
        onNext={(cursor) => setStack((s) => [...s, cursor])}
        labels={["← previous", "next →"]}
        nextTestId="next-page"
      />
    </div>
  );
}

function PartitionTable({ nodes, params }: { nodes: readonly PartitionNode[]; params: PageParams }) {
  const chosen = params.get("partition");
  if (nodes.length === 0) return <div className="muted">None.</div>;
  return (
    <table className="grid compact" data-testid="partition-table">
      <thead>
        <tr>
          <th>Partition</th>
          <th>Status</th>
          <th>Materialised</th>
          <th>Data version</th>
          <th>Why stale</th>
        </tr>
      </thead>
      <tbody>
        {nodes.map((n) => (
          <tr key={n.key} className={chosen === n.key ? "chosen" : undefined} data-testid="partition-row" data-key={n.key}>
            <td>
              <button
                type="button"
                className="link-button mono"
                onClick={() => params.set({ partition: n.key })}
                title="Choose this partition (lineage, automation, history)"
              >
                {n.key || "(unpartitioned)"}
              </button>
              {n.start ? <div className="muted small">{`${formatTime(n.start)} – ${formatTime(n.end)}`}</div> : null}
            </td>
            <td>
              <span className="badge" style={{ background: PARTITION_COLORS[n.status] }}>
                {statusLabel(n.status)}
              </span>
            </td>
            <td>{formatTime(n.materializedAt)}</td>
            <td className="mono">{n.dataVersion ?? "–"}</td>
            <td>
              {n.staleReasons.length === 0 ? (
                <span className="muted">–</span>
              ) : (
                <ul className="reasons">
                  {n.staleReasons.map((r, i) => (
                    <li key={i}>
                      {r.upstreamAssetKey ? (
                        <>
                          <Link href={`/assets/${r.upstreamAssetKey.split("/").map(encodeURIComponent).join("/")}`}>
                            {r.upstreamAssetKey}
                          </Link>
                          :{" "}
                        </>
                      ) : null}
                      {r.message}
                    </li>
                  ))}
                  {n.staleReasonsTruncated ? <li className="muted">and more upstream partitions</li> : null}
                </ul>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

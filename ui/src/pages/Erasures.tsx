import { useState } from "react";
import { Link } from "wouter";
import { useQuery } from "../api";
import { ProgressBar } from "../components/ProgressBars";
import { QueryView } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { useUrlParams } from "../components/use-url-params";
import { assetPath, formatAgo, formatCount, formatTime } from "../format";
import { ACTIVE_ERASURE_STATES, stateColor } from "../status";
import "./Erasures.css";

const ERASURE_STATES = ["planned", "erasing", "rematerialising", "done", "failed"] as const;

export interface ErasureRow {
  id: string;
  /** planned, erasing, rematerialising, done or failed. */
  state: string;
  assetKey: string;
  partitionKeys: string[];
  reason: string | null;
  requestedBy: string | null;
  backfillId: string | null;
  /** Why it failed, or what it waits for. */
  message: string | null;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  itemCount: number;
  erasedCount: number;
}

export const ERASURE_ROW_FIELDS = `id state assetKey partitionKeys reason requestedBy backfillId message attempts createdAt updatedAt
  finishedAt itemCount erasedCount`;

const ERASURES_QUERY = `query Erasures($state: ErasureState) { erasureRequests(limit: 200, state: $state) { ${ERASURE_ROW_FIELDS} } }`;

/** "(unpartitioned)", "2025-01-03", "alice, bob", or "12 partitions" when there are more than three. */
export function describeErasurePartitions(keys: readonly string[]): string {
  const named = keys.filter((k) => k !== "");
  if (named.length === 0) return "(unpartitioned)";
  return named.length <= 3 ? named.join(", ") : `${formatCount(named.length)} partitions`;
}

/** /erasures: every erasure request, newest first, with its progress; live while one is under way. */
export function ErasuresPage() {
  const [params, setParams] = useUrlParams();
  const [pollMs, setPollMs] = useState<number | undefined>(undefined);
  const filter = params.state && ERASURE_STATES.some((s) => s === params.state) ? params.state : undefined;
  const state = useQuery<{ erasureRequests: ErasureRow[] }>(ERASURES_QUERY, filter ? { state: filter } : {}, pollMs ? { pollMs } : {});
  const rows = state.data?.erasureRequests;
  const active = rows?.some((r) => ACTIVE_ERASURE_STATES.has(r.state)) ?? false;
  if ((active ? 3_000 : undefined) !== pollMs) setPollMs(active ? 3_000 : undefined);

  return (
    <div className="erasures-page" data-testid="erasures-page">
      <div className="toolbar">
        <h1>Erasures</h1>
        <label>
          State{" "}
          <select value={filter ?? ""} onChange={(e) => setParams({ state: e.target.value })} data-testid="erasure-state-filter">
            <option value="">any</option>
            {ERASURE_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <span className="muted">Request an erasure from an asset&apos;s page (select partitions, then Erase…)</span>
      </div>
      <QueryView state={state} what="erasure requests">
        {(data) => <ErasureTable requests={data.erasureRequests} />}
      </QueryView>
    </div>
  );
}

function ErasureTable({ requests }: { requests: readonly ErasureRow[] }) {
  if (requests.length === 0) return <p className="muted">No erasure requests.</p>;
  return (
    <table className="grid erasures-table" data-testid="erasures-table">
      <thead>
        <tr>
          <th>Request</th>
          <th>State</th>
          <th>Source</th>
          <th>Reason</th>
          <th>Requested</th>
          <th>Erased</th>
          <th>Message</th>
        </tr>
      </thead>
      <tbody>
        {requests.map((r) => {
          const s = r.state;
          return (
            <tr key={r.id} data-testid="erasure-row" data-id={r.id} data-state={s}>
              <td>
                <Link href={`/erasures/${r.id}`} className="mono">
                  {r.id.slice(0, 8)}
                </Link>
              </td>
              <td>
                <StateBadge state={s} />
              </td>
              <td className="wrap">
                <Link href={assetPath(r.assetKey)} className="mono">
                  {r.assetKey}
                </Link>
                <div className="mono muted" title={r.partitionKeys.join("\n")}>
                  {describeErasurePartitions(r.partitionKeys)}
                </div>
              </td>
              <td className="wrap">{r.reason ?? <span className="muted">–</span>}</td>
              <td title={formatTime(r.createdAt)}>
                {r.requestedBy ?? <span className="muted">unknown</span>}
                <div className="muted">{formatAgo(r.createdAt)}</div>
              </td>
              <td>
                <ErasureProgress request={r} />
              </td>
              <td className="wrap">
                {r.message && (s === "failed" || ACTIVE_ERASURE_STATES.has(s)) ? (
                  <span className={s === "failed" ? "erasure-failed" : "muted"} data-testid="erasure-message">
                    {r.message}
                  </span>
                ) : null}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Erased of the impacted partitions, as a bar and a count. */
export function ErasureProgress({
  request,
  testId,
}: {
  request: Pick<ErasureRow, "itemCount" | "erasedCount" | "state">;
  testId?: string;
}) {
  const s = request.state;
  return (
    <div className="erasure-progress" data-testid={testId} data-erased={request.erasedCount} data-items={request.itemCount}>
      <ProgressBar
        total={request.itemCount}
        parts={[{ count: request.erasedCount, color: stateColor(s === "failed" ? "failed" : "erased"), label: "erased" }]}
      />
      <span className="muted">
        {formatCount(request.erasedCount)}/{formatCount(request.itemCount)}
      </span>
    </div>
  );
}

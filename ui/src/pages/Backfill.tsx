import { useState } from "react";
import { Link } from "wouter";
import { useQuery } from "../api";
import { BackfillProgress } from "../components/ProgressBars";
import { ErrorView, Loading, NotFound } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { useNow } from "../components/use-now";
import { assetPath, formatCount, formatTime } from "../format";
import { ACTIVE_BACKFILL_STATUSES } from "../status";
import { BACKFILL_ROW_FIELDS, BackfillActions, describeSelection, type BackfillRow } from "./Backfills";
import { RUN_ROW_FIELDS, RunTable, type RunRow } from "./Runs";
import "./Backfills.css";

interface BackfillDetail extends BackfillRow {
  includeUpstream: boolean;
  maxConcurrentRuns: number;
  maxPartitionsPerRun: number;
  priority: number;
  covered: number;
  error: unknown;
  tags: Record<string, unknown>;
  failedPartitions: { assetKey: string; count: number; ranges: { from: string; to: string }[] }[];
  runs: RunRow[];
}

const BACKFILL_QUERY = `query Backfill($id: String!) {
  backfill(id: $id) {
    ${BACKFILL_ROW_FIELDS}
    includeUpstream maxConcurrentRuns maxPartitionsPerRun priority covered error tags
    failedPartitions { assetKey count ranges { from to } }
    runs(first: 200) { ${RUN_ROW_FIELDS} }
  }
}`;

/** /backfills/:id — its selection, pacing and progress (live while active), its runs, and its failed partitions. */
export function BackfillPage({ backfillId }: { backfillId: string }) {
  const [pollMs, setPollMs] = useState<number | undefined>(undefined);
  const first = useQuery<{ backfill: BackfillDetail | null }>(BACKFILL_QUERY, { id: backfillId }, pollMs ? { pollMs } : {});
  const b = first.data?.backfill;
  const active = b ? ACTIVE_BACKFILL_STATUSES.has(b.status) : false;
  // Live while it is active.
  if ((active ? 2_000 : undefined) !== pollMs) setPollMs(active ? 2_000 : undefined);
  const now = useNow(active);
  if (first.error && !first.data) return <ErrorView error={first.error} />;
  if (!first.data) return <Loading what="the backfill" />;
  if (!b) return <NotFound what="Backfill" id={backfillId} />;
  return (
    <div className="backfill-page" data-testid="backfill-page" data-status={b.status}>
      {first.error ? <ErrorView error={first.error} /> : null}
      <div className="toolbar">
        <h1>
          Backfill <span className="mono">{b.id}</span> <StateBadge state={b.status} />
        </h1>
        <BackfillActions backfill={b} onChanged={first.reload} />
      </div>
      <div className="card">
        <div className="bf-facts">
          <div>
            <div className="fact-label">Assets</div>
            {b.assetKeys.map((k) => (
              <div key={k}>
                <Link href={assetPath(k)} className="mono">
                  {k}
                </Link>
              </div>
            ))}
          </div>
          <div>
            <div className="fact-label">Partitions</div>
            <div className="mono">{describeSelection(b)}</div>
            {b.includeUpstream ? <div className="muted">with missing upstream partitions</div> : null}
            {b.retryOf ? (
              <div>
                re-runs <Link href={`/backfills/${b.retryOf}`}>{b.retryOf.slice(0, 8)}</Link>
              </div>
            ) : null}
          </div>
          <div>
            <div className="fact-label">Pacing</div>
            {formatCount(b.maxPartitionsPerRun)} partitions per run, {formatCount(b.maxConcurrentRuns)} runs at once, priority {b.priority}
          </div>
          <div>
            <div className="fact-label">Created</div>
            {formatTime(b.createdAt)}
          </div>
          {b.completedAt ? (
            <div>
              <div className="fact-label">Ended</div>
              {formatTime(b.completedAt)}
            </div>
          ) : null}
          {b.canceledAt ? (
            <div>
              <div className="fact-label">Canceled</div>
              {formatTime(b.canceledAt)}
            </div>
          ) : null}
        </div>
        <h2>Progress</h2>
        <div className="bf-progress" data-testid="backfill-progress" data-done={b.done} data-requested={b.requested} data-failed={b.failed}>
          <BackfillProgress backfill={b} testId="backfill-progress-bar" />
          <span className="muted">
            {formatCount(b.runsCreated)} of {formatCount(b.chunks)} runs created
            {b.covered > 0 ? ` · ${formatCount(b.covered)} partitions materialised meanwhile by other runs` : ""}
          </span>
        </div>
        {b.waiting && active ? <p className="muted">Next run: {b.waiting}</p> : null}
        {b.error ? (
          <div className="error">
            <strong>Backfill error</strong>
            <pre>{JSON.stringify(b.error, null, 2)}</pre>
          </div>
        ) : null}
      </div>

      {b.failedPartitions.length > 0 ? (
        <>
          <h2>Failed partitions</h2>
          <table className="grid" data-testid="failed-partitions">
            <thead>
              <tr>
                <th>Asset</th>
                <th>Failed</th>
                <th>Ranges</th>
              </tr>
            </thead>
            <tbody>
              {b.failedPartitions.map((f) => (
                <tr key={f.assetKey}>
                  <td className="mono">{f.assetKey}</td>
                  <td>{formatCount(f.count)}</td>
                  <td className="mono">
                    {f.ranges
                      .slice(0, 20)
                      .map((r) => (r.from === r.to ? r.from || "(unpartitioned)" : `${r.from} … ${r.to}`))
                      .join(", ")}
                    {f.ranges.length > 20 ? ` and ${f.ranges.length - 20} more ranges` : ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}

      <h2>Runs ({formatCount(b.runs.length)})</h2>
      <RunTable runs={b.runs} now={now} />
    </div>
  );
}

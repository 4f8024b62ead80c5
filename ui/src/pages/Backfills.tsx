import { useState } from "react";
import { Link, useLocation } from "wouter";
import { useMutation, useQuery } from "../api";
import { BackfillDialog } from "../components/BackfillDialog";
import { BackfillProgress } from "../components/ProgressBars";
import { ErrorView, QueryView } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { useUrlParams } from "../components/use-url-params";
import { formatAgo, formatTime } from "../format";
import { mayOperateSomewhere, useSession } from "../session";
import { ACTIVE_BACKFILL_STATUSES } from "../status";
import "./Backfills.css";

const BACKFILL_STATUSES = ["requested", "running", "completed", "failed", "canceling", "canceled"] as const;

export interface BackfillRow {
  id: string;
  status: string;
  assetKeys: string[];
  from: string | null;
  to: string | null;
  partitions: string[] | null;
  allPartitions: boolean;
  retryOf: string | null;
  requested: number;
  done: number;
  failed: number;
  inProgress: number;
  runsCreated: number;
  chunks: number;
  waiting: string | null;
  createdAt: string;
  completedAt: string | null;
  canceledAt: string | null;
  /** Cancel, resume and re-run need the operator role on every asset of the backfill. */
  viewerCan: { operate: boolean } | null;
}

export const BACKFILL_ROW_FIELDS = `id status assetKeys from to partitions allPartitions retryOf requested done failed inProgress runsCreated chunks
  waiting createdAt completedAt canceledAt viewerCan { operate }`;

const BACKFILLS_QUERY = `query Backfills($status: BackfillStatus) { backfills(first: 200, status: $status) { ${BACKFILL_ROW_FIELDS} } }`;

/** /backfills: every backfill with its progress; cancel, resume, re-run failures; launch a new one (?launch=1). */
export function BackfillsPage() {
  const [params, setParams] = useUrlParams();
  const [pollMs, setPollMs] = useState<number | undefined>(undefined);
  const state = useQuery<{ backfills: BackfillRow[] }>(
    BACKFILLS_QUERY,
    params.status ? { status: params.status } : {},
    pollMs ? { pollMs } : {},
  );
  const active = state.data?.backfills.some((b) => ACTIVE_BACKFILL_STATUSES.has(b.status)) ?? false;
  if ((active ? 3_000 : undefined) !== pollMs) setPollMs(active ? 3_000 : undefined);
  // Offered to operators of some team; the dialog lists the assets they may backfill.
  const session = useSession();
  const canLaunch = session.status === "ready" && mayOperateSomewhere(session.session);

  return (
    <div className="backfills-page">
      <div className="toolbar">
        <h1>Backfills</h1>
        {canLaunch ? (
          <button type="button" className="primary" onClick={() => setParams({ launch: "1" })} data-testid="open-backfill-dialog">
            Launch backfill…
          </button>
        ) : null}
        <label>
          Status{" "}
          <select value={params.status ?? ""} onChange={(e) => setParams({ status: e.target.value })} data-testid="backfill-status-filter">
            <option value="">any</option>
            {BACKFILL_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <QueryView state={state} what="backfills">
        {(data) => <BackfillTable backfills={data.backfills} onChanged={state.reload} />}
      </QueryView>
      {params.launch && canLaunch ? <BackfillDialog onClose={() => setParams({ launch: undefined })} /> : null}
    </div>
  );
}

/** "2025-01-01 … 2025-01-31", "all partitions", "3 partitions", or "latest" when no range was given. */
export function describeSelection(b: Pick<BackfillRow, "from" | "to" | "partitions" | "allPartitions" | "retryOf">): string {
  if (b.retryOf) return "failed partitions of an earlier backfill";
  if (b.allPartitions) return "all partitions";
  if (b.partitions) return b.partitions.length <= 3 ? b.partitions.join(", ") : `${b.partitions.length} partitions`;
  if (b.from || b.to) return `${b.from ?? "first"} … ${b.to ?? "latest"}`;
  return "latest partition";
}

function BackfillTable({ backfills, onChanged }: { backfills: readonly BackfillRow[]; onChanged: () => void }) {
  if (backfills.length === 0) return <p className="muted">No backfills yet.</p>;
  return (
    <table className="grid backfills-table" data-testid="backfills-table">
      <thead>
        <tr>
          <th>Backfill</th>
          <th>Status</th>
          <th>Assets</th>
          <th>Range</th>
          <th>Progress</th>
          <th>Runs</th>
          <th>Created</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {backfills.map((b) => (
          <tr key={b.id} data-testid="backfill-row" data-id={b.id} data-status={b.status}>
            <td>
              <Link href={`/backfills/${b.id}`} className="mono">
                {b.id.slice(0, 8)}
              </Link>
            </td>
            <td>
              <StateBadge state={b.status} />
            </td>
            <td className="wrap" title={b.assetKeys.join("\n")}>
              {b.assetKeys.slice(0, 3).join(", ")}
              {b.assetKeys.length > 3 ? <span className="muted"> +{b.assetKeys.length - 3} more</span> : null}
            </td>
            <td className="mono">{describeSelection(b)}</td>
            <td>
              <BackfillProgress backfill={b} />
            </td>
            <td>
              {b.runsCreated}
              <span className="muted">/{b.chunks}</span>
            </td>
            <td title={formatTime(b.createdAt)}>{formatAgo(b.createdAt)}</td>
            <td>
              <BackfillActions backfill={b} onChanged={onChanged} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const CANCEL = `mutation ($id: String!) { cancelBackfill(id: $id) { id status } }`;
const RESUME = `mutation ($id: String!) { resumeBackfill(id: $id) { id status } }`;
const RETRY = `mutation ($id: String!) { retryBackfillFailures(id: $id) { id } }`;

/** Cancel (while active), resume (once canceled), re-run the failures (once ended with failures: a new backfill). */
export function BackfillActions({
  backfill,
  onChanged,
}: {
  backfill: Pick<BackfillRow, "id" | "status" | "failed" | "viewerCan">;
  onChanged: () => void;
}) {
  const [, navigate] = useLocation();
  const cancel = useMutation<unknown>(CANCEL);
  const resume = useMutation<unknown>(RESUME);
  const retry = useMutation<{ retryBackfillFailures: { id: string } }>(RETRY);
  const error = cancel.error ?? resume.error ?? retry.error;
  const busy = cancel.running || resume.running || retry.running;
  const ended = !ACTIVE_BACKFILL_STATUSES.has(backfill.status);
  // useMutation's run never rejects (a failure shows in `error`), so the buttons start these without awaiting them.
  const cancelBackfill = async () => {
    if (
      window.confirm("Cancel this backfill? No new runs start and its runs in flight are canceled.") &&
      (await cancel.run({ id: backfill.id }))
    )
      onChanged();
  };
  const resumeBackfill = async () => {
    if (await resume.run({ id: backfill.id })) onChanged();
  };
  const retryFailures = async () => {
    const result = await retry.run({ id: backfill.id });
    if (result) navigate(`/backfills/${result.retryBackfillFailures.id}`);
  };
  if (!backfill.viewerCan?.operate) return null;
  return (
    <div className="backfill-actions">
      {backfill.status === "requested" || backfill.status === "running" ? (
        <button type="button" disabled={busy} data-testid="backfill-cancel" onClick={() => void cancelBackfill()}>
          Cancel
        </button>
      ) : null}
      {backfill.status === "canceled" ? (
        <button type="button" disabled={busy} data-testid="backfill-resume" onClick={() => void resumeBackfill()}>
          Resume
        </button>
      ) : null}
      {ended && backfill.failed > 0 ? (
        <button type="button" disabled={busy} data-testid="backfill-retry" onClick={() => void retryFailures()}>
          Re-run failed
        </button>
      ) : null}
      {error ? <ErrorView error={error} title="The action failed" /> : null}
    </div>
  );
}

import { useState } from "react";
import { Link } from "wouter";
import { useQuery } from "../api";
import { StepsProgress } from "../components/ProgressBars";
import { QueryView } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { TextFilter } from "../components/TextFilter";
import { elapsedMs, useNow } from "../components/use-now";
import { useUrlParams } from "../components/use-url-params";
import { formatAgo, formatDuration, formatTime, localToIso } from "../format";
import { ACTIVE_RUN_STATUSES } from "../status";
import "./Runs.css";

const PAGE_SIZE = 30;
const RUN_STATUSES = ["queued", "running", "success", "failed", "canceled"] as const;

export interface RunRow {
  id: string;
  status: string;
  origin: string;
  jobName: string | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  stepsTotal: number;
  stepsDone: number;
  stepsFailed: number;
  stepsActive: number;
  backfillId: string | null;
  /** Per asset: its steps in the run and their partition key range (one batched query for the whole list). */
  assets: { assetKey: string; steps: number; minPartition: string; maxPartition: string }[];
}

export const RUN_ROW_FIELDS = `id status origin jobName createdAt startedAt endedAt stepsTotal stepsDone stepsFailed stepsActive backfillId
  assets { assetKey steps minPartition maxPartition }`;

const RUNS_QUERY = `query Runs($filter: RunFilter, $first: Int, $after: String) {
  runsConnection(filter: $filter, first: $first, after: $after) {
    nodes { ${RUN_ROW_FIELDS} }
    endCursor hasNextPage
  }
}`;

interface RunsData {
  runsConnection: { nodes: RunRow[]; endCursor: string | null; hasNextPage: boolean };
}

/** /runs: newest first, filtered by status, asset, backfill and creation time (all in the URL), a page at a time. */
export function RunsPage() {
  const [params, setParams] = useUrlParams();
  // Cursors of the pages before the current one, for "Newer"; a shared link opens at its cursor with no way back but "First page".
  const [previous, setPrevious] = useState<string[]>([]);
  const filter = {
    ...(params.status ? { status: params.status } : {}),
    ...(params.asset ? { assetKey: params.asset } : {}),
    ...(params.backfill ? { backfillId: params.backfill } : {}),
    ...(localToIso(params.after) ? { createdAfter: localToIso(params.after) } : {}),
    ...(localToIso(params.before) ? { createdBefore: localToIso(params.before) } : {}),
  };
  const [pollMs, setPollMs] = useState<number | undefined>(undefined);
  const state = useQuery<RunsData>(
    RUNS_QUERY,
    { filter, first: PAGE_SIZE, ...(params.cursor ? { after: params.cursor } : {}) },
    pollMs ? { pollMs } : {},
  );
  const active = state.data?.runsConnection.nodes.some((r) => ACTIVE_RUN_STATUSES.has(r.status)) ?? false;
  // Live while any listed run has not ended.
  if ((active ? 3_000 : undefined) !== pollMs) setPollMs(active ? 3_000 : undefined);
  // "3 s ago" and running durations keep counting; slowly when nothing runs.
  const now = useNow(true, active ? 1_000 : 15_000);

  const setFilter = (changes: Record<string, string | undefined>) => {
    setPrevious([]);
    setParams({ ...changes, cursor: undefined });
  };

  return (
    <div className="runs-page">
      <h1>Runs</h1>
      <RunFilters params={params} onChange={setFilter} />
      <QueryView state={state} what="runs">
        {(data) => (
          <>
            <RunTable runs={data.runsConnection.nodes} now={now} />
            <div className="toolbar pager">
              <button type="button" disabled={!params.cursor} onClick={() => (setPrevious([]), setParams({ cursor: undefined }))}>
                First page
              </button>
              <button
                type="button"
                disabled={previous.length === 0}
                onClick={() => {
                  setParams({ cursor: previous.at(-1) });
                  setPrevious(previous.slice(0, -1));
                }}
              >
                Newer
              </button>
              <button
                type="button"
                data-testid="runs-next"
                disabled={!data.runsConnection.hasNextPage || !data.runsConnection.endCursor}
                onClick={() => {
                  setPrevious([...previous, params.cursor ?? ""]);
                  setParams({ cursor: data.runsConnection.endCursor ?? undefined });
                }}
              >
                Older
              </button>
              {state.loading ? <span className="muted">refreshing…</span> : null}
            </div>
          </>
        )}
      </QueryView>
    </div>
  );
}

function RunFilters({
  params,
  onChange,
}: {
  params: Readonly<Record<string, string>>;
  onChange: (changes: Record<string, string | undefined>) => void;
}) {
  return (
    <div className="toolbar" data-testid="run-filters">
      <label>
        Status{" "}
        <select data-testid="filter-status" value={params.status ?? ""} onChange={(e) => onChange({ status: e.target.value })}>
          <option value="">any</option>
          {RUN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <TextFilter
        label="Asset"
        placeholder="asset key"
        value={params.asset}
        onCommit={(v) => onChange({ asset: v })}
        testId="filter-asset"
      />
      <TextFilter
        label="Backfill"
        placeholder="backfill id"
        value={params.backfill}
        onCommit={(v) => onChange({ backfill: v })}
        testId="filter-backfill"
      />
      <label>
        Created after{" "}
        <input
          type="datetime-local"
          value={params.after ?? ""}
          onChange={(e) => onChange({ after: e.target.value })}
          data-testid="filter-after"
        />
      </label>
      <label>
        before{" "}
        <input
          type="datetime-local"
          value={params.before ?? ""}
          onChange={(e) => onChange({ before: e.target.value })}
          data-testid="filter-before"
        />
      </label>
      {Object.keys(params).some((k) => k !== "cursor") ? (
        <button
          type="button"
          onClick={() => onChange({ status: undefined, asset: undefined, backfill: undefined, after: undefined, before: undefined })}
        >
          Clear filters
        </button>
      ) : null}
    </div>
  );
}

/** Runs as a table: id, status, origin, job or assets, partitions, created, duration, steps. */
export function RunTable({ runs, now }: { runs: readonly RunRow[]; now: number }) {
  if (runs.length === 0)
    return (
      <p className="muted" data-testid="runs-empty">
        No runs match.
      </p>
    );
  return (
    <table className="grid runs-table" data-testid="runs-table">
      <thead>
        <tr>
          <th>Run</th>
          <th>Status</th>
          <th>Origin</th>
          <th>Job / assets</th>
          <th>Partitions</th>
          <th>Created</th>
          <th>Duration</th>
          <th>Steps</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id} data-testid="run-row" data-status={r.status}>
            <td>
              <Link href={`/runs/${r.id}`} className="mono">
                {r.id.slice(0, 8)}
              </Link>
            </td>
            <td>
              <StateBadge state={r.status} />
            </td>
            <td>
              {r.origin}
              {r.backfillId ? (
                <>
                  {" "}
                  <Link href={`/backfills/${r.backfillId}`} className="muted" title="the backfill that created it">
                    ({r.backfillId.slice(0, 8)})
                  </Link>
                </>
              ) : null}
            </td>
            <td className="assets-cell">{r.jobName ? <strong>{r.jobName}</strong> : <AssetsSummary assets={r.assets} />}</td>
            <td className="mono">{partitionsSummary(r.assets)}</td>
            <td title={formatTime(r.createdAt)}>{formatAgo(r.createdAt, now)}</td>
            <td>{formatDuration(elapsedMs(r.startedAt, r.endedAt, now))}</td>
            <td>
              <StepsProgress run={r} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function AssetsSummary({ assets }: { assets: readonly { assetKey: string }[] }) {
  const keys = assets.map((a) => a.assetKey);
  const shown = keys.slice(0, 3);
  return (
    <span title={keys.join("\n")}>
      {shown.join(", ")}
      {keys.length > shown.length ? <span className="muted"> +{keys.length - shown.length} more</span> : null}
    </span>
  );
}

/**
 * "2025-01-01", "2025-01-01 … 2025-01-31 (31)", or "–" for unpartitioned runs: the key range over every asset, and
 * the most partitions any one asset has in the run.
 */
export function partitionsSummary(assets: readonly { steps: number; minPartition: string; maxPartition: string }[]): string {
  const partitioned = assets.filter((a) => a.maxPartition !== "");
  if (partitioned.length === 0) return "–";
  const first = partitioned.map((a) => a.minPartition || a.maxPartition).sort()[0]!;
  const last = partitioned
    .map((a) => a.maxPartition)
    .sort()
    .at(-1)!;
  const count = Math.max(...partitioned.map((a) => a.steps));
  return first === last ? first : `${first} … ${last} (${count})`;
}

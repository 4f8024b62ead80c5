import { useState } from "react";
import { Link, useSearchParams } from "wouter";
import { gql, useQuery } from "../api";
import { ErrorView, QueryView } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { assetPath, formatAgo, formatCount, formatDuration, formatTime } from "../format";
import "./Triggers.css";

interface Trigger {
  id: string;
  kind: string | null;
  status: string | null;
  args: unknown;
  assetKey: string | null;
  partitionKey: string | null;
  stepId: string | null;
  runId: string | null;
  attempts: number | null;
  createdAt: string | null;
  lastCheckedAt: string | null;
  nextCheckAt: string | null;
  timeoutAt: string | null;
  endedAt: string | null;
  pollIntervalMs: number | null;
  softFail: boolean | null;
  lastResult: unknown;
  error: unknown;
}

interface TriggerPage {
  triggers: { endCursor: string | null; hasNextPage: boolean | null; nodes: Trigger[] | null } | null;
}

type Counts = Record<"waiting" | "fired" | "failed" | "timedOut" | "canceled", number | null>;

const TRIGGER_FIELDS = `id kind status args assetKey partitionKey stepId runId attempts createdAt lastCheckedAt nextCheckAt timeoutAt endedAt pollIntervalMs softFail lastResult error`;
const TRIGGERS_QUERY = `query Triggers($status: String, $after: String, $first: Int) {
  triggers(status: $status, after: $after, first: $first) { endCursor hasNextPage nodes { ${TRIGGER_FIELDS} } }
}`;
const COUNTS_QUERY = `query TriggerCounts { triggerCounts { waiting fired failed timedOut canceled } }`;

/** The status filter's values (the API's) and the count field of each. */
const STATUSES: readonly { status: string; field: keyof Counts }[] = [
  { status: "waiting", field: "waiting" },
  { status: "fired", field: "fired" },
  { status: "timed_out", field: "timedOut" },
  { status: "failed", field: "failed" },
  { status: "canceled", field: "canceled" },
];

export function TriggersPage() {
  const [params, setParams] = useSearchParams();
  const status = params.get("status") ?? "";
  // The page size (1–500, the API's limits) can be set in the URL too: ?first=200.
  const first = Math.min(500, Math.max(1, Math.floor(Number(params.get("first"))) || 50));
  const counts = useQuery<{ triggerCounts: Counts | null }>(COUNTS_QUERY, {}, { pollMs: 5_000 });
  const setStatus = (value: string) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (value) next.set("status", value);
        else next.delete("status");
        return next;
      },
      { replace: true },
    );
  const total = counts.data?.triggerCounts ? STATUSES.reduce((n, s) => n + (counts.data!.triggerCounts![s.field] ?? 0), 0) : undefined;
  return (
    <div className="triggers">
      <h1>Triggers</h1>
      <p className="muted">
        What deferred steps and source assets wait on: the triggerer checks each waiting trigger until it fires or times out.
      </p>
      {counts.error ? <ErrorView error={counts.error} /> : null}
      <div className="toolbar triggers-filter" data-testid="trigger-counts">
        <button type="button" className={status === "" ? "active" : ""} onClick={() => setStatus("")}>
          all {total !== undefined ? formatCount(total) : ""}
        </button>
        {STATUSES.map((s) => (
          <button
            key={s.status}
            type="button"
            className={status === s.status ? "active" : ""}
            onClick={() => setStatus(s.status)}
            data-testid={`trigger-count-${s.status}`}
          >
            {s.status.replace("_", " ")} <strong>{formatCount(counts.data?.triggerCounts?.[s.field] ?? null)}</strong>
          </button>
        ))}
      </div>
      <TriggerList key={`${status}:${first}`} status={status} first={first} />
    </div>
  );
}

/** The first page (polled), then the pages "Load more" appended. */
function TriggerList({ status, first: pageSize }: { status: string; first: number }) {
  const vars = { first: pageSize, ...(status ? { status } : {}) };
  const [more, setMore] = useState<{ nodes: Trigger[]; endCursor: string | null; hasNextPage: boolean }>();
  const [loadingMore, setLoadingMore] = useState(false);
  const [moreError, setMoreError] = useState<Error>();
  // Polling keeps the first page live only while no further page is shown (appended pages would drift from it).
  const first = useQuery<TriggerPage>(TRIGGERS_QUERY, vars, more ? {} : { pollMs: 5_000 });

  const loadMore = async (after: string) => {
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const page = await gql<TriggerPage>(TRIGGERS_QUERY, { ...vars, after });
      setMore((prev) => ({
        nodes: [...(prev?.nodes ?? []), ...(page.triggers?.nodes ?? [])],
        endCursor: page.triggers?.endCursor ?? null,
        hasNextPage: !!page.triggers?.hasNextPage,
      }));
    } catch (err) {
      setMoreError(err as Error);
    } finally {
      setLoadingMore(false);
    }
  };

  return (
    <QueryView state={first} what="triggers">
      {(data) => {
        const nodes = [...(data.triggers?.nodes ?? []), ...(more?.nodes ?? [])];
        const cursor = more ? more.endCursor : (data.triggers?.endCursor ?? null);
        const hasNext = more ? more.hasNextPage : !!data.triggers?.hasNextPage;
        // A trigger fired between two pages can show up in both: keep its first row.
        const seen = new Set<string>();
        const rows = nodes.filter((t) => !seen.has(t.id) && !!seen.add(t.id));
        return (
          <>
            {rows.length === 0 ? (
              <p className="muted" data-testid="triggers-empty">
                {status
                  ? `No ${status.replace("_", " ")} triggers.`
                  : "No triggers yet: deferred steps and observed source assets create them."}
              </p>
            ) : (
              <table className="grid triggers-table" data-testid="triggers-table">
                <thead>
                  <tr>
                    <th>Trigger</th>
                    <th>Waits for</th>
                    <th>Asset / partition</th>
                    <th>Step</th>
                    <th>Checks</th>
                    <th>Last checked</th>
                    <th>Next check</th>
                    <th>Timeout</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((t) => (
                    <TriggerRow key={t.id} trigger={t} />
                  ))}
                </tbody>
              </table>
            )}
            {moreError ? <ErrorView error={moreError} title="Could not load more triggers" /> : null}
            {hasNext && cursor ? (
              <button type="button" onClick={() => void loadMore(cursor)} disabled={loadingMore} data-testid="triggers-more">
                {loadingMore ? "Loading…" : "Load more"}
              </button>
            ) : null}
            {more ? (
              <button
                type="button"
                className="triggers-refresh"
                onClick={() => {
                  setMore(undefined);
                  first.reload();
                }}
              >
                Back to the first page (live)
              </button>
            ) : null}
          </>
        );
      }}
    </QueryView>
  );
}

function compact(value: unknown): string {
  if (value == null) return "";
  if (typeof value === "string") return value;
  const text = JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

/** A result's or error's message when it has one, otherwise its JSON. */
function detailOf(value: unknown): string {
  if (value && typeof value === "object") {
    const v = value as Record<string, unknown>;
    if (typeof v.message === "string") return v.message;
    if (typeof v.detail === "string") return v.detail;
  }
  return compact(value);
}

function TriggerRow({ trigger: t }: { trigger: Trigger }) {
  const now = Date.now();
  const waiting = t.status === "waiting";
  return (
    <tr data-testid="trigger-row" data-trigger={t.id} data-status={t.status ?? ""}>
      <td>
        <StateBadge state={t.status} /> <span className="muted">#{t.id}</span>
        <div className="muted triggers-small" title={formatTime(t.createdAt)}>
          created {formatAgo(t.createdAt, now)}
        </div>
      </td>
      <td className="triggers-what">
        <code>{t.kind}</code>
        <div className="mono triggers-args" title={compact(t.args)}>
          {compact(t.args)}
        </div>
        {t.error ? (
          <div className="triggers-error" title={compact(t.error)}>
            {detailOf(t.error)}
          </div>
        ) : t.lastResult != null ? (
          <div className="muted triggers-small" title={compact(t.lastResult)}>
            {detailOf(t.lastResult)}
          </div>
        ) : null}
      </td>
      <td>
        {t.assetKey ? (
          <Link href={assetPath(t.assetKey)} className="mono">
            {t.assetKey}
          </Link>
        ) : (
          "–"
        )}
        {t.partitionKey ? <div className="mono triggers-small">{t.partitionKey}</div> : null}
      </td>
      <td>
        {t.runId ? (
          <Link href={`/runs/${t.runId}`}>{t.stepId ? `step ${t.stepId}` : "run"}</Link>
        ) : (
          <span className="muted">{t.stepId ? `step ${t.stepId}` : "source observation"}</span>
        )}
      </td>
      <td>
        {formatCount(t.attempts)}
        {t.pollIntervalMs ? <div className="muted triggers-small">every {formatDuration(t.pollIntervalMs)}</div> : null}
      </td>
      <td title={formatTime(t.lastCheckedAt)}>{formatAgo(t.lastCheckedAt, now)}</td>
      <td title={formatTime(t.nextCheckAt)}>
        {waiting ? formatAgo(t.nextCheckAt, now) : <span className="muted">{t.endedAt ? `ended ${formatAgo(t.endedAt, now)}` : "–"}</span>}
      </td>
      <td title={formatTime(t.timeoutAt)}>
        {t.timeoutAt ? formatAgo(t.timeoutAt, now) : <span className="muted">none</span>}
        {t.softFail ? <div className="muted triggers-small">skips the step</div> : null}
      </td>
    </tr>
  );
}

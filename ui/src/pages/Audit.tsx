import { useState } from "react";
import { Link } from "wouter";
import { gql, GraphQLRequestError, useQuery } from "../api";
import { ErrorView, QueryView } from "../components/QueryStates";
import { TextFilter } from "../components/TextFilter";
import { useUrlParams } from "../components/use-url-params";
import { assetPath, formatAgo, formatTime, jsonText, localToIso } from "../format";
import { isAdmin, useSession } from "../session";
import "./Audit.css";

const PAGE_SIZE = 50;

/** Outcomes as the API names them, and as the page says them. */
const OUTCOMES: readonly { value: string; label: string; color: string }[] = [
  { value: "success", label: "success", color: "#16a34a" },
  { value: "denied", label: "refused", color: "#ea580c" },
  { value: "failed", label: "failed", color: "#dc2626" },
];

export interface AuditRow {
  id: number;
  at: string;
  principal: string | null;
  principalKind: string | null;
  tokenId: string | null;
  token: { prefix: string; description: string } | null;
  action: string;
  outcome: string;
  reason: string | null;
  assets: string[];
  partitions: string[];
  runIds: string[];
  backfillIds: string[];
  address: string | null;
  detail: Record<string, unknown>;
}

const AUDIT_QUERY = `query Audit($principal: String, $action: String, $outcome: AuditOutcome, $since: DateTime, $before: Int, $first: Int) {
  auditEvents(principal: $principal, action: $action, outcome: $outcome, since: $since, before: $before, first: $first) {
    id at principal principalKind tokenId token { prefix description } action outcome reason
    assets partitions runIds backfillIds address detail
  }
}`;

interface AuditData {
  auditEvents: AuditRow[];
}

/** Detail keys the other columns already show. */
const SHOWN_DETAIL = new Set(["runId", "runIds", "backfillId", "reason", "missingRole", "asset", "error", "partitionCount"]);

/** /audit: every change and sign-in, newest first, filtered by user, action, outcome and time (in the URL); admins only. */
export function AuditPage() {
  const session = useSession();
  const admin = session.status === "ready" && isAdmin(session.session);
  return (
    <div className="audit-page" data-testid="audit-page">
      <h1>Audit trail</h1>
      {admin ? <AuditTrail /> : <AdminsOnly />}
    </div>
  );
}

function AdminsOnly() {
  return (
    <div className="card audit-admins-only" role="alert" data-testid="audit-admins-only">
      <strong>Only admins can read the audit trail.</strong> It takes the admin role without a team; an admin can grant it with{" "}
      <code>tributary grant admin --to &lt;user&gt;</code>.
    </div>
  );
}

function AuditTrail() {
  const [params, setParams] = useUrlParams();
  const outcome = OUTCOMES.some((o) => o.value === params.outcome) ? params.outcome : undefined;
  const since = localToIso(params.since);
  const filter = {
    ...(params.user ? { principal: params.user } : {}),
    ...(params.action ? { action: params.action } : {}),
    ...(outcome ? { outcome } : {}),
    ...(since ? { since } : {}),
  };
  // One more than shown: whether there are older records, without a second request.
  const state = useQuery<AuditData>(AUDIT_QUERY, { ...filter, first: PAGE_SIZE + 1 });
  const older = useOlderPages(JSON.stringify(filter), filter);

  if (state.error instanceof GraphQLRequestError && state.error.code === "FORBIDDEN") return <AdminsOnly />;
  return (
    <>
      <p className="muted">
        Every change and every sign-in, with who made it (and through which API token), on which assets and partitions, from where, and how
        it ended. Records are written with their change and cannot be edited.
      </p>
      <AuditFilters
        params={params}
        actions={[...new Set((state.data?.auditEvents ?? []).map((e) => e.action))].sort()}
        onChange={(changes) => setParams(changes)}
      />
      <QueryView state={state} what="the audit trail">
        {(data) => {
          const first = data.auditEvents.slice(0, PAGE_SIZE);
          const rows = [...first, ...older.rows];
          const more = older.pages > 0 ? older.more : data.auditEvents.length > PAGE_SIZE;
          return (
            <>
              <AuditTable rows={rows} />
              <div className="toolbar pager">
                {more ? (
                  <button type="button" data-testid="audit-older" disabled={older.loading} onClick={() => older.load(rows.at(-1)!.id)}>
                    {older.loading ? "Loading…" : "Load older"}
                  </button>
                ) : rows.length > 0 ? (
                  <span className="muted" data-testid="audit-end">
                    {rows.length === 1 ? "1 record" : `${rows.length} records`}, the oldest that match
                  </span>
                ) : null}
                <button
                  type="button"
                  onClick={() => {
                    older.reset();
                    state.reload();
                  }}
                >
                  Refresh
                </button>
                {state.loading ? <span className="muted">refreshing…</span> : null}
              </div>
              {older.error ? <ErrorView error={older.error} title="Could not load older records" /> : null}
            </>
          );
        }}
      </QueryView>
    </>
  );
}

/**
 * The pages after the first, loaded one at a time by "Load older" (each starts below the last id shown); a change of
 * filters (`key`) starts again from the first page.
 */
function useOlderPages(key: string, filter: Record<string, string>) {
  const [state, setState] = useState<{ key: string; rows: AuditRow[]; pages: number; more: boolean }>({
    key,
    rows: [],
    pages: 0,
    more: false,
  });
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const current = state.key === key ? state : { key, rows: [], pages: 0, more: false };
  return {
    rows: current.rows,
    pages: current.pages,
    more: current.more,
    loading,
    error,
    reset: () => setState({ key, rows: [], pages: 0, more: false }),
    load: (before: number) => {
      setLoading(true);
      setError(undefined);
      gql<AuditData>(AUDIT_QUERY, { ...filter, before, first: PAGE_SIZE + 1 }).then(
        (data) => {
          setState((s) => {
            const base = s.key === key ? s : { key, rows: [], pages: 0, more: false };
            return {
              key,
              rows: [...base.rows, ...data.auditEvents.slice(0, PAGE_SIZE)],
              pages: base.pages + 1,
              more: data.auditEvents.length > PAGE_SIZE,
            };
          });
          setLoading(false);
        },
        (err: Error) => {
          setError(err);
          setLoading(false);
        },
      );
    },
  };
}

function AuditFilters({
  params,
  actions,
  onChange,
}: {
  params: Readonly<Record<string, string>>;
  actions: readonly string[];
  onChange: (changes: Record<string, string | undefined>) => void;
}) {
  return (
    <div className="toolbar" data-testid="audit-filters">
      <TextFilter
        label="User"
        placeholder="user or service account"
        value={params.user}
        onCommit={(v) => onChange({ user: v })}
        testId="filter-user"
      />
      <TextFilter
        label="Action"
        placeholder="launchRun, signIn…"
        value={params.action}
        onCommit={(v) => onChange({ action: v })}
        testId="filter-action"
        suggestions={actions}
      />
      <label>
        Outcome{" "}
        <select data-testid="filter-outcome" value={params.outcome ?? ""} onChange={(e) => onChange({ outcome: e.target.value })}>
          <option value="">any</option>
          {OUTCOMES.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Since{" "}
        <input
          type="datetime-local"
          value={params.since ?? ""}
          onChange={(e) => onChange({ since: e.target.value })}
          data-testid="filter-since"
        />
      </label>
      {["user", "action", "outcome", "since"].some((k) => params[k]) ? (
        <button type="button" onClick={() => onChange({ user: undefined, action: undefined, outcome: undefined, since: undefined })}>
          Clear filters
        </button>
      ) : null}
    </div>
  );
}

/** The records: time, who, action, target, address, outcome. */
function AuditTable({ rows }: { rows: readonly AuditRow[] }) {
  if (rows.length === 0)
    return (
      <p className="muted" data-testid="audit-empty">
        No audit records match.
      </p>
    );
  const now = Date.now();
  return (
    <table className="grid audit-table" data-testid="audit-table">
      <thead>
        <tr>
          <th>Time</th>
          <th>Who</th>
          <th>Action</th>
          <th>Target</th>
          <th>Address</th>
          <th>Outcome</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((e) => (
          <tr key={e.id} data-testid="audit-row" data-id={e.id} data-action={e.action} data-outcome={e.outcome}>
            <td className="audit-time" title={e.at}>
              {formatTime(e.at)}
              <div className="muted audit-small">{formatAgo(e.at, now)}</div>
            </td>
            <td data-testid="audit-who">
              <Who event={e} />
            </td>
            <td className="mono" data-testid="audit-action">
              {e.action}
            </td>
            <td className="audit-target" data-testid="audit-target">
              <Target event={e} />
            </td>
            <td className="mono audit-small">{e.address ?? "–"}</td>
            <td data-testid="audit-outcome">
              <Outcome event={e} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const KIND_LABELS: Record<string, string> = { user: "user", service: "service account", local: "local" };

function Who({ event: e }: { event: AuditRow }) {
  return (
    <>
      <strong data-testid="audit-principal">{e.principal ?? "–"}</strong>{" "}
      {e.principalKind ? (
        <span className="audit-kind" data-testid="audit-kind">
          {KIND_LABELS[e.principalKind] ?? e.principalKind}
        </span>
      ) : (
        <span className="audit-kind" data-testid="audit-kind" title="Nobody proven acted: the name is the one given (a sign-in attempt)">
          unverified
        </span>
      )}
      {e.tokenId ? (
        <div className="muted audit-small" data-testid="audit-token">
          token{" "}
          {e.token ? (
            <>
              <code>{e.token.prefix}</code>
              {e.token.description ? ` (${e.token.description})` : ""}
            </>
          ) : (
            <code title={e.tokenId}>{e.tokenId.slice(0, 8)}</code>
          )}
        </div>
      ) : null}
    </>
  );
}

function Target({ event: e }: { event: AuditRow }) {
  const partitionCount = typeof e.detail.partitionCount === "number" ? e.detail.partitionCount : e.partitions.length;
  const rest = Object.entries(e.detail).filter(([k]) => !SHOWN_DETAIL.has(k));
  const shownAssets = e.assets.slice(0, 5);
  const shownPartitions = e.partitions.slice(0, 3);
  return (
    <>
      {shownAssets.length > 0 ? (
        <div>
          {shownAssets.map((key, i) => (
            <span key={key}>
              {i > 0 ? ", " : null}
              <Link href={assetPath(key)}>{key}</Link>
            </span>
          ))}
          {e.assets.length > shownAssets.length ? <span className="muted"> +{e.assets.length - shownAssets.length} more</span> : null}
        </div>
      ) : null}
      {partitionCount > 0 ? (
        <div className="mono audit-small" title={e.partitions.join("\n")}>
          {shownPartitions.join(", ")}
          {partitionCount > shownPartitions.length ? <span className="muted"> +{partitionCount - shownPartitions.length} more</span> : null}
        </div>
      ) : null}
      {e.runIds.length > 0 || e.backfillIds.length > 0 ? (
        <div className="audit-small">
          {e.runIds.map((id) => (
            <span key={id} className="audit-link">
              run{" "}
              <Link href={`/runs/${id}`} className="mono" data-testid="audit-run-link">
                {id.slice(0, 8)}
              </Link>
            </span>
          ))}
          {e.backfillIds.map((id) => (
            <span key={id} className="audit-link">
              backfill{" "}
              <Link href={`/backfills/${id}`} className="mono" data-testid="audit-backfill-link">
                {id.slice(0, 8)}
              </Link>
            </span>
          ))}
        </div>
      ) : null}
      {rest.length > 0 ? (
        <div className="muted audit-small audit-detail">{rest.map(([k, v]) => `${k}: ${jsonText(v)}`).join(" · ")}</div>
      ) : null}
      {shownAssets.length === 0 && partitionCount === 0 && e.runIds.length === 0 && e.backfillIds.length === 0 && rest.length === 0 ? (
        <span className="muted">–</span>
      ) : null}
    </>
  );
}

function Outcome({ event: e }: { event: AuditRow }) {
  const outcome = OUTCOMES.find((o) => o.value === e.outcome);
  return (
    <>
      <span className="badge" style={{ background: outcome?.color ?? "#a1a1aa" }} data-testid="audit-outcome-label">
        {outcome?.label ?? e.outcome}
      </span>
      {e.reason ? (
        <div className="audit-reason" data-testid="audit-reason">
          {e.reason}
        </div>
      ) : null}
    </>
  );
}

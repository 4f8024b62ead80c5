import { useState } from "react";
import { Link } from "wouter";
import { GraphQLRequestError, useMutation, useQuery } from "../api";
import { ErrorView, Loading, NotFound } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { assetPath, formatCount, formatDuration, formatTime } from "../format";
import { ACTIVE_ERASURE_STATES } from "../status";
import { RunLink } from "./AssetPageLinks";
import { ERASURE_ROW_FIELDS, ErasureProgress, type ErasureRow } from "./Erasures";
import "./Backfills.css";
import "./Erasures.css";

interface ErasureItem {
  assetKey: string;
  partitionKey: string;
  eventId: string | null;
  runId: string | null;
  stepId: string | null;
  erasedAt: string | null;
  /** The materialisation that re-created it from the cleaned source. */
  replacement: { eventId: string; runId: string | null; materializedAt: string | null } | null;
  skippedReason: string | null;
}

interface ErasureDeletion {
  kind: string;
  assetKey: string;
  partitionKey: string;
  runId: string | null;
  stepId: string | null;
  tryNumber: number | null;
  ref: string | null;
  sizeBytes: number | null;
  deletedAt: string;
}

interface ErasureHookCall {
  assetKey: string;
  partitionKeys: string[];
  attempt: number;
  state: string;
  startedAt: string;
  endedAt: string | null;
  error: string | null;
  log: string[];
}

interface ErasureReport {
  request: ErasureRow;
  items: ErasureItem[];
  deletions: ErasureDeletion[];
  hookCalls: ErasureHookCall[];
}

const ERASURE_QUERY = `query Erasure($id: ID!) {
  erasureRequest(id: $id) {
    request { ${ERASURE_ROW_FIELDS} }
    items { assetKey partitionKey eventId runId stepId erasedAt replacement { eventId runId materializedAt } skippedReason }
    deletions { kind assetKey partitionKey runId stepId tryNumber ref sizeBytes deletedAt }
    hookCalls { assetKey partitionKeys attempt state startedAt endedAt error log }
  }
}`;

// Retrying takes admin on the source asset, as requesting does.
const VIEWER_CAN = `query ($key: String!) { asset(key: $key) { viewerCan { administer } } }`;
const RETRY = `mutation ($id: ID!) { retryErasure(id: $id) { id state } }`;

/** The most rows a table draws; the rest are counted. */
const ROW_LIMIT = 1_000;

/**
 * /erasures/:id — the proof report of an erasure request: what it was asked to erase and why, each impacted partition
 * with when it was erased and the run that replaced it, every deletion, every call of an erase hook with its log.
 * Live until the request is done or failed.
 */
export function ErasurePage({ erasureId }: { erasureId: string }) {
  const [pollMs, setPollMs] = useState<number | undefined>(undefined);
  const report = useQuery<{ erasureRequest: ErasureReport | null }>(ERASURE_QUERY, { id: erasureId }, pollMs ? { pollMs } : {});
  const r = report.data?.erasureRequest;
  const state = r?.request.state;
  const active = state !== undefined && ACTIVE_ERASURE_STATES.has(state);
  if ((active ? 2_000 : undefined) !== pollMs) setPollMs(active ? 2_000 : undefined);
  const viewer = useQuery<{ asset: { viewerCan: { administer: boolean } | null } | null }>(
    VIEWER_CAN,
    { key: r?.request.assetKey ?? "" },
    { skip: state !== "failed" },
  );

  if (report.error && !report.data) {
    const notFound = report.error instanceof GraphQLRequestError && report.error.code === "ERASURE_NOT_FOUND";
    return notFound ? <NotFound what="Erasure request" id={erasureId} /> : <ErrorView error={report.error} />;
  }
  if (!report.data) return <Loading what="the erasure request" />;
  if (!r) return <NotFound what="Erasure request" id={erasureId} />;
  const q = r.request;
  return (
    <div className="erasure-page" data-testid="erasure-page" data-state={state}>
      {report.error ? <ErrorView error={report.error} title="Could not refresh the request" /> : null}
      <div className="toolbar">
        <h1>
          Erasure <span className="mono">{q.id}</span> <StateBadge state={state} />
        </h1>
        {state === "failed" && viewer.data?.asset?.viewerCan?.administer ? <RetryButton id={q.id} onDone={report.reload} /> : null}
      </div>
      <Summary report={r} active={active} />
      <ItemsTable items={r.items} />
      <DeletionsTable deletions={r.deletions} />
      <HookCalls calls={r.hookCalls} />
    </div>
  );
}

function RetryButton({ id, onDone }: { id: string; onDone: () => void }) {
  const retry = useMutation<{ retryErasure: { id: string; state: string } }>(RETRY);
  const run = async () => {
    if (await retry.run({ id })) onDone();
  };
  return (
    <>
      <button type="button" className="primary" disabled={retry.running} onClick={() => void run()} data-testid="erasure-retry">
        Retry
      </button>
      {retry.error ? <ErrorView error={retry.error} title="The retry failed" /> : null}
    </>
  );
}

function Summary({ report, active }: { report: ErasureReport; active: boolean }) {
  const q = report.request;
  const state = q.state;
  const replaced = report.items.filter((i) => i.replacement !== null).length;
  const skipped = report.items.filter((i) => i.skippedReason !== null).length;
  const assets = new Set(report.items.map((i) => i.assetKey)).size;
  const keys = q.partitionKeys.filter((k) => k !== "");
  return (
    <div className="card" data-testid="erasure-summary">
      <div className="bf-facts">
        <div>
          <div className="fact-label">Source</div>
          <Link href={assetPath(q.assetKey)} className="mono" data-testid="erasure-source">
            {q.assetKey}
          </Link>
          <div className="mono erasure-keys" data-testid="erasure-source-partitions">
            {keys.length === 0 ? <span className="muted">(unpartitioned)</span> : keys.slice(0, 20).join(", ")}
            {keys.length > 20 ? <span className="muted"> and {formatCount(keys.length - 20)} more</span> : null}
          </div>
        </div>
        <div>
          <div className="fact-label">Reason</div>
          <div data-testid="erasure-reason">{q.reason ?? <span className="muted">none given</span>}</div>
        </div>
        <div>
          <div className="fact-label">Requested</div>
          <div>
            {q.requestedBy ?? <span className="muted">unknown</span>}, {formatTime(q.createdAt)}
          </div>
        </div>
        <div>
          <div className="fact-label">{q.finishedAt ? "Finished" : "Updated"}</div>
          <div>{formatTime(q.finishedAt ?? q.updatedAt)}</div>
        </div>
        <div>
          <div className="fact-label">Failed attempts</div>
          <div>{formatCount(q.attempts)}</div>
        </div>
        <div>
          <div className="fact-label">Re-materialisation</div>
          <div>
            {q.backfillId ? (
              <Link href={`/backfills/${q.backfillId}`} className="mono" data-testid="erasure-backfill">
                backfill {q.backfillId.slice(0, 8)}
              </Link>
            ) : (
              <span className="muted">{state === "done" ? "none needed" : "not launched yet"}</span>
            )}
          </div>
        </div>
      </div>
      <h2>Progress</h2>
      <div className="bf-progress">
        <ErasureProgress request={q} testId="erasure-progress" />
        <span className="muted" data-testid="erasure-counts" data-replaced={replaced} data-skipped={skipped}>
          {formatCount(q.erasedCount)} of {formatCount(q.itemCount)} partitions of {formatCount(assets)} asset{assets === 1 ? "" : "s"}{" "}
          erased · {formatCount(replaced)} re-materialised
          {skipped > 0 ? ` · ${formatCount(skipped)} not re-materialised` : ""} · {formatCount(report.deletions.length)} deletion
          {report.deletions.length === 1 ? "" : "s"} · {formatCount(report.hookCalls.length)} erase hook call
          {report.hookCalls.length === 1 ? "" : "s"}
        </span>
      </div>
      {q.message ? (
        state === "failed" ? (
          <div className="error" data-testid="erasure-message">
            <strong>Failed</strong>
            <div>{q.message}</div>
          </div>
        ) : (
          <p className="muted" data-testid="erasure-message">
            {active ? "Waiting: " : ""}
            {q.message}
          </p>
        )
      ) : null}
    </div>
  );
}

function ItemsTable({ items }: { items: readonly ErasureItem[] }) {
  return (
    <>
      <h2>Impacted partitions ({formatCount(items.length)})</h2>
      {items.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <table className="grid erasure-table" data-testid="erasure-items">
          <thead>
            <tr>
              <th>Asset</th>
              <th>Partition</th>
              <th>Data written by</th>
              <th>Erased</th>
              <th>Replaced by</th>
            </tr>
          </thead>
          <tbody>
            {items.slice(0, ROW_LIMIT).map((i) => (
              <tr
                key={`${i.assetKey}\n${i.partitionKey}`}
                data-testid="erasure-item"
                data-asset={i.assetKey}
                data-partition={i.partitionKey}
                data-erased={i.erasedAt ? "true" : "false"}
                data-replaced-by={i.replacement?.runId ?? ""}
              >
                <td>
                  <Link href={assetPath(i.assetKey)} className="mono">
                    {i.assetKey}
                  </Link>
                </td>
                <td className="mono">{i.partitionKey || <span className="muted">(unpartitioned)</span>}</td>
                <td>{i.runId ? <RunLink runId={i.runId} /> : <span className="muted">no materialisation</span>}</td>
                <td>{i.erasedAt ? formatTime(i.erasedAt) : <span className="muted">not yet</span>}</td>
                <td>
                  {i.replacement ? (
                    <>
                      {i.replacement.runId ? <RunLink runId={i.replacement.runId} /> : <span className="muted">a report</span>}{" "}
                      <span className="muted">{formatTime(i.replacement.materializedAt)}</span>
                    </>
                  ) : i.skippedReason ? (
                    <span className="muted">not re-materialised: {i.skippedReason}</span>
                  ) : (
                    <span className="muted">not yet</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {items.length > ROW_LIMIT ? <p className="muted">and {formatCount(items.length - ROW_LIMIT)} more partitions</p> : null}
    </>
  );
}

/** "812 B", "3.4 KiB", "1.2 MiB" */
function formatBytes(n: number | null): string {
  if (n === null) return "–";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

const DELETION_KINDS: Record<string, string> = { output: "stored output", object: "object", log: "try log" };

function DeletionsTable({ deletions }: { deletions: readonly ErasureDeletion[] }) {
  const totals = new Map<string, { count: number; bytes: number }>();
  for (const d of deletions) {
    const t = totals.get(d.kind) ?? { count: 0, bytes: 0 };
    totals.set(d.kind, { count: t.count + 1, bytes: t.bytes + (d.sizeBytes ?? 0) });
  }
  return (
    <>
      <h2>Deletions ({formatCount(deletions.length)})</h2>
      {totals.size > 0 ? (
        <p className="muted" data-testid="erasure-deletion-totals">
          {[...totals]
            .map(
              ([kind, t]) => `${formatCount(t.count)} ${DELETION_KINDS[kind] ?? kind}${t.count === 1 ? "" : "s"} (${formatBytes(t.bytes)})`,
            )
            .join(" · ")}
        </p>
      ) : null}
      {deletions.length === 0 ? (
        <p className="muted">Nothing deleted yet.</p>
      ) : (
        <table className="grid erasure-table" data-testid="erasure-deletions">
          <thead>
            <tr>
              <th>Kind</th>
              <th>Asset</th>
              <th>Partition</th>
              <th>Run</th>
              <th>Reference</th>
              <th>Size</th>
              <th>Deleted</th>
            </tr>
          </thead>
          <tbody>
            {deletions.slice(0, ROW_LIMIT).map((d, n) => (
              <tr key={`${d.kind}\n${d.ref ?? n}`} data-testid="erasure-deletion" data-kind={d.kind} data-asset={d.assetKey}>
                <td>{DELETION_KINDS[d.kind] ?? d.kind}</td>
                <td className="mono">{d.assetKey}</td>
                <td className="mono">{d.partitionKey || <span className="muted">(unpartitioned)</span>}</td>
                <td>
                  <RunLink runId={d.runId} />
                  {d.stepId !== null ? <span className="muted"> step {d.stepId}</span> : null}
                  {d.tryNumber !== null ? <span className="muted"> try {d.tryNumber}</span> : null}
                </td>
                <td className="mono erasure-ref">{d.ref ?? <span className="muted">–</span>}</td>
                <td>{d.sizeBytes === null ? <span className="muted">none written</span> : formatBytes(d.sizeBytes)}</td>
                <td>{formatTime(d.deletedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {deletions.length > ROW_LIMIT ? <p className="muted">and {formatCount(deletions.length - ROW_LIMIT)} more deletions</p> : null}
    </>
  );
}

function HookCalls({ calls }: { calls: readonly ErasureHookCall[] }) {
  return (
    <>
      <h2>Erase hook calls ({formatCount(calls.length)})</h2>
      {calls.length === 0 ? (
        <p className="muted">No impacted asset has an erase hook, or none has been called yet.</p>
      ) : (
        calls.map((c) => {
          const s = c.state;
          const keys = c.partitionKeys.filter((k) => k !== "");
          return (
            <div
              key={`${c.assetKey}\n${c.attempt}`}
              className="card erasure-hook"
              data-testid="erasure-hook-call"
              data-asset={c.assetKey}
              data-state={s}
            >
              <div className="toolbar">
                <Link href={assetPath(c.assetKey)} className="mono">
                  {c.assetKey}
                </Link>
                <StateBadge state={s} />
                <span className="muted">
                  attempt {c.attempt} ·{" "}
                  {keys.length === 0 ? "unpartitioned" : `${formatCount(keys.length)} partition${keys.length === 1 ? "" : "s"}`} · started{" "}
                  {formatTime(c.startedAt)}
                  {c.endedAt ? ` · took ${formatDuration(new Date(c.endedAt).getTime() - new Date(c.startedAt).getTime())}` : ""}
                </span>
              </div>
              {keys.length > 0 ? (
                <div className="mono muted erasure-keys">
                  {keys.slice(0, 20).join(", ")}
                  {keys.length > 20 ? ` and ${formatCount(keys.length - 20)} more` : ""}
                </div>
              ) : null}
              {c.error ? (
                <div className="error" data-testid="erasure-hook-error">
                  {c.error}
                </div>
              ) : null}
              {c.log.length > 0 ? (
                <pre className="erasure-hook-log" data-testid="erasure-hook-log">
                  {c.log.join("\n")}
                </pre>
              ) : (
                <div className="muted">It logged nothing.</div>
              )}
            </div>
          );
        })
      )}
    </>
  );
}

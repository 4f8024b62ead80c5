// The asset's checks: each with its latest result (of the chosen partition, else of any), and the history of
// results, newest first, of every check or of the one chosen (?check=).
import { useState } from "react";
import { Link } from "wouter";
import { useQuery } from "../api";
import { ErrorView, Loading } from "../components/QueryStates";
import { StackPager } from "../components/StackPager";
import { formatAgo, formatTime, jsonText } from "../format";
import type { PageParams } from "./asset-page-params";

const PAGE = 25;

const RESULT_FIELDS = "id checkName partitionKey passed severity blocking metadata error runId stepId tryNumber createdAt";

const CHECKS_QUERY = `query($key: String!, $partition: String) { asset(key: $key) {
  checks { name blocking severity description latestResult(partition: $partition) { ${RESULT_FIELDS} } }
} }`;

const RESULTS_QUERY = `query($key: String!, $partition: String, $check: String, $after: String) { asset(key: $key) {
  checkResults(partition: $partition, check: $check, first: ${PAGE}, after: $after) {
    endCursor hasNextPage nodes { ${RESULT_FIELDS} }
  } } }`;

/** The GraphQL CheckSeverity enum. */
type Severity = "WARN" | "ERROR";

interface CheckResult {
  id: string;
  passed: boolean;
  severity: Severity;
  blocking: boolean;
  metadata: Record<string, unknown> | null;
  error: { code?: string; message?: string } | null;
  runId: string | null;
  stepId: string | null;
  tryNumber: number | null;
  createdAt: string;
  partitionKey: string | null;
  checkName: string;
}

interface AssetCheck {
  name: string;
  blocking: boolean;
  severity: Severity;
  description: string | null;
  latestResult: CheckResult | null;
}

export function ChecksTab({ assetKey, partition, params }: { assetKey: string; partition: string | undefined; params: PageParams }) {
  const state = useQuery<{ asset: { checks: AssetCheck[] } | null }>(CHECKS_QUERY, { key: assetKey, partition: partition ?? null });
  const checks = state.data?.asset?.checks;
  const chosen = params.get("check");
  if (state.error && !checks) return <ErrorView error={state.error} />;
  if (!checks) return <Loading what="the checks" />;
  if (checks.length === 0) {
    return (
      <div className="muted" data-testid="checks-none">
        This asset has no checks. Declare one with <code>check(asset, {"{ name }"}, fn)</code> in its definitions file.
      </div>
    );
  }
  return (
    <div data-testid="checks">
      {state.error ? <ErrorView error={state.error} /> : null}
      <div className="toolbar muted">
        <span>
          Latest result{" "}
          {partition !== undefined ? (
            <>
              of partition <code>{partition}</code>
            </>
          ) : (
            "of any partition"
          )}
          .
        </span>
      </div>
      <table className="grid compact" data-testid="checks-table">
        <thead>
          <tr>
            <th>Check</th>
            <th>Blocking</th>
            <th>Severity</th>
            <th>Description</th>
            <th>Latest result</th>
          </tr>
        </thead>
        <tbody>
          {checks.map((c) => (
            <tr key={c.name} data-testid="check-row" data-check={c.name} className={c.name === chosen ? "chosen" : undefined}>
              <td>
                <button
                  type="button"
                  className="link-button mono"
                  title="Show only this check's results"
                  onClick={() => params.set({ check: c.name === chosen ? undefined : c.name })}
                >
                  {c.name}
                </button>
              </td>
              <td>{c.blocking ? <strong>blocking</strong> : <span className="muted">non-blocking</span>}</td>
              <td>{c.severity.toLowerCase()}</td>
              <td>{c.description ?? <span className="muted">–</span>}</td>
              <td data-testid="check-latest">
                {c.latestResult ? (
                  <>
                    <ResultBadge result={c.latestResult} />
                    {c.latestResult.partitionKey ? <span className="mono"> {c.latestResult.partitionKey}</span> : null}{" "}
                    <span className="muted small" title={formatTime(c.latestResult.createdAt)}>
                      {formatAgo(c.latestResult.createdAt)}
                    </span>{" "}
                    <ResultRunLink result={c.latestResult} />
                  </>
                ) : (
                  <span className="muted">not run yet</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3 className="checks-history-title">Results</h3>
      {/* A new partition or check starts at the newest page again. */}
      <ResultPages
        key={`${partition ?? ""}\u0000${chosen ?? ""}`}
        assetKey={assetKey}
        partition={partition}
        check={chosen}
        checks={checks}
        params={params}
      />
    </div>
  );
}

function ResultPages({
  assetKey,
  partition,
  check,
  checks,
  params,
}: {
  assetKey: string;
  partition: string | undefined;
  check: string | undefined;
  checks: readonly AssetCheck[];
  params: PageParams;
}) {
  const [stack, setStack] = useState<(string | null)[]>([null]);
  const state = useQuery<{ asset: { checkResults: { endCursor: string | null; hasNextPage: boolean; nodes: CheckResult[] } } | null }>(
    RESULTS_QUERY,
    {
      key: assetKey,
      partition: partition ?? null,
      check: check ?? null,
      after: stack[stack.length - 1],
    },
  );
  const page = state.data?.asset?.checkResults;
  return (
    <div data-testid="check-results">
      <div className="toolbar">
        <label>
          Check{" "}
          <select data-testid="check-filter" value={check ?? ""} onChange={(e) => params.set({ check: e.target.value || undefined })}>
            <option value="">every check</option>
            {checks.map((c) => (
              <option key={c.name} value={c.name}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <span className="muted">
          {partition !== undefined ? (
            <>
              Of partition <code>{partition}</code>, newest first.
            </>
          ) : (
            "Of every partition, newest first."
          )}
        </span>
      </div>
      {state.error ? <ErrorView error={state.error} /> : null}
      {!page ? (
        state.error ? null : (
          <Loading what="the results" />
        )
      ) : page.nodes.length === 0 ? (
        <div className="muted" data-testid="check-results-none">
          No results yet
          {check ? (
            <>
              {" "}
              of <code>{check}</code>
            </>
          ) : null}
          : a check runs right after each materialisation of the asset.
        </div>
      ) : (
        <table className="grid compact" data-testid="check-results-table">
          <thead>
            <tr>
              <th>When</th>
              <th>Check</th>
              <th>Partition</th>
              <th>Result</th>
              <th>Metadata</th>
              <th>Error</th>
              <th>Run</th>
            </tr>
          </thead>
          <tbody>
            {page.nodes.map((r) => (
              <tr
                key={r.id}
                data-testid="check-result-row"
                data-check={r.checkName}
                data-partition={r.partitionKey ?? ""}
                data-passed={String(r.passed)}
                data-result-id={r.id}
              >
                <td title={formatTime(r.createdAt)}>
                  {formatTime(r.createdAt)} <span className="muted small">{formatAgo(r.createdAt)}</span>
                </td>
                <td className="mono">{r.checkName}</td>
                <td className="mono">{r.partitionKey ?? "–"}</td>
                <td>
                  <ResultBadge result={r} />
                </td>
                <td className="mono check-metadata" data-testid="check-result-metadata">
                  {r.metadata && Object.keys(r.metadata).length > 0 ? jsonText(r.metadata) : <span className="muted">–</span>}
                </td>
                <td className="check-error" data-testid="check-result-error">
                  {r.error ? (
                    <>
                      {r.error.code ? <code className="code">{r.error.code}</code> : null} {r.error.message ?? jsonText(r.error)}
                    </>
                  ) : (
                    <span className="muted">–</span>
                  )}
                </td>
                <td>
                  <ResultRunLink result={r} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <StackPager
        depth={stack.length}
        onBack={() => setStack((s) => s.slice(0, -1))}
        next={page?.hasNextPage ? (page.endCursor ?? undefined) : undefined}
        onNext={(cursor) => setStack((s) => [...s, cursor])}
      />
    </div>
  );
}

/** Passed, or failed (red when it blocks readers or its severity is error, amber for a warning). */
function ResultBadge({ result }: { result: CheckResult }) {
  const tone = result.passed ? "passed" : result.blocking || result.severity === "ERROR" ? "failed" : "warned";
  return (
    <span className={`check-result ${tone}`} data-testid="check-result" data-passed={String(result.passed)}>
      {result.passed ? "passed" : "failed"}
    </span>
  );
}

/** The run that recorded the result, opened at the check's step (and try) when known. */
function ResultRunLink({ result }: { result: CheckResult }) {
  if (!result.runId) return <span className="muted">–</span>;
  const query = result.stepId ? `?step=${result.stepId}${result.tryNumber ? `&try=${result.tryNumber}` : ""}` : "";
  return (
    <Link href={`/runs/${result.runId}${query}`} className="mono" data-testid="check-result-run">
      {result.runId.slice(0, 8)}
    </Link>
  );
}

// The latest automation decisions about the asset (or the chosen partition), with their reasons.
import { useQuery } from "../api";
import { ErrorView, Loading } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { formatCount, formatTime } from "../format";
import { stateColor } from "../status";
import { AssetLink, RunLink } from "./AssetPageLinks";

const EVALUATIONS_QUERY = `query($key: String!, $partition: String) {
  automationEvaluations(assetKey: $key, partition: $partition, first: 25) {
    condition summary paused partition
    records { id tick evaluatedAt decision condition partitions count runId
      reasons { operand detail upstream partitions runIds tick } }
  } }`;

interface Evaluations {
  condition: string | null;
  summary: string | null;
  paused: boolean;
  partition: string | null;
  records: {
    id: string;
    tick: number;
    evaluatedAt: string;
    decision: "requested" | "declined" | "skipped";
    condition: string | null;
    partitions: string[][];
    count: number | null;
    runId: string | null;
    reasons: {
      operand: string;
      detail: string;
      upstream: string | null;
      partitions: string[][] | null;
      runIds: string[] | null;
      tick: string | null;
    }[];
  }[];
}

const DECISION_STATE = { requested: "success", declined: "up_for_retry", skipped: "skipped" } as const;

const rangesText = (ranges: readonly (readonly string[])[]): string =>
  ranges.map(([a, b]) => (a === b ? (a === "" ? "(whole asset)" : a) : `${a} … ${b}`)).join(", ");

export function AutomationTab({ assetKey, partition }: { assetKey: string; partition: string | undefined }) {
  const state = useQuery<{ automationEvaluations: Evaluations | null }>(
    EVALUATIONS_QUERY,
    { key: assetKey, partition: partition ?? null },
    { pollMs: 15_000 },
  );
  const ev = state.data?.automationEvaluations;
  return (
    <div data-testid="automation">
      {state.error ? <ErrorView error={state.error} /> : null}
      {!ev ? (
        state.error ? null : (
          <Loading what="the automation decisions" />
        )
      ) : (
        <>
          <div className="toolbar">
            <span>
              Condition: <code>{ev.condition ?? "none"}</code>
            </span>
            {ev.paused ? <StateBadge state="paused" /> : null}
            {partition !== undefined ? (
              <span className="muted">
                decisions about <code>{partition}</code>
              </span>
            ) : null}
          </div>
          {ev.summary ? <p data-testid="automation-summary">{ev.summary}</p> : null}
          {ev.records.length === 0 ? (
            <div className="muted">No decisions recorded.</div>
          ) : (
            <table className="grid compact" data-testid="automation-table">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Decision</th>
                  <th>Partitions</th>
                  <th>Why</th>
                  <th>Run</th>
                </tr>
              </thead>
              <tbody>
                {ev.records.map((r) => (
                  <tr key={r.id}>
                    <td>
                      {formatTime(r.evaluatedAt)}
                      <div className="muted small">tick {r.tick}</div>
                    </td>
                    <td>
                      <span
                        className="badge"
                        data-decision={r.decision}
                        style={{ background: stateColor(DECISION_STATE[r.decision] ?? r.decision) }}
                      >
                        {r.decision}
                      </span>
                    </td>
                    <td>
                      {r.partitions.length === 0 ? (
                        <span className="muted">–</span>
                      ) : (
                        <span className="mono">{rangesText(r.partitions)}</span>
                      )}
                      {r.count != null && r.count > 1 ? <div className="muted small">{formatCount(r.count)} partitions</div> : null}
                    </td>
                    <td>
                      <ul className="reasons">
                        {r.reasons.map((x, i) => (
                          <li key={i}>
                            <code>{x.operand}</code> {x.detail}
                            {x.upstream ? (
                              <>
                                {" "}
                                (<AssetLink assetKey={x.upstream} />)
                              </>
                            ) : null}
                            {x.partitions ? <span className="muted mono"> [{rangesText(x.partitions)}]</span> : null}
                            {x.runIds && x.runIds.length > 0 ? (
                              <span>
                                {" "}
                                runs:{" "}
                                {x.runIds.map((id) => (
                                  <span key={id}>
                                    <RunLink runId={id} />{" "}
                                  </span>
                                ))}
                              </span>
                            ) : null}
                          </li>
                        ))}
                      </ul>
                    </td>
                    <td>
                      <RunLink runId={r.runId} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </div>
  );
}

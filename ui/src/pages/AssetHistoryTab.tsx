// Materialisations, external reports and observations of the asset (or of the chosen partition), newest first.
import { useState } from "react";
import { useQuery } from "../api";
import { ErrorView, Loading } from "../components/QueryStates";
import { StackPager } from "../components/StackPager";
import { formatAgo, formatTime } from "../format";
import { RunLink } from "./AssetPageLinks";

const PAGE = 25;
const HISTORY_QUERY = `query($key: String!, $partition: String, $after: String) { asset(key: $key) {
  materializations(partition: $partition, first: ${PAGE}, after: $after) {
    endCursor hasNextPage nodes { eventId kind createdAt partitionKey runId stepId dataVersion codeVersion }
  } } }`;

interface Event {
  eventId: string;
  kind: "MATERIALIZATION" | "EXTERNAL" | "OBSERVATION";
  createdAt: string;
  partitionKey: string | null;
  runId: string | null;
  stepId: string | null;
  dataVersion: string | null;
  codeVersion: string | null;
}

const KIND_LABEL: Record<Event["kind"], string> = { MATERIALIZATION: "materialisation", EXTERNAL: "report", OBSERVATION: "observation" };

export function HistoryTab({ assetKey, partition }: { assetKey: string; partition: string | undefined }) {
  // A new partition starts at the newest page again.
  return <HistoryPages key={partition ?? ""} assetKey={assetKey} partition={partition} />;
}

function HistoryPages({ assetKey, partition }: { assetKey: string; partition: string | undefined }) {
  const [stack, setStack] = useState<(string | null)[]>([null]);
  const state = useQuery<{ asset: { materializations: { endCursor: string | null; hasNextPage: boolean; nodes: Event[] } } | null }>(
    HISTORY_QUERY,
    {
      key: assetKey,
      partition: partition ?? null,
      after: stack[stack.length - 1],
    },
  );
  const page = state.data?.asset?.materializations;
  return (
    <div data-testid="history">
      <div className="toolbar muted">
        {partition !== undefined ? (
          <>
            Of partition <code>{partition}</code>, newest first.
          </>
        ) : (
          "Of every partition, newest first."
        )}
      </div>
      {state.error ? <ErrorView error={state.error} /> : null}
      {!page ? (
        state.error ? null : (
          <Loading what="the history" />
        )
      ) : page.nodes.length === 0 ? (
        <div className="muted">Never materialised, reported or observed.</div>
      ) : (
        <table className="grid compact" data-testid="history-table">
          <thead>
            <tr>
              <th>When</th>
              <th>Partition</th>
              <th>Kind</th>
              <th>Run</th>
              <th>Data version</th>
              <th>Code version</th>
              <th>Event</th>
            </tr>
          </thead>
          <tbody>
            {page.nodes.map((e) => (
              <tr key={e.eventId} data-testid="history-row">
                <td title={formatTime(e.createdAt)}>
                  {formatTime(e.createdAt)} <span className="muted small">{formatAgo(e.createdAt)}</span>
                </td>
                <td className="mono">{e.partitionKey ?? "–"}</td>
                <td>{KIND_LABEL[e.kind] ?? e.kind}</td>
                <td>
                  <RunLink runId={e.runId} />
                </td>
                <td className="mono">{e.dataVersion ?? "–"}</td>
                <td className="mono">{e.codeVersion ?? "–"}</td>
                <td className="mono muted">{e.eventId}</td>
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

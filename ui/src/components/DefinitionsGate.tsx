import { useEffect, useState, type ReactNode } from "react";
import { useQuery } from "../api";
import { Loading } from "./QueryStates";

interface DefinitionsStatus {
  state: "LOADING" | "LOADED" | "FAILED" | null;
  message: string | null;
}

const STATUS_QUERY = `query DefinitionsStatus { definitionsStatus { state message } }`;
/** How often the status is asked again while the definitions load. */
const POLL_MS = 1_000;

/**
 * Shows its children once the server has its definitions: right after a start the graph is not loaded yet, and an
 * empty page would read as "no assets are defined". Meanwhile it says so, asking again every second.
 */
export function DefinitionsGate({ children }: { children: ReactNode }) {
  const [settled, setSettled] = useState<DefinitionsStatus | undefined>(undefined);
  const status = useQuery<{ definitionsStatus: DefinitionsStatus | null }>(
    STATUS_QUERY,
    {},
    { pollMs: POLL_MS, skip: settled !== undefined },
  );
  const current = status.data?.definitionsStatus;
  useEffect(() => {
    if (current && current.state !== "LOADING") setSettled(current);
  }, [current]);
  useEffect(() => {
    // A server that cannot say does not hold the page back: the page shows its own errors.
    if (status.error) setSettled({ state: null, message: null });
  }, [status.error]);

  if (settled) {
    return (
      <>
        {settled.state === "FAILED" ? (
          <div className="error" role="alert" data-testid="definitions-failed">
            <strong>The definitions could not be loaded</strong>
            <div>{settled.message}</div>
          </div>
        ) : null}
        {children}
      </>
    );
  }
  if (current?.state === "LOADING") {
    return (
      <div className="loading">
        <div data-testid="definitions-loading">loading definitions…</div>
        {current.message ? <div className="muted">({current.message})</div> : null}
      </div>
    );
  }
  return <Loading what="definitions" />;
}

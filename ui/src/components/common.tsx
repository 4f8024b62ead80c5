import type { ReactNode } from "react";
import { Link } from "wouter";
import { ApiUnreachableError, GraphQLRequestError, probeNow, useReachability } from "../api";
import { stateColor } from "../status";

/** The banner shown while the API cannot be reached; it retries by itself and on demand. */
export function ApiBanner() {
  const { down, reason } = useReachability();
  if (!down) return null;
  return (
    <div className="banner" role="alert" data-testid="api-banner">
      <strong>Cannot reach the Tributary API.</strong> {reason}. Retrying…{" "}
      <button type="button" onClick={() => void probeNow()}>
        Retry now
      </button>
    </div>
  );
}

/** A query's error, with its code: never swallowed. */
export function ErrorView({ error, title }: { error: Error; title?: string }) {
  const code = error instanceof GraphQLRequestError ? error.code : undefined;
  return (
    <div className="error" role="alert" data-testid="error">
      <strong>{title ?? (error instanceof ApiUnreachableError ? "The API is unreachable" : "The API answered with an error")}</strong>
      {code ? <code className="code">{code}</code> : null}
      <div>{error.message}</div>
    </div>
  );
}

export function NotFound({ what, id }: { what: string; id?: string }) {
  return (
    <div className="not-found" data-testid="not-found">
      <h1>{what} not found</h1>
      {id !== undefined ? (
        <p>
          There is no {what.toLowerCase()} <code>{id}</code>.
        </p>
      ) : null}
      <p>
        <Link href="/">Back to the assets</Link>
      </p>
    </div>
  );
}

export function Loading({ what }: { what?: string }) {
  return <div className="loading">Loading{what ? ` ${what}` : ""}…</div>;
}

/** A state as a coloured pill. */
export function StateBadge({ state }: { state: string | null | undefined }) {
  const s = state ?? "unknown";
  return (
    <span className="badge" data-state={s} style={{ background: stateColor(s) }}>
      {s.toLowerCase().replace(/_/g, " ")}
    </span>
  );
}

/** Data, loading and error of a query, in one place: shows the error or the spinner, else the children. */
export function QueryView<T>({ state, what, children }: { state: { data: T | undefined; error: Error | undefined }; what?: string; children: (data: T) => ReactNode }) {
  if (state.error && state.data === undefined) return <ErrorView error={state.error} />;
  if (state.data === undefined) return <Loading {...(what ? { what } : {})} />;
  return (
    <>
      {state.error ? <ErrorView error={state.error} /> : null}
      {children(state.data)}
    </>
  );
}

/**
 * Back / page n / next under a cursor-paged table: the pages walked so far are a stack of cursors (`depth` of
 * them); `next` is the cursor of the following page, undefined on the last one.
 */
export function StackPager<C>({
  depth,
  onBack,
  next,
  onNext,
  labels = ["← newer", "older →"],
  nextTestId,
}: {
  depth: number;
  onBack: () => void;
  next: C | undefined;
  onNext: (cursor: C) => void;
  labels?: readonly [string, string];
  nextTestId?: string;
}) {
  return (
    <div className="toolbar pager">
      <button type="button" disabled={depth === 1} onClick={onBack}>
        {labels[0]}
      </button>
      <span className="muted">page {depth}</span>
      <button type="button" disabled={next === undefined} onClick={() => next !== undefined && onNext(next)} data-testid={nextTestId}>
        {labels[1]}
      </button>
    </div>
  );
}


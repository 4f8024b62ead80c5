// What a page shows instead of (or above) its data: loading, an error, a thing not found, the API unreachable.
import type { ReactNode } from "react";
import { Link } from "wouter";
import { ApiUnreachableError, GraphQLRequestError, probeNow, useReachability } from "../api";

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

/** Data, loading and error of a query, in one place: shows the error or the spinner, else the children. */
export function QueryView<T>({
  state,
  what,
  children,
}: {
  state: { data: T | undefined; error: Error | undefined };
  what?: string;
  children: (data: T) => ReactNode;
}) {
  if (state.error && state.data === undefined) return <ErrorView error={state.error} />;
  if (state.data === undefined) return <Loading {...(what ? { what } : {})} />;
  return (
    <>
      {state.error ? <ErrorView error={state.error} /> : null}
      {children(state.data)}
    </>
  );
}

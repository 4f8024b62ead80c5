import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from "react";

/** A GraphQL error as the API reports it: its message says what to fix, `code` is stable. */
export class GraphQLRequestError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly path: readonly (string | number)[] | undefined,
  ) {
    super(message);
    this.name = "GraphQLRequestError";
  }
}

/** The API did not answer (network down, server stopped, a proxy's 502). */
export class ApiUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ApiUnreachableError";
  }
}

// ---- reachability: one banner for the whole page, and a retry that refetches every view ----

interface Reachability {
  readonly down: boolean;
  readonly reason: string;
  /** Bumped each time the API answers again, so views refetch. */
  readonly epoch: number;
}

let reachability: Reachability = { down: false, reason: "", epoch: 0 };
const listeners = new Set<() => void>();
let probe: ReturnType<typeof setTimeout> | undefined;
let probeDelayMs = 1_000;

function setReachability(next: Reachability): void {
  reachability = next;
  for (const l of listeners) l();
}

function markDown(reason: string): void {
  if (!reachability.down) setReachability({ ...reachability, down: true, reason });
  if (probe === undefined) probe = setTimeout(() => void probeNow(), probeDelayMs);
}

function markUp(): void {
  probeDelayMs = 1_000;
  if (reachability.down) setReachability({ down: false, reason: "", epoch: reachability.epoch + 1 });
}

/** Checks /healthz now; on success every view refetches, otherwise the next check backs off (up to 15 s). */
export async function probeNow(): Promise<void> {
  if (probe !== undefined) clearTimeout(probe);
  probe = undefined;
  try {
    const res = await fetch("/healthz", { cache: "no-store" });
    if (res.ok) return markUp();
    throw new Error(`/healthz answered ${res.status}`);
  } catch (err) {
    probeDelayMs = Math.min(probeDelayMs * 2, 15_000);
    markDown(reachability.reason || (err as Error).message);
  }
}

export function useReachability(): Reachability {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => reachability,
  );
}

// ---- the caller: a 401 means the session ended (or there never was one), and the sign-in page shows ----

const unauthenticatedListeners = new Set<() => void>();

/** Called whenever the API answers 401 (see session.ts). */
export function onUnauthenticated(listener: () => void): () => void {
  unauthenticatedListeners.add(listener);
  return () => unauthenticatedListeners.delete(listener);
}

// ---- requests ----

interface GraphQLResponse<T> {
  data?: T | null;
  errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[];
}

/** Posts a GraphQL operation; throws GraphQLRequestError (the first error, with its code) or ApiUnreachableError. */
export async function gql<T>(query: string, variables: Record<string, unknown> = {}, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch("/graphql", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ query, variables }),
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    markDown(`the request failed: ${(err as Error).message}`);
    throw new ApiUnreachableError(`Cannot reach the Tributary API: ${(err as Error).message}`);
  }
  const type = res.headers.get("content-type") ?? "";
  if (!type.includes("json")) {
    markDown(`the server answered ${res.status} ${res.statusText}`);
    throw new ApiUnreachableError(`The Tributary API answered ${res.status} ${res.statusText} instead of GraphQL`);
  }
  markUp();
  if (res.status === 401) for (const l of unauthenticatedListeners) l();
  const body = (await res.json()) as GraphQLResponse<T>;
  const first = body.errors?.[0];
  if (first) throw new GraphQLRequestError(first.message, first.extensions?.code, first.path);
  if (body.data == null) throw new GraphQLRequestError(`The API answered ${res.status} without data`, undefined, undefined);
  return body.data;
}

const prefetched = new Map<string, { at: number; answer: Promise<unknown> }>();
const PREFETCH_FRESH_MS = 10_000;

/**
 * Sends a query now, before any component asks for it (the entry does this for the page in the URL, so the
 * request does not wait for the first render); the first useQuery with the same query and variables takes the
 * answer instead of asking again.
 */
export function prefetch(query: string, variables: Record<string, unknown>): void {
  const answer = gql(query, variables);
  answer.catch(() => undefined); // the taker sees the error; nobody else must report it as unhandled
  prefetched.set(`${query}\n${JSON.stringify(variables)}`, { at: Date.now(), answer });
}

/** Drops answers sent for before a sign-in or sign-out: they were asked as someone else. */
export function forgetPrefetched(): void {
  prefetched.clear();
}

function takePrefetched<T>(query: string, variablesJson: string): Promise<T> | undefined {
  const key = `${query}\n${variablesJson}`;
  const entry = prefetched.get(key);
  if (!entry) return undefined;
  prefetched.delete(key);
  return Date.now() - entry.at <= PREFETCH_FRESH_MS ? (entry.answer as Promise<T>) : undefined;
}

export interface QueryState<T> {
  readonly data: T | undefined;
  readonly error: Error | undefined;
  readonly loading: boolean;
  /** Fetches again now (keeps showing the current data meanwhile). */
  readonly reload: () => void;
}

/**
 * Runs a query when the component mounts and whenever `variables` change (compared as JSON), again every
 * `pollMs` if given, and again when the API comes back after being unreachable. Stale answers are dropped.
 */
export function useQuery<T>(
  query: string,
  variables: Record<string, unknown> = {},
  options: { pollMs?: number; skip?: boolean } = {},
): QueryState<T> {
  const key = JSON.stringify(variables);
  const { epoch } = useReachability();
  const [state, setState] = useState<{ data: T | undefined; error: Error | undefined; loading: boolean; key: string }>({
    data: undefined,
    error: undefined,
    loading: !options.skip,
    key,
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const latest = useRef(0);

  useEffect(() => {
    if (options.skip) return;
    const id = ++latest.current;
    const abort = new AbortController();
    setState((s) => (s.key === key ? { ...s, loading: true } : { data: undefined, error: undefined, loading: true, key }));
    (takePrefetched<T>(query, key) ?? gql<T>(query, JSON.parse(key) as Record<string, unknown>, abort.signal)).then(
      (data) => id === latest.current && setState({ data, error: undefined, loading: false, key }),
      (error: Error) => {
        if (abort.signal.aborted || id !== latest.current) return;
        setState((s) => ({ data: s.key === key ? s.data : undefined, error, loading: false, key }));
      },
    );
    return () => abort.abort();
  }, [query, key, epoch, tick, options.skip]);

  useEffect(() => {
    if (!options.pollMs || options.skip) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") setTick((t) => t + 1);
    }, options.pollMs);
    return () => clearInterval(timer);
  }, [options.pollMs, options.skip]);

  return { data: state.key === key ? state.data : undefined, error: state.error, loading: state.loading, reload };
}

/** A mutation's state: run it with variables; its error stays shown until the next try. */
export function useMutation<T>(mutation: string): {
  run: (variables: Record<string, unknown>) => Promise<T | undefined>;
  running: boolean;
  error: Error | undefined;
  reset: () => void;
} {
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const run = useCallback(
    async (variables: Record<string, unknown>) => {
      setRunning(true);
      setError(undefined);
      try {
        return await gql<T>(mutation, variables);
      } catch (err) {
        setError(err as Error);
        return undefined;
      } finally {
        setRunning(false);
      }
    },
    [mutation],
  );
  return { run, running, error, reset: () => setError(undefined) };
}

/**
 * Follows a server-sent event stream; `onEvent` gets each event's name and its data (parsed when JSON). An `end`
 * event closes the stream (EventSource would otherwise reconnect and replay it); so does unmounting.
 */
export function useEventSource(url: string | undefined, onEvent: (event: string, data: unknown) => void, events: readonly string[]): void {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  const names = events.join(",");
  useEffect(() => {
    if (!url) return;
    const source = new EventSource(url);
    const listen = (name: string) => (e: MessageEvent<string>) => {
      let data: unknown = e.data;
      try {
        data = JSON.parse(e.data);
      } catch {
        // plain text data stays a string
      }
      if (name === "end") source.close();
      handler.current(name, data);
    };
    for (const name of names.split(",")) source.addEventListener(name, listen(name) as EventListener);
    return () => source.close();
  }, [url, names]);
}

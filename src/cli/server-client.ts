import { InputError, TributaryError } from "../errors/index.js";

/**
 * Operational commands ask a running server first (PGlite admits one process
 * at a time, and the server holds the data directory); with none running they
 * work in-process.
 */
export async function serverIsUp(url: string, timeoutMs = 400): Promise<boolean> {
  try {
    const res = await fetch(new URL("/healthz", url), { signal: AbortSignal.timeout(timeoutMs) });
    return res.ok;
  } catch {
    return false;
  }
}

/** One GraphQL request; GraphQL errors become TributaryErrors with their code. */
export async function graphql<T>(url: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(new URL("/graphql", url), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
  const first = body.errors?.[0];
  if (first) throw new TributaryError(first.extensions?.code ?? "API_ERROR", first.message);
  if (!body.data) throw new InputError(`the server at ${url} answered without data (HTTP ${res.status})`);
  return body.data;
}

import type { Kysely } from "kysely";
import { Catalog, observabilityOf, type ApiServices, type Observability } from "../../src/api/index.js";
import { apiServices, observabilityStores, type ApiParts } from "../../src/cli/runtime.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";
import { GraphCache, PgAlertStore, PgBackfillStore, PgDefinitionStore, PgRunStore, type Database } from "../../src/storage/index.js";

/**
 * The API's services over one database, wired as the runtime wires them. The
 * definitions, graph cache (ttl 0 unless given), catalog, runs, backfills and
 * alerts are built on `db` unless given (e.g. a harness's shared stores); no
 * executor is refused.
 */
export function apiServicesOn(db: Kysely<Database>, parts: Partial<Omit<ApiParts, "db">> = {}): ApiServices {
  const definitions = parts.definitions ?? new PgDefinitionStore(db);
  const graphs = parts.graphs ?? new GraphCache(definitions, 0);
  return apiServices({
    db,
    definitions,
    graphs,
    catalog: parts.catalog ?? new Catalog(graphs, definitions),
    runs: parts.runs ?? new PgRunStore(db, RUN_DECISIONS),
    backfills: parts.backfills ?? new PgBackfillStore(db),
    alerts: parts.alerts ?? new PgAlertStore(db),
    unavailableExecutors: parts.unavailableExecutors ?? new Map(),
    openAccess: parts.openAccess ?? true,
    outputStore: parts.outputStore ?? null,
    logsDir: parts.logsDir ?? null,
  });
}

/** `/metrics` and `/readyz` over one database's stores, as `tributary api` serves them. */
export function observabilityOn(db: Kysely<Database>, options: Parameters<typeof observabilityOf>[1] = {}): Observability {
  return observabilityOf(observabilityStores(db), options);
}

/** A GraphQL answer with its HTTP status. */
export type GraphQLAnswer<T> = { status: number; data?: T; errors?: { message: string; extensions?: { code?: string } }[] };

/** Posts a GraphQL request to an API app with an API token (`authorization: Bearer`). */
export async function graphqlWithToken<T>(
  app: { request(path: string, init: RequestInit): Response | Promise<Response> },
  token: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<GraphQLAnswer<T>> {
  const res = await app.request("/graphql", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, ...((await res.json()) as Omit<GraphQLAnswer<T>, "status">) };
}

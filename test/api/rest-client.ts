import { readFileSync } from "node:fs";
import type { Hono } from "hono";
import { sql, type Kysely } from "kysely";
import { expect } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { PgAirflowQueryStore, type Database } from "../../src/storage/index.js";
import { apiServicesOn } from "../support/api-services.js";
import type { Harness } from "../execution/harness.js";

// The REST tests' client: the API over a harness's real stores, every response checked against Airflow's own
// OpenAPI document (test/api/rest-airflow-v1.json, the implemented paths of Airflow's stable REST API v1).

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response bodies by path without narrowing each step
export type Json = Record<string, unknown> & { [k: string]: any };
interface SpecDoc {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
  components: { responses: Record<string, unknown>; schemas: Record<string, unknown> };
}
const spec = JSON.parse(readFileSync(new URL("./rest-airflow-v1.json", import.meta.url), "utf8")) as SpecDoc;
const { default: ResponseValidator } = (await import("openapi-response-validator")) as unknown as {
  default: new (args: unknown) => { validateResponse(status: number, body: unknown): unknown };
};
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const customFormats = { datetime: (v: string) => RFC3339.test(v), "date-time": (v: string) => RFC3339.test(v) };

/** The spec's validator for one operation's responses (response $refs resolved). */
export function validatorOf(path: string, method: string) {
  const responses = Object.fromEntries(
    Object.entries(spec.paths[path]![method]!.responses).map(([code, r]) => [
      code,
      r.$ref ? spec.components.responses[r.$ref.split("/").at(-1)!] : r,
    ]),
  );
  return new ResponseValidator({ responses, components: spec.components, customFormats });
}
const errorValidator = new ResponseValidator({
  responses: Object.fromEntries(
    [400, 404].map((s) => [s, { description: "", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }]),
  ),
  components: spec.components,
  customFormats,
});

/** The REST app over the harness's stores, as `tributary dev` wires it. */
export function restApp(h: Harness): Hono {
  const context = apiServicesOn(h.db, { graphs: h.graphs, definitions: h.definitions, runs: h.runs });
  return createApiApp({
    context,
    ping: async () => {},
    version: "test",
    rest: { queries: new PgAirflowQueryStore(h.db), logsDir: h.logsDir },
  });
}

/** Requests `path` under /api/v1 and checks status and body against the spec's operation (`op` = [spec path, method]). */
export async function call(app: Hono, op: [string, string], path: string, init: RequestInit = {}, status = 200): Promise<Json> {
  const res = await app.request(`/api/v1${path}`, init);
  const body = (await res.json()) as Json;
  expect({ status: res.status, body }).toMatchObject({ status });
  const problems = (
    status >= 400 && !(String(status) in spec.paths[op[0]]![op[1]]!.responses) ? errorValidator : validatorOf(...op)
  ).validateResponse(status, body);
  expect(problems).toBeUndefined();
  return body;
}

export const post = (body: unknown, contentType = "application/json"): RequestInit => ({
  method: "POST",
  headers: { "content-type": contentType },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** Row counts of the tables a clear or a run writes. */
export async function rowCounts(db: Kysely<Database>): Promise<{ runs: number; steps: number; events: number; step_deps: number }> {
  const { rows } = await sql<{ runs: number; steps: number; events: number; step_deps: number }>`
    select (select count(*)::int from runs) as runs, (select count(*)::int from steps) as steps,
           (select count(*)::int from events) as events, (select count(*)::int from step_deps) as step_deps`.execute(db);
  return rows[0]!;
}

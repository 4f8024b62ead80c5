import type { Context } from "hono";
import { z } from "zod";
import { MAX_AIRFLOW_PAGE, type AirflowPage } from "../../storage/index.js";
import { parseOr400, RestError } from "./rest-error.js";

/** Airflow's default page size. */
const DEFAULT_PAGE_LIMIT = 100;
/** The largest JSON body a REST request may send. */
export const MAX_BODY_BYTES = 64 * 1024;

const wholeNumber = (min: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, { error: "must be a whole number" })
    .transform(Number)
    .refine((n) => n >= min, { error: `must be at least ${min}` });

/** An RFC 3339 instant with its offset, as Airflow's `date-time` (and `datetime`) fields take. */
export const instant = z.iso
  .datetime({ offset: true, error: "must be an ISO 8601 date-time with a time zone, e.g. 2025-03-15T00:00:00Z" })
  .transform((s) => new Date(s));

const pageSchema = z.object({
  limit: wholeNumber(1).optional(),
  offset: wholeNumber(0).optional(),
});

/**
 * Airflow's limit/offset: limit defaults to 100, and (like Airflow's
 * maximum_page_limit) a larger limit is cut to {@link MAX_AIRFLOW_PAGE}.
 */
export function pageOf(c: Context): AirflowPage {
  const { limit, offset } = parseOr400(pageSchema, { limit: c.req.query("limit"), offset: c.req.query("offset") }, "query");
  return { limit: Math.min(limit ?? DEFAULT_PAGE_LIMIT, MAX_AIRFLOW_PAGE), offset: offset ?? 0 };
}

/** `order_by` limited to the given values (absent: the first one). */
export function orderOf<T extends string>(c: Context, allowed: readonly T[]): T {
  const given = c.req.query("order_by");
  if (given === undefined) return allowed[0]!;
  if (!(allowed as readonly string[]).includes(given)) {
    throw RestError.badRequest(`query.order_by: ${JSON.stringify(given)} is not supported; use one of ${allowed.join(", ")}`);
  }
  return given as T;
}

/** A boolean query parameter (`true`/`false`); undefined when absent. */
export function booleanParam(c: Context, name: string): boolean | undefined {
  const v = c.req.query(name);
  if (v === undefined) return undefined;
  if (v === "true" || v === "false") return v === "true";
  throw RestError.badRequest(`query.${name}: ${JSON.stringify(v)} must be true or false`);
}

/** A whole-number query or path value; 400 naming `where` otherwise. */
export function wholeNumberOf(value: string | undefined, where: string, min: number): number | undefined {
  return value === undefined ? undefined : parseOr400(wholeNumber(min), value, where);
}

/** The map_index query parameter (-1, the unmapped task, when absent). */
export function mapIndexOf(c: Context): number {
  const v = c.req.query("map_index");
  if (v === undefined) return -1;
  if (v === "-1") return -1;
  return wholeNumberOf(v, "query.map_index", 0)!;
}

/**
 * The JSON body of a POST (its size is capped by the app's body limit):
 * `application/json` only, parsed, then validated with the schema (400
 * naming the field on any problem).
 */
export async function jsonBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw RestError.badRequest(`Content-Type ${JSON.stringify(type || "(none)")} is not supported: send the body as application/json`);
  }
  const text = await c.req.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw RestError.badRequest(`body: not valid JSON (${(err as Error).message})`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw RestError.badRequest("body: must be a JSON object");
  return parseOr400(schema, body, "body");
}

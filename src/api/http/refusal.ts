import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { problem } from "../rest/rest-error.js";

/**
 * A request refused before any route sees it, in the error shape of the route
 * it was meant for: GraphQL's `{ errors }` at `/graphql`, Airflow's problem
 * document under `/api/v1`, and `{ error: { code, message } }` elsewhere.
 */
export function refusal(
  c: Context,
  status: ContentfulStatusCode,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): Response {
  const path = c.req.path;
  if (path === "/graphql" || path.startsWith("/graphql/")) {
    return c.json({ errors: [{ message, extensions: { code } }] }, status, headers);
  }
  if (path === "/api/v1" || path.startsWith("/api/v1/")) {
    return c.json({ ...problem(status, TITLES[status] ?? "Refused", message), code }, status, headers);
  }
  return c.json({ error: { code, message } }, status, headers);
}

const TITLES: Partial<Record<number, string>> = {
  400: "Bad request",
  403: "Forbidden",
  415: "Unsupported media type",
  421: "Misdirected request",
  429: "Too many requests",
};

import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { refusal } from "./refusal.js";

/** The setting that lists the origins allowed to call the API from a browser, named in refusals. */
export const CORS_ORIGINS_SETTING = "TRIBUTARY_CORS_ORIGINS";

/** Request headers a page on an allowed origin may send (the bearer token, JSON bodies, SSE's resume position). */
const ALLOWED_HEADERS = ["Authorization", "Content-Type", "Last-Event-ID"];

/**
 * CORS for exactly the origins listed: a request from one of them gets its
 * origin echoed back with credentials allowed (never `*`), and its preflight
 * is answered; a preflight from any other origin is refused with 403, and
 * other requests from it get no CORS headers, so the browser keeps the
 * response from the page. With no origins listed nothing gets CORS headers.
 */
export function corsAllowList(origins: readonly string[]): MiddlewareHandler {
  const allowed = new Set(origins);
  const allow = cors({
    origin: (origin) => (allowed.has(origin) ? origin : null),
    credentials: true,
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    allowHeaders: ALLOWED_HEADERS,
    exposeHeaders: ["Retry-After"],
    maxAge: 600,
  });
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (origin !== undefined && allowed.has(origin)) return allow(c, next);
    if (origin !== undefined && c.req.method === "OPTIONS" && c.req.header("access-control-request-method") !== undefined) {
      return refusal(
        c,
        403,
        "CORS_ORIGIN_NOT_ALLOWED",
        `origin "${origin}" may not call this server from a browser: it is not listed in ${CORS_ORIGINS_SETTING}`,
      );
    }
    await next();
    // Whether a response carries CORS headers depends on the Origin: a cache must keep one copy per origin.
    if (allowed.size > 0 && !/\borigin\b/i.test(c.res.headers.get("vary") ?? "")) c.res.headers.append("Vary", "Origin");
  };
}

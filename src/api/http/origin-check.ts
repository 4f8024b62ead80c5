import type { MiddlewareHandler } from "hono";
import { CORS_ORIGINS_SETTING } from "./cors-allow-list.js";
import { refusal } from "./refusal.js";
import { isSameOrigin, requestOrigin, type OriginOptions } from "./same-origin.js";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Refuses, with 403, a POST, PUT, PATCH or DELETE whose `Origin` is neither
 * this server's own nor one of `corsOrigins`: a form or script on another
 * site cannot make the browser act with the session cookie it holds for this
 * one. Requests without `Origin` (curl, the CLI, workers: they are not
 * browsers and carry their own credentials) are left to the auth layer.
 */
export function originCheck(corsOrigins: readonly string[], options: OriginOptions = {}): MiddlewareHandler {
  const allowed = new Set(corsOrigins);
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (origin === undefined || !STATE_CHANGING.has(c.req.method)) return next();
    if (allowed.has(origin) || isSameOrigin(c.req.raw, origin, options)) return next();
    return refusal(
      c,
      403,
      "ORIGIN_NOT_ALLOWED",
      `a ${c.req.method} from origin "${origin}" is refused: only this server's own pages (${requestOrigin(c.req.raw, options)}) ` +
        `and the origins listed in ${CORS_ORIGINS_SETTING} may change anything from a browser`,
    );
  };
}

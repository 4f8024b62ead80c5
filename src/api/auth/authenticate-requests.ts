import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { SESSION_COOKIE } from "../../access/index.js";
import { AuthenticationError } from "../../errors/index.js";
import type { AccessApi } from "../services.js";
import { setGuard } from "./request-guard.js";

/** Methods that change something: a request riding on a session cookie must come from the server's own pages. */
const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Settles who each request is before the routes behind it run, and refuses it when it must be someone: no
 * credential (401), a bad one (401), or a cookie-authenticated change sent from another origin (403).
 */
export function authenticateRequests(access: AccessApi, options: { allowedOrigins?: readonly string[] } = {}): MiddlewareHandler {
  return async (c, next) => {
    const presented = {
      authorization: c.req.header("authorization"),
      sessionId: getCookie(c, SESSION_COOKIE),
      address: clientAddress(c),
    };
    let caller;
    try {
      caller = await access.authenticator.callerOf(presented);
    } catch (err) {
      if (err instanceof AuthenticationError) return refuse(c, 401, err.code, err.message);
      throw err;
    }
    if (!caller) {
      return refuse(
        c,
        401,
        "UNAUTHENTICATED",
        "sign in, or send an API token (`tributary tokens create`) or an access token (POST /auth/token) as `Authorization: Bearer <token>`",
      );
    }
    if (caller.via === "session" && STATE_CHANGING.has(c.req.method) && !sameOrigin(c, options.allowedOrigins ?? [])) {
      return refuse(c, 403, "CROSS_ORIGIN_REFUSED", "a signed-in change must come from this server's own pages (Origin does not match)");
    }
    setGuard(c, access.guardFor(caller));
    return next();
  };
}

/** Whether the request's Origin is this server's own (scheme, host and port of the Host it was sent to) or an allowed one. */
export function sameOrigin(c: Context, allowedOrigins: readonly string[]): boolean {
  const origin = c.req.header("origin");
  // Browsers send Origin with every cross-origin request and with same-origin POSTs: one without it is not a page's.
  if (origin === undefined) return c.req.header("sec-fetch-site") === undefined || c.req.header("sec-fetch-site") === "same-origin";
  if (allowedOrigins.includes(origin)) return true;
  const host = c.req.header("host");
  if (!host) return false;
  const scheme = new URL(c.req.url).protocol;
  return origin === `${scheme}//${host}`;
}

/** The client's address, for the audit trail (null when the request did not come through a socket, as in tests). */
export function clientAddress(c: Context): string | null {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? null;
}

/** A refusal in the shape of the route's API: GraphQL errors for /graphql, Airflow's problem document elsewhere. */
export function refuse(c: Context, status: 401 | 403 | 429, code: string, message: string): Response {
  if (status === 401) c.header("WWW-Authenticate", 'Bearer realm="tributary"');
  if (new URL(c.req.url).pathname.startsWith("/graphql")) return c.json({ errors: [{ message, extensions: { code } }] }, status);
  return c.json(
    {
      type: "about:blank",
      title: status === 401 ? "Unauthenticated" : status === 403 ? "Forbidden" : "Too many requests",
      status,
      detail: message,
      code,
    },
    status,
  );
}

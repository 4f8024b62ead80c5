import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { SESSION_COOKIE } from "../../access/index.js";
import { AuthenticationError } from "../../errors/index.js";
import type { AccessApi } from "../services.js";
import { remoteAddressOf } from "../http/caller-key.js";
import { isSameOrigin } from "../http/same-origin.js";
import { setGuard } from "./request-guard.js";

/** Methods that change something: a request riding on a session cookie must come from the server's own pages. */
const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Settles who each request is before the routes behind it run, and refuses it when it must be someone: no
 * credential (401), a bad one (401), or a cookie-authenticated change sent from another origin (403).
 */
export function authenticateRequests(access: AccessApi, options: AuthHttpOptions = {}): MiddlewareHandler {
  return async (c, next) => {
    const presented = {
      authorization: c.req.header("authorization"),
      sessionId: getCookie(c, SESSION_COOKIE),
      address: clientAddress(c, options),
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
    if (caller.via === "session" && STATE_CHANGING.has(c.req.method) && !sameOrigin(c, options)) {
      return refuse(c, 403, "CROSS_ORIGIN_REFUSED", "a signed-in change must come from this server's own pages (Origin does not match)");
    }
    setGuard(c, access.guardFor(caller));
    return next();
  };
}

/**
 * Whether a request comes from this server's own pages (or an allowed origin): its Origin is the server's, or it has
 * none and the browser does not say it crossed sites (scripts and the CLI send no Origin).
 */
export function sameOrigin(c: Context, options: AuthHttpOptions): boolean {
  const origin = c.req.header("origin");
  if (origin === undefined) {
    const site = c.req.header("sec-fetch-site");
    return site === undefined || site === "same-origin" || site === "none";
  }
  return (options.allowedOrigins ?? []).includes(origin) || isSameOrigin(c.req.raw, origin, { trustProxy: options.trustProxy ?? false });
}

/** How the auth routes compare origins: the CORS allow-list, and whether a TLS proxy's X-Forwarded-Proto is believed. */
export interface AuthHttpOptions {
  readonly allowedOrigins?: readonly string[];
  readonly trustProxy?: boolean;
}

/** The client's address, for the audit trail (null when the request did not come through a socket, as in tests). */
export function clientAddress(c: Context, options: AuthHttpOptions = {}): string | null {
  return remoteAddressOf(c, options.trustProxy ?? false) ?? null;
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

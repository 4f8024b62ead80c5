import type { MiddlewareHandler } from "hono";
import { corsAllowList } from "./cors-allow-list.js";
import { hostCheck } from "./host-check.js";
import { originCheck } from "./origin-check.js";
import { securityHeaders } from "./security-headers.js";

/** What keeps browsers on other sites away from the API (docs/security.md); the defaults are the safe choice. */
export interface HttpSafetyOptions {
  /**
   * Host names clients reach the server by, `host` (any port) or `host:port`,
   * besides localhost, 127.0.0.1 and [::1] (always accepted); other `Host`
   * headers are refused with 421. Default: none.
   */
  publicHosts?: readonly string[];
  /** Origins (`https://app.example.com`) whose pages may call the API (CORS, with credentials). Default: none. */
  corsOrigins?: readonly string[];
  /** Believe `X-Forwarded-Proto` and `X-Forwarded-For` from a reverse proxy in front of the server. Default: false. */
  trustProxy?: boolean;
}

/**
 * The middleware in front of every route, outermost first: security headers
 * (also on the refusals below), the Host check, CORS, and the Origin check of
 * state-changing requests.
 */
export function httpSafety(options: HttpSafetyOptions = {}): MiddlewareHandler[] {
  const corsOrigins = options.corsOrigins ?? [];
  return [
    securityHeaders(),
    hostCheck(options.publicHosts ?? []),
    corsAllowList(corsOrigins),
    originCheck(corsOrigins, { trustProxy: options.trustProxy ?? false }),
  ];
}

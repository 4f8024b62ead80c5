import type { MiddlewareHandler } from "hono";

/**
 * The web UI's policy: every script, stylesheet, worker and request from this
 * server (the build has no inline script or style element; React sets styles
 * through the DOM, which a policy does not restrict), images also as data:
 * URLs (the favicon), and no framing.
 */
export const UI_CONTENT_SECURITY_POLICY = contentSecurityPolicy({ style: "'self'", font: "'self'" });

/**
 * GraphiQL's policy: its scripts come from this server too (the page has no
 * inline script), but its Monaco editor writes `<style>` elements and style
 * attributes as it runs, so styles need 'unsafe-inline'; its icon font is a
 * data: URL.
 */
export const GRAPHIQL_CONTENT_SECURITY_POLICY = contentSecurityPolicy({ style: "'self' 'unsafe-inline'", font: "'self' data:" });

/** A policy that loads everything from this server and is never framed; the pages differ in styles and fonts only. */
function contentSecurityPolicy(sources: { style: string; font: string }): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    `style-src ${sources.style}`,
    "img-src 'self' data:",
    `font-src ${sources.font}`,
    "connect-src 'self'",
    "worker-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * `X-Content-Type-Options: nosniff` on every response; on HTML pages (the UI,
 * GraphiQL at /graphql, the page saying the UI is not built) also a
 * Content-Security-Policy, `X-Frame-Options: DENY` (browsers without
 * frame-ancestors) and `Referrer-Policy: same-origin`.
 */
export function securityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const headers = c.res.headers;
    headers.set("X-Content-Type-Options", "nosniff");
    if (!(headers.get("content-type") ?? "").toLowerCase().startsWith("text/html")) return;
    headers.set("Content-Security-Policy", c.req.path === "/graphql" ? GRAPHIQL_CONTENT_SECURITY_POLICY : UI_CONTENT_SECURITY_POLICY);
    headers.set("X-Frame-Options", "DENY");
    headers.set("Referrer-Policy", "same-origin");
  };
}

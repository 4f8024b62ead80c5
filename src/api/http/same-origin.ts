/** How the server reads the scheme a browser used, for comparing origins. */
export interface OriginOptions {
  /**
   * Believe `X-Forwarded-Proto` (set by a reverse proxy that terminates TLS):
   * the browser's `https://` origin then matches a request the proxy forwards over plain HTTP.
   */
  trustProxy?: boolean;
}

/**
 * The origin a browser shows for a page of this server, as the request reached
 * it: its scheme (or, with `trustProxy`, `X-Forwarded-Proto`), and its `Host`.
 * Ports are explicit unless they are the scheme's default, as in an `Origin` header.
 */
export function requestOrigin(request: Request, options: OriginOptions = {}): string {
  const url = new URL(request.url);
  const forwarded = options.trustProxy ? request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() : undefined;
  const scheme = forwarded === "http" || forwarded === "https" ? forwarded : url.protocol.slice(0, -1);
  return originOf(`${scheme}://${url.host}`) ?? url.origin;
}

/**
 * Whether `origin` (an `Origin` header) is this server's own: the same scheme,
 * host and port as the request. `null` and anything that is not an http(s)
 * origin are not. The auth layer uses it to accept a session cookie only from
 * the server's own pages.
 */
export function isSameOrigin(request: Request, origin: string, options: OriginOptions = {}): boolean {
  const given = originOf(origin);
  return given !== undefined && given === requestOrigin(request, options);
}

/** `origin` in the form browsers send (lower case, default port left out); undefined when it is not an http(s) origin. */
export function originOf(origin: string): string | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  return url.origin;
}

import { createHash } from "node:crypto";
import type { Context } from "hono";

/** Who a request comes from, for the per-caller limits: requests with the same key share one budget. */
export type CallerKey = (request: Request, remoteAddress: string | undefined) => string;

/**
 * The default caller: the credentials when the request sends any (a hash of
 * its `Authorization` header, so one token is one caller wherever it runs),
 * else the address it comes from.
 */
export const defaultCallerKey: CallerKey = (request, remoteAddress) => {
  const authorization = request.headers.get("authorization");
  if (authorization) return `authorization:${createHash("sha256").update(authorization).digest("base64url")}`;
  return `address:${remoteAddress ?? "unknown"}`;
};

/**
 * The client's address: the socket's peer, or with `trustProxy` the address
 * the proxy appended last to `X-Forwarded-For` (the ones before it are what
 * the client claimed).
 */
export function remoteAddressOf(c: Context, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const forwarded = c.req.header("x-forwarded-for")?.split(",").at(-1)?.trim();
    if (forwarded) return forwarded;
  }
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

import type { MiddlewareHandler } from "hono";
import { refusal } from "./refusal.js";

/**
 * Names a browser only sends for a page it loaded from this machine: no DNS
 * name can stand for them, so they are always accepted.
 */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** The setting that lists the host names clients use, named in refusals. */
export const PUBLIC_HOSTS_SETTING = "TRIBUTARY_PUBLIC_HOSTS";

/**
 * The host name of a listen address, for the public hosts; undefined for a
 * wildcard (0.0.0.0, ::, ''), which says nothing about the names clients use.
 */
export function listenHostName(host: string): string | undefined {
  if (host === "" || host === "0.0.0.0" || host === "::" || host === "[::]" || host === "*") return undefined;
  return host.includes(":") && !host.startsWith("[") ? `[${host.toLowerCase()}]` : host.toLowerCase();
}

/**
 * Refuses, with 421, a request whose `Host` is not one of `publicHosts` (each
 * `host` for any port or `host:port` for one) nor a loopback name. A page that
 * DNS rebinding pointed at this server carries its own domain in `Host`, so
 * it is refused before any route runs.
 */
export function hostCheck(publicHosts: readonly string[]): MiddlewareHandler {
  const anyPort = new Set<string>(LOOPBACK_HOSTS);
  const withPort = new Set<string>();
  for (const entry of publicHosts) {
    const { name, port } = splitHost(entry);
    if (port === undefined) anyPort.add(name);
    else withPort.add(`${name}:${port}`);
  }
  return async (c, next) => {
    // The URL's authority is the Host header (normalised: lower case, no default port).
    const url = new URL(c.req.url);
    const name = url.hostname.replace(/\.$/, "");
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    if (anyPort.has(name) || withPort.has(`${name}:${port}`)) return next();
    const host = c.req.header("host") ?? url.host;
    return refusal(
      c,
      421,
      "HOST_NOT_ALLOWED",
      `this server does not answer to the host name "${host}": add it to ${PUBLIC_HOSTS_SETTING} ` +
        `(comma-separated host or host:port names) if clients reach the server by that name`,
    );
  };
}

/** `example.com:8080` → name and port; `[::1]:3000` keeps its brackets. */
function splitHost(entry: string): { name: string; port: string | undefined } {
  const lower = entry.trim().toLowerCase();
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(lower);
  if (!match) return { name: lower, port: undefined };
  let name = match[1]!;
  try {
    name = new URL(`http://${name}`).hostname; // as URLs spell it: [0:0::1] is [::1], 0x7f.1 is 127.0.0.1
  } catch {
    // Left as given: it matches no request then.
  }
  return { name: name.replace(/\.$/, ""), port: match[2] === undefined ? undefined : String(Number(match[2])) };
}

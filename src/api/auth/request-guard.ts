import type { Context } from "hono";
import type { Guard } from "../../access/index.js";

// The Guard the authentication middleware settled for each request, read again by the routes behind it (GraphQL,
// /api/v1, logs): they share the request's Hono context, whichever sub-app serves it.
const GUARD = "tributary.guard";

export function setGuard(c: Context, guard: Guard): void {
  c.set(GUARD as never, guard as never);
}

/** The request's Guard; a route reached without one is a wiring mistake, not a caller's. */
export function guardOf(c: Context): Guard {
  const guard = c.get(GUARD as never) as Guard | undefined;
  if (!guard) throw new Error(`no Guard was settled for ${c.req.method} ${c.req.path}: the authentication middleware must run first`);
  return guard;
}

// Who is signed in: GET /auth/session once at start, again after a sign-in; a 401 from the API (the session ended,
// expired, or was never there) shows the sign-in page. Without access control (dev) the caller is "local".
import { useSyncExternalStore } from "react";
import { forgetPrefetched, onUnauthenticated } from "./api";

export interface Grant {
  readonly role: string;
  readonly team: string | null;
}

export interface SessionCaller {
  readonly name: string;
  readonly kind: string;
  readonly grants: readonly Grant[];
}

export interface Session {
  /** False when the server lets every request in (dev on loopback, --insecure-no-auth). */
  readonly accessControl: boolean;
  readonly caller: SessionCaller | null;
  readonly oidc: { readonly enabled: boolean; readonly label?: string; readonly start?: string };
}

export type SessionState = { readonly status: "loading" } | { readonly status: "ready"; readonly session: Session };

let state: SessionState = { status: "loading" };
const listeners = new Set<() => void>();

function set(next: SessionState): void {
  state = next;
  for (const l of listeners) l();
}

// A server without access services (or one not reached) answers no session: the app shows its pages, and a 401
// from a query still brings up the sign-in page.
const UNKNOWN: Session = { accessControl: false, caller: null, oidc: { enabled: false } };

async function fetchSession(): Promise<Session> {
  try {
    const res = await fetch("/auth/session", { credentials: "same-origin", headers: { accept: "application/json" }, cache: "no-store" });
    if (!res.ok || !(res.headers.get("content-type") ?? "").includes("json")) return UNKNOWN;
    return (await res.json()) as Session;
  } catch {
    return UNKNOWN;
  }
}

/** Reads the session (once at start; again after a sign-in or when the API said the caller is unknown). */
export async function refreshSession(): Promise<void> {
  const session = await fetchSession();
  // Answers fetched while signed out are not what the signed-in user sees.
  if (session.caller) forgetPrefetched();
  set({ status: "ready", session });
}

onUnauthenticated(() => {
  if (state.status === "ready" && state.session.accessControl && state.session.caller === null) return;
  // The sign-in page at once; the session's OIDC option follows.
  const known = state.status === "ready" ? state.session : UNKNOWN;
  set({ status: "ready", session: { ...known, accessControl: true, caller: null } });
  void fetchSession().then((session) => {
    if (state.status === "ready" && state.session.caller === null)
      set({ status: "ready", session: { ...session, caller: null, accessControl: true } });
  });
});

export function useSession(): SessionState {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => state,
  );
}

/** What a failed sign-in says to the user. */
export type SignInResult = { readonly ok: true } | { readonly ok: false; readonly message: string; readonly code?: string };

/** POST /auth/login; on success the session (and the page wanted) follows. */
export async function signIn(username: string, password: string): Promise<SignInResult> {
  let res: Response;
  try {
    res = await fetch("/auth/login", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ username, password }),
    });
  } catch (err) {
    return { ok: false, message: `Cannot reach the Tributary API: ${(err as Error).message}` };
  }
  if (res.ok) {
    const session = await fetchSession();
    if (!session.caller) {
      return {
        ok: false,
        message: "The server signed you in, but this browser did not keep the session cookie (are cookies blocked for this site?).",
      };
    }
    forgetPrefetched();
    set({ status: "ready", session });
    return { ok: true };
  }
  const body = (await res.json().catch(() => ({}))) as { detail?: string; code?: string };
  const code = body.code;
  if (res.status === 401) return { ok: false, message: "The user name or password is wrong.", ...(code ? { code } : {}) };
  if (res.status === 429) {
    return { ok: false, message: `Too many failed sign-ins: ${body.detail ?? "try again later"}.`, ...(code ? { code } : {}) };
  }
  return { ok: false, message: `Sign-in failed (${res.status}): ${body.detail ?? res.statusText}`, ...(code ? { code } : {}) };
}

/** POST /auth/logout: the session ends on the server, and the sign-in page shows. */
export async function signOut(): Promise<void> {
  try {
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin", headers: { accept: "application/json" } });
  } finally {
    forgetPrefetched();
    const known = state.status === "ready" ? state.session : UNKNOWN;
    set({ status: "ready", session: { ...known, caller: null } });
  }
}

/** "admin", "operator of analytics, viewer of finance": what the caller's grants allow, for the header. */
export function roleSummary(grants: readonly Grant[]): string {
  if (grants.length === 0) return "no roles yet";
  return grants
    .map((g) => (g.team === null ? (g.role === "admin" ? "admin" : `${g.role} of every team`) : `${g.role} of ${g.team}`))
    .join(", ");
}

/** Whether the caller may launch a backfill of some asset: an operator or admin role anywhere. */
export function mayOperateSomewhere(session: Session): boolean {
  if (!session.accessControl) return true;
  return (session.caller?.grants ?? []).some((g) => g.role === "operator" || g.role === "admin");
}

/**
 * Whether the caller holds admin without a team (what GraphQL's `me.admin` says): pools, the audit trail. Without
 * access control every request is the local caller, who does.
 */
export function isAdmin(session: Session): boolean {
  if (!session.accessControl) return true;
  return (session.caller?.grants ?? []).some((g) => g.role === "admin" && g.team === null);
}

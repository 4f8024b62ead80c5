import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { ACCESS_TOKEN_TTL_SECONDS, SESSION_COOKIE, type Caller } from "../../access/index.js";
import { AuthenticationError, TributaryError } from "../../errors/index.js";
import type { AccessApi } from "../services.js";
import { clientAddress, refuse, sameOrigin, type AuthHttpOptions } from "./authenticate-requests.js";

const credentials = z.strictObject({
  username: z.string().min(1).max(100),
  password: z.string().min(1).max(1000),
});

/**
 * Sign-in routes: `POST /auth/token` (Airflow 3's token flow: credentials for a short-lived access token),
 * `POST /auth/login` and `/auth/logout` (the UI's session cookie), and `GET /auth/session` (who is signed in).
 */
export function authRoutes(access: AccessApi, options: AuthHttpOptions & { oidc?: { label: string } } = {}): Hono {
  const app = new Hono();
  const authenticator = access.authenticator;

  app.post("/token", async (c) => {
    const body = await credentialsOf(c);
    if (body instanceof Response) return body;
    return signingIn(c, async () => {
      const { token } = await authenticator.accessToken(body.username, body.password, clientAddress(c, options));
      return c.json({ access_token: token, token_type: "bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS }, 201);
    });
  });

  app.post("/login", async (c) => {
    // A foreign page signing a browser in as someone else is as bad as acting for them.
    if (!sameOrigin(c, options)) {
      return refuse(c, 403, "CROSS_ORIGIN_REFUSED", "sign in from this server's own sign-in page");
    }
    const body = await credentialsOf(c);
    if (body instanceof Response) return body;
    return signingIn(c, async () => {
      const { sessionId, caller, expiresAt } = await authenticator.signIn(body.username, body.password, clientAddress(c, options));
      setSessionCookie(c, sessionId, expiresAt);
      return c.json({ caller: callerView(caller) });
    });
  });

  app.post("/logout", async (c) => {
    if (!sameOrigin(c, options)) return refuse(c, 403, "CROSS_ORIGIN_REFUSED", "sign out from this server's own pages");
    const sessionId = getCookie(c, SESSION_COOKIE);
    if (sessionId) {
      const caller = await authenticator.callerOf({ sessionId, address: clientAddress(c, options) }).catch(() => undefined);
      if (caller) await authenticator.signOut(sessionId, caller);
    }
    deleteCookie(c, SESSION_COOKIE, { path: "/" });
    return c.json({ signedOut: true });
  });

  app.get("/session", async (c) => {
    let caller: Caller | undefined;
    try {
      caller = await authenticator.callerOf({
        authorization: c.req.header("authorization"),
        sessionId: getCookie(c, SESSION_COOKIE),
        address: clientAddress(c, options),
      });
    } catch {
      caller = undefined;
    }
    return c.json({
      accessControl: !authenticator.open,
      caller: caller ? callerView(caller) : null,
      oidc: options.oidc ? { enabled: true, label: options.oidc.label, start: "/auth/oidc/start" } : { enabled: false },
    });
  });
  return app;
}

/** The session cookie: HttpOnly, SameSite=Strict, Secure when the request came over TLS. */
export function setSessionCookie(c: Context, sessionId: string, expiresAt: Date): void {
  const tls = new URL(c.req.url).protocol === "https:" || c.req.header("x-forwarded-proto") === "https";
  setCookie(c, SESSION_COOKIE, sessionId, { httpOnly: true, sameSite: "Strict", secure: tls, path: "/", expires: expiresAt });
}

export function callerView(caller: Caller): { name: string; kind: string; grants: { role: string; team: string | null }[] } {
  return { name: caller.name, kind: caller.kind, grants: caller.grants.map((g) => ({ role: g.role, team: g.team })) };
}

async function credentialsOf(c: Context): Promise<z.infer<typeof credentials> | Response> {
  if (!(c.req.header("content-type") ?? "").startsWith("application/json")) {
    return c.json({ detail: 'send the credentials as JSON: {"username": …, "password": …}', code: "INPUT_INVALID" }, 415);
  }
  const parsed = credentials.safeParse(await c.req.json().catch(() => undefined));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return c.json(
      { detail: `body${issue?.path.length ? `.${issue.path.join(".")}` : ""}: ${issue?.message ?? "invalid"}`, code: "INPUT_INVALID" },
      400,
    );
  }
  return parsed.data;
}

async function signingIn(c: Context, fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AuthenticationError) return refuse(c, 401, err.code, err.message);
    if (err instanceof TributaryError && err.code === "SIGN_IN_THROTTLED") return refuse(c, 429, err.code, err.message);
    throw err;
  }
}

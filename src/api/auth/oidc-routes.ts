import { Hono, type Context } from "hono";
import { deleteCookie, getSignedCookie, setSignedCookie } from "hono/cookie";
import type * as Oidc from "openid-client";
import { oidcUserName } from "../../access/index.js";
import { AuthenticationError } from "../../errors/index.js";
import type { AccessApi } from "../services.js";
import { setSessionCookie } from "./auth-routes.js";
import { clientAddress } from "./authenticate-requests.js";

/** An OpenID Connect provider users sign in with. */
export interface OidcOptions {
  /** The provider's issuer URL (its discovery document is read from there, on the first sign-in). */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Where the provider sends the browser back; default: the origin the sign-in was started on + /auth/oidc/callback. */
  readonly redirectUrl?: string | undefined;
  /** The sign-in button's text: "Sign in with <label>". */
  readonly label: string;
}

/** The cookie carrying a sign-in in progress (state, nonce, PKCE verifier, the page wanted) to the callback. */
const FLOW_COOKIE = "tributary_oidc";
/** How long a user may take at the provider. */
const FLOW_TTL_SECONDS = 600;
/** How long the provider's discovery, token and userinfo endpoints may take to answer. */
const PROVIDER_TIMEOUT_SECONDS = 10;
const CALLBACK_PATH = "/auth/oidc/callback";

interface Flow {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  /** The page to return to: a path on this server. */
  readonly next: string;
  readonly redirectUri: string;
}

/** The OpenID Connect client library, loaded on first use: servers without OIDC sign-in never pay for loading it. */
let openidClient: typeof Oidc | undefined;
async function loadOpenidClient(): Promise<typeof Oidc> {
  openidClient ??= await import("openid-client");
  return openidClient;
}

/**
 * Sign-in through an OpenID Connect provider, the authorization code flow with PKCE: `GET /auth/oidc/start?next=/page`
 * sends the browser to the provider; `GET /auth/oidc/callback` takes its answer, verifies it (state, PKCE, the ID
 * token's signature, issuer, audience and nonce), signs in the user of that identity and returns to the page wanted.
 * Every refusal is a page (or JSON) saying what went wrong, and an audited failed sign-in.
 */
export function oidcRoutes(access: AccessApi, options: OidcOptions): Hono {
  const app = new Hono();
  const authenticator = access.authenticator;
  const provider = new ProviderConfiguration(options);
  // The flow cookie is signed: a value set by anyone but this server (a sibling domain's page) is not a flow.
  const flowSecret = async () => `oidc-flow:${(await authenticator.store.signingSecret()).secret}`;

  app.get("/start", async (c) => {
    const next = wantedPage(c.req.query("next"));
    if (authenticator.open) return c.redirect(next, 302); // nothing to sign in to
    const oidc = await loadOpenidClient();
    let config: Oidc.Configuration;
    try {
      config = await provider.configuration();
    } catch (err) {
      return failure(c, 502, "OIDC_PROVIDER_UNAVAILABLE", unavailable(options.issuer, err));
    }
    const flow: Flow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next,
      redirectUri: options.redirectUrl ?? `${ownOrigin(c)}${CALLBACK_PATH}`,
    };
    // Lax, not Strict: the provider's redirect back is a cross-site navigation, which must carry it.
    await setSignedCookie(c, FLOW_COOKIE, Buffer.from(JSON.stringify(flow)).toString("base64url"), await flowSecret(), {
      httpOnly: true,
      sameSite: "Lax",
      secure: isTls(c),
      path: "/auth/oidc",
      maxAge: FLOW_TTL_SECONDS,
    });
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: flow.redirectUri,
      scope: "openid profile email",
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: "S256",
    });
    return c.redirect(url.href, 302);
  });

  app.get("/callback", async (c) => {
    const oidc = await loadOpenidClient();
    const address = clientAddress(c);
    const refuse = async (status: 400 | 401 | 403 | 502, code: string, message: string, name: string | null = null) => {
      await authenticator.failedSignIn(name, address, "oidc", `${code}: ${message}`);
      return failure(c, status, code, message);
    };
    if (authenticator.open) return c.redirect("/", 302);
    const signed = await getSignedCookie(c, await flowSecret(), FLOW_COOKIE);
    // One answer per flow: a replayed callback finds no cookie.
    deleteCookie(c, FLOW_COOKIE, { path: "/auth/oidc", secure: isTls(c) });
    const flow = signed ? parseFlow(signed) : undefined;
    if (!flow) {
      return refuse(
        400,
        "OIDC_FLOW_MISSING",
        "this sign-in was not started in this browser, or took longer than 10 minutes: start it again from the sign-in page",
      );
    }
    const answer = new URL(c.req.url).searchParams;
    const providerError = answer.get("error");
    if (providerError) {
      const description = answer.get("error_description");
      return refuse(401, "OIDC_REFUSED", `the sign-in provider refused: ${providerError}${description ? ` (${description})` : ""}`);
    }
    if (answer.get("state") !== flow.state) {
      return refuse(
        400,
        "OIDC_STATE_MISMATCH",
        "the provider's answer is not for the sign-in started in this browser (its state differs): start again from the sign-in page",
      );
    }
    let config: Oidc.Configuration;
    try {
      config = await provider.configuration();
    } catch (err) {
      return refuse(502, "OIDC_PROVIDER_UNAVAILABLE", unavailable(options.issuer, err));
    }
    // The answer as the provider addressed it: the redirect URI it was given, with the parameters that came back.
    const current = new URL(flow.redirectUri);
    current.search = answer.toString();
    let tokens: Awaited<ReturnType<typeof Oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      if (isUnreachable(err)) return refuse(502, "OIDC_PROVIDER_UNAVAILABLE", unavailable(options.issuer, err));
      return refuse(401, "OIDC_REJECTED", `the sign-in provider's answer was not accepted: ${describe(err)}`);
    }
    const claims = tokens.claims();
    if (!claims) return refuse(401, "OIDC_REJECTED", "the sign-in provider sent no ID token");
    let named: { sub: string; preferred_username?: unknown; email?: unknown } = claims;
    // Providers that keep profile claims out of the ID token give them at the userinfo endpoint.
    if (claims.preferred_username === undefined && claims.email === undefined && tokens.access_token) {
      try {
        named = { ...(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)), sub: claims.sub };
      } catch {
        // The subject names the user.
      }
    }
    const name = oidcUserName(named);
    let session: { sessionId: string; expiresAt: Date };
    try {
      session = await authenticator.signInWithOidc({ issuer: claims.iss, subject: claims.sub, name }, address);
    } catch (err) {
      // Audited by the authenticator.
      if (err instanceof AuthenticationError) return failure(c, 403, err.code, err.message);
      throw err;
    }
    setSessionCookie(c, session.sessionId, session.expiresAt);
    return c.redirect(flow.next, 303);
  });

  return app;
}

/** The provider's metadata, discovered on first use and again after a failure (a provider down at startup is no crash). */
class ProviderConfiguration {
  readonly #options: OidcOptions;
  #config: Promise<Oidc.Configuration> | undefined;

  constructor(options: OidcOptions) {
    this.#options = options;
  }

  configuration(): Promise<Oidc.Configuration> {
    if (!this.#config) {
      const { issuer, clientId, clientSecret } = this.#options;
      // http:// only on this machine (the settings refuse it elsewhere): a test's or a developer's provider.
      const insecure = new URL(issuer).protocol === "http:";
      const config = loadOpenidClient().then((oidc) =>
        oidc.discovery(new URL(issuer), clientId, { client_secret: clientSecret }, oidc.ClientSecretBasic(clientSecret), {
          timeout: PROVIDER_TIMEOUT_SECONDS,
          ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
        }),
      );
      config.catch(() => {
        if (this.#config === config) this.#config = undefined;
      });
      this.#config = config;
    }
    return this.#config;
  }
}

/** `next` when it is a path on this server, else the catalog: a sign-in never sends the browser elsewhere. */
export function wantedPage(next: string | undefined): string {
  if (!next?.startsWith("/")) return "/";
  // Parsed as a browser would ("//host", "/\\host" and tabs in between all name another origin), then rebuilt.
  const base = "http://tributary.invalid";
  const url = new URL(next, base);
  return url.origin === base ? `${url.pathname}${url.search}${url.hash}` : "/";
}

function parseFlow(value: string): Flow | undefined {
  try {
    const flow = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Partial<Flow>;
    const fields = [flow.state, flow.nonce, flow.verifier, flow.next, flow.redirectUri];
    return fields.every((f) => typeof f === "string") ? (flow as Flow) : undefined;
  } catch {
    return undefined;
  }
}

function isTls(c: Context): boolean {
  return new URL(c.req.url).protocol === "https:" || c.req.header("x-forwarded-proto") === "https";
}

/** This server's origin as the browser reached it (behind a TLS proxy: https, from X-Forwarded-Proto). */
function ownOrigin(c: Context): string {
  const url = new URL(c.req.url);
  return `${isTls(c) ? "https:" : url.protocol}//${url.host}`;
}

function isUnreachable(err: unknown): boolean {
  return err instanceof TypeError || (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"));
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const detail =
    openidClient && err instanceof openidClient.ResponseBodyError
      ? (err.error_description ?? err.error)
      : err.cause instanceof Error
        ? err.cause.message
        : undefined;
  return detail && detail !== err.message ? `${err.message} (${detail})` : err.message;
}

function unavailable(issuer: string, err: unknown): string {
  return `the sign-in provider ${issuer} cannot be reached (${describe(err)}): try again in a moment, or sign in with a user name and password`;
}

/** A refusal: a page for a browser, a problem document for anything else. */
function failure(c: Context, status: 400 | 401 | 403 | 502, code: string, message: string): Response {
  if ((c.req.header("accept") ?? "").includes("text/html")) {
    c.header("Cache-Control", "no-store");
    return c.html(errorPage(code, message), status);
  }
  return c.json({ type: "about:blank", title: "Sign-in failed", status, detail: message, code }, status);
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

const errorPage = (code: string, message: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in failed · Tributary</title></head>
<body style="font:14px/1.45 system-ui,sans-serif;color:#18181b;background:#fafafa;margin:0">
<div style="background:#18181b;color:#fff;font-weight:700;padding:12px 16px">Tributary</div>
<main style="max-width:560px;margin:60px auto;padding:0 20px">
<h1 style="font-size:20px">Sign-in failed</h1>
<div role="alert" data-testid="oidc-error" style="background:#fef2f2;border:1px solid #fca5a5;color:#7f1d1d;padding:8px 12px;border-radius:6px">
<code>${escapeHtml(code)}</code><div>${escapeHtml(message)}</div></div>
<p><a href="/" style="color:#2563eb">Back to the sign-in page</a></p>
</main></body></html>`;

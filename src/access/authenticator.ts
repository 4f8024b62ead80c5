import { AuthenticationError, TributaryError } from "../errors/index.js";
import type { AccessStore, CredentialOwner, TeamRecord } from "../storage/index.js";
import { localCaller, type Caller, type CredentialKind } from "./caller.js";
import {
  API_TOKEN_PREFIX,
  decoyPasswordHash,
  looksLikeJwt,
  newSessionId,
  passwordMatches,
  secretHash,
  signAccessToken,
  verifyAccessToken,
} from "./credentials.js";
import type { OidcIdentity } from "./oidc-identity.js";
import { auditEntry } from "./request-access.js";
import { SignInThrottle } from "./sign-in-throttle.js";

/** The cookie a signed-in browser carries. */
export const SESSION_COOKIE = "tributary_session";
/** How long a sign-in session lasts. */
export const SESSION_TTL_MS = 12 * 3600_000;
/** How long the teams and what they own are reused between requests. */
const TEAMS_TTL_MS = 2_000;

export interface AuthenticatorOptions {
  /** No access control: every request is the local caller (dev on loopback, `--insecure-no-auth`). */
  readonly open: boolean;
  readonly now?: () => Date;
}

/** What a request presents: its Authorization header and its session cookie's value. */
export interface Presented {
  readonly authorization?: string | undefined;
  readonly sessionId?: string | undefined;
  readonly address: string | null;
}

/** Turns what a request presents into a Caller: API tokens, access tokens (JWT) and session cookies. */
export class Authenticator {
  readonly open: boolean;
  readonly #store: AccessStore;
  readonly #now: () => Date;
  readonly #throttle = new SignInThrottle();
  #teams: { at: number; teams: Promise<readonly TeamRecord[]> } | undefined;

  constructor(store: AccessStore, options: AuthenticatorOptions) {
    this.#store = store;
    this.open = options.open;
    this.#now = options.now ?? (() => new Date());
  }

  get store(): AccessStore {
    return this.#store;
  }

  /**
   * The caller, or undefined when the request presents nothing (and access control is on). A credential that is
   * malformed, expired, revoked or unknown is an AuthenticationError, even where nothing would be needed.
   */
  async callerOf(presented: Presented): Promise<Caller | undefined> {
    if (this.open) return localCaller(presented.address);
    const now = this.#now();
    if (presented.authorization !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(presented.authorization);
      if (!match) {
        throw new AuthenticationError('the Authorization header must be "Bearer <token>"', { code: "TOKEN_MALFORMED" });
      }
      const credential = match[1]!;
      if (credential.startsWith(API_TOKEN_PREFIX)) {
        const owner = await this.#store.tokenOwner(secretHash(credential), now);
        if (!owner) {
          throw new AuthenticationError("the API token is unknown, expired or revoked; create a new one with `tributary tokens create`", {
            code: "TOKEN_INVALID",
          });
        }
        return callerFrom(owner, "api-token", presented.address);
      }
      if (looksLikeJwt(credential)) {
        const principalId = await verifyAccessToken(await this.#store.signingSecret(), credential, now);
        const principal = await this.#store.principalById(principalId);
        if (!principal || principal.disabled) {
          throw new AuthenticationError("the access token's user is disabled or gone", { code: "TOKEN_INVALID" });
        }
        return callerFrom({ principal, tokenId: null }, "access-token", presented.address);
      }
      throw new AuthenticationError(`the bearer token is neither an API token (${API_TOKEN_PREFIX}…) nor an access token (JWT)`, {
        code: "TOKEN_MALFORMED",
      });
    }
    if (presented.sessionId !== undefined) {
      const owner = await this.#store.sessionOwner(secretHash(presented.sessionId), now);
      if (!owner) throw new AuthenticationError("the sign-in session has ended; sign in again", { code: "SESSION_EXPIRED" });
      return callerFrom(owner, "session", presented.address);
    }
    return undefined;
  }

  /**
   * Checks a user's password, slowing down repeated failures; every attempt is audited. Throws AuthenticationError
   * (a wrong name or password alike) or SIGN_IN_THROTTLED.
   */
  async checkPassword(name: string, password: string, address: string | null, action: string): Promise<Caller> {
    const now = this.#now();
    const wait = this.#throttle.waitMs(name, now.getTime());
    const attempt = { principalId: null, principalName: name, action, address, assets: [], partitions: [] } as const;
    if (wait > 0) {
      await this.#store.audit({ ...attempt, outcome: "denied", detail: { reason: "throttled" } }, now);
      throw new TributaryError("SIGN_IN_THROTTLED", `too many failed sign-ins for "${name}"; try again in ${Math.ceil(wait / 1000)} s`);
    }
    const stored = await this.#store.passwordHash(name);
    const ok = await passwordMatches(stored?.hash ?? (await decoyPasswordHash()), password);
    if (!stored || !ok) {
      this.#throttle.failed(name, now.getTime());
      await this.#store.audit({ ...attempt, outcome: "failed", detail: { reason: "bad name or password" } }, now);
      throw new AuthenticationError("the user name or password is wrong", { code: "SIGN_IN_FAILED" });
    }
    this.#throttle.succeeded(name);
    return callerFrom({ principal: stored.principal, tokenId: null }, "session", address);
  }

  /** Signs a user in with a password: a new session (its id is the cookie's value), audited in its transaction. */
  async signIn(name: string, password: string, address: string | null): Promise<{ sessionId: string; caller: Caller; expiresAt: Date }> {
    const caller = await this.checkPassword(name, password, address, "signIn");
    return { ...(await this.startSession(caller, "password")), caller };
  }

  /** A session for a caller already proven (a password, or an OIDC provider's answer). */
  async startSession(caller: Caller, method: "password" | "oidc"): Promise<{ sessionId: string; expiresAt: Date }> {
    const now = this.#now();
    const session = newSessionId();
    const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
    await this.#store.createSession(
      { idHash: session.hash, principalId: caller.principalId!, method, expiresAt },
      auditEntry(caller, "signIn", { detail: { method } }),
      now,
    );
    return { sessionId: session.id, expiresAt };
  }

  /**
   * Signs in the user of an identity an OIDC provider vouched for (the store finds, links or creates it): a new
   * session, audited. A disabled user is refused (AuthenticationError USER_DISABLED), and that is audited too.
   */
  async signInWithOidc(identity: OidcIdentity, address: string | null): Promise<{ sessionId: string; caller: Caller; expiresAt: Date }> {
    const now = this.#now();
    const detail = { method: "oidc", issuer: identity.issuer, subject: identity.subject };
    const principal = await this.#store.oidcPrincipal(
      identity.issuer,
      identity.subject,
      identity.name,
      { principalId: null, principalName: identity.name, action: "createUser", outcome: "success", address, detail },
      now,
    );
    if (principal.disabled) {
      await this.failedSignIn(principal.name, address, "oidc", "the user is disabled");
      throw new AuthenticationError(`the user "${principal.name}" is disabled; an admin can enable it again`, { code: "USER_DISABLED" });
    }
    const caller = callerFrom({ principal, tokenId: null }, "session", address);
    return { ...(await this.startSession(caller, "oidc")), caller };
  }

  /** Audits a sign-in that did not happen (a provider's refusal, a forged or stale answer, a disabled user). */
  async failedSignIn(name: string | null, address: string | null, method: "password" | "oidc", reason: string): Promise<void> {
    await this.#store.audit(
      {
        principalId: null,
        principalName: name,
        action: "signIn",
        outcome: "failed",
        address,
        assets: [],
        partitions: [],
        detail: { method, reason },
      },
      this.#now(),
    );
  }

  async signOut(sessionId: string, caller: Caller): Promise<void> {
    await this.#store.endSession(secretHash(sessionId), auditEntry(caller, "signOut", {}), this.#now());
  }

  /** Airflow 3's token flow: a password exchanged for a short-lived access token (JWT). */
  async accessToken(name: string, password: string, address: string | null): Promise<{ token: string; caller: Caller }> {
    const caller = await this.checkPassword(name, password, address, "createAccessToken");
    const now = this.#now();
    const token = await signAccessToken(await this.#store.signingSecret(), { id: caller.principalId!, name: caller.name }, now);
    await this.#store.audit(auditEntry(caller, "createAccessToken", {}), now);
    return { token, caller };
  }

  /** The teams and what they own, reused for a moment: every authorised request reads them. */
  teams(): Promise<readonly TeamRecord[]> {
    const now = Date.now();
    if (!this.#teams || now - this.#teams.at > TEAMS_TTL_MS) {
      const teams = this.#store.listTeams();
      this.#teams = { at: now, teams };
      teams.catch(() => (this.#teams = undefined));
    }
    return this.#teams.teams;
  }
}

function callerFrom(owner: CredentialOwner, via: CredentialKind, address: string | null): Caller {
  return {
    principalId: owner.principal.id,
    name: owner.principal.name,
    kind: owner.principal.kind,
    grants: owner.principal.grants,
    via,
    tokenId: owner.tokenId,
    address,
  };
}

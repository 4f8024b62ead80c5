import { createHash, randomBytes } from "node:crypto";
import { AuthenticationError, InputError } from "../errors/index.js";

// The password and JWT libraries load on first use: a server without access control never needs them, and they
// would add to every command's start.
const argon2 = () => import("@node-rs/argon2");
const jose = () => import("jose");

/** API tokens start with this, so they are recognisable in a leaked log line or a secret scanner. */
export const API_TOKEN_PREFIX = "trb_";
/** Characters of a token kept in clear, to tell tokens apart in listings. */
const SHOWN_PREFIX_LENGTH = 12;

/** A new API token: the token itself (shown once), what tells it apart, and the hash that is stored. */
export function newApiToken(): { token: string; prefix: string; hash: string } {
  const token = API_TOKEN_PREFIX + randomBytes(32).toString("base64url");
  return { token, prefix: token.slice(0, SHOWN_PREFIX_LENGTH), hash: secretHash(token) };
}

/** A new sign-in session id (the cookie's value) and its stored hash. */
export function newSessionId(): { id: string; hash: string } {
  const id = randomBytes(32).toString("base64url");
  return { id, hash: secretHash(id) };
}

/**
 * The stored form of a high-entropy secret (API token, session id): a sha256 is enough for 256 random bits, and is
 * what lets a token be found by its hash.
 */
export function secretHash(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** Shortest password accepted. */
export const MIN_PASSWORD_LENGTH = 8;

/** An argon2id hash of a password (the library's defaults: 19 MiB, two passes). */
export async function hashPassword(password: string): Promise<string> {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new InputError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters long`, {
      code: "PASSWORD_TOO_SHORT",
      location: { field: "password" },
    });
  }
  return (await argon2()).hash(password);
}

export async function passwordMatches(hash: string, password: string): Promise<boolean> {
  try {
    return await (await argon2()).verify(hash, password);
  } catch {
    return false;
  }
}

/** A hash nobody's password matches, verified when the user is unknown so that its absence takes as long to learn. */
let decoyHash: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= argon2().then((a) => a.hash(randomBytes(16).toString("hex")));
  return decoyHash;
}

/** Lifetime of the access tokens `POST /auth/token` issues. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
const ISSUER = "tributary";

/** A short-lived signed access token (JWT, HS256) for a principal. */
export async function signAccessToken(
  key: { id: string; secret: string },
  principal: { id: string; name: string },
  now: Date,
  ttlSeconds = ACCESS_TOKEN_TTL_SECONDS,
): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000);
  const { SignJWT } = await jose();
  return new SignJWT({ name: principal.name })
    .setProtectedHeader({ alg: "HS256", kid: key.id, typ: "JWT" })
    .setSubject(principal.id)
    .setIssuer(ISSUER)
    .setAudience(ISSUER)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds)
    .sign(Buffer.from(key.secret, "base64url"));
}

/** The principal id an access token was issued to; AuthenticationError when it is forged, expired or malformed. */
export async function verifyAccessToken(key: { secret: string }, token: string, now: Date): Promise<string> {
  const { jwtVerify, errors: joseErrors } = await jose();
  try {
    const { payload } = await jwtVerify(token, Buffer.from(key.secret, "base64url"), {
      issuer: ISSUER,
      audience: ISSUER,
      algorithms: ["HS256"],
      currentDate: now,
    });
    if (typeof payload.sub !== "string") throw new AuthenticationError("the access token names no subject");
    return payload.sub;
  } catch (err) {
    if (err instanceof AuthenticationError) throw err;
    if (err instanceof joseErrors.JWTExpired) {
      throw new AuthenticationError("the access token has expired; ask POST /auth/token for a new one", { code: "TOKEN_EXPIRED" });
    }
    throw new AuthenticationError("the access token is not valid (bad signature or malformed)", { code: "TOKEN_INVALID" });
  }
}

/** Whether a bearer credential has the shape of a JWT (three base64url parts). */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(credential);
}

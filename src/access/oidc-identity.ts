/** Who an OIDC provider vouched for: its issuer, the user's subject there (stable, never reused), and a name. */
export interface OidcIdentity {
  readonly issuer: string;
  readonly subject: string;
  /** What the user is called here when first seen: see oidcUserName. */
  readonly name: string;
}

/** What a user name may hold (as the principals table checks it). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$/;
/** Room left for the suffix a taken name gets. */
const MAX_LENGTH = 90;

/**
 * The user name of an OIDC identity: its `preferred_username`, else its `email`, else its `sub`, with characters a
 * user name cannot hold replaced by "-" (so "Ana Lima" is "Ana-Lima").
 */
export function oidcUserName(claims: { readonly sub: string; readonly preferred_username?: unknown; readonly email?: unknown }): string {
  for (const candidate of [claims.preferred_username, claims.email, claims.sub]) {
    if (typeof candidate !== "string") continue;
    const name = candidate
      .normalize("NFKC")
      .replace(/[^A-Za-z0-9_.@-]+/g, "-")
      .replace(/^[^A-Za-z0-9]+/, "")
      .slice(0, MAX_LENGTH);
    if (NAME.test(name)) return name;
  }
  // A subject of nothing but symbols: still one user per subject.
  return `oidc-${[...claims.sub].reduce((h, ch) => (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0, 7).toString(16)}`;
}

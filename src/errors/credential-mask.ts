/** What a credential is replaced with wherever Tributary writes text: step logs, stored errors, its own log lines. */
export const MASKED_CREDENTIAL = "***";

/**
 * Credentials recognisable by their shape: API tokens (`trb_` and 32 random bytes in base64url) and signed access
 * tokens (a JWT: a base64url JSON header, `eyJ…`, a payload and a signature).
 */
const CREDENTIAL_PATTERN = /trb_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g;

/**
 * `text` with every API token and access token masked: a script that prints its token, an error that quotes one, a
 * URL with one in its query. Known secret values are masked besides, by the step's redactor.
 *
 * @example
 * maskCredentials("curl -H 'Authorization: Bearer trb_" + "A".repeat(43) + "'"); // → "curl -H 'Authorization: Bearer ***'"
 */
export function maskCredentials(text: string): string {
  // The common case, a line without a credential, costs one substring search.
  if (!text.includes("trb_") && !text.includes("eyJ")) return text;
  return text.replace(CREDENTIAL_PATTERN, MASKED_CREDENTIAL);
}

// Access control: who is calling (authenticator), what they hold (roles per team), and the one decision every
// request goes through before it writes or reads a team's data (Guard).
export { ROLES, ROLE_MEANING, isRole, roleCovers } from "./roles.js";
export type { Grant, Role } from "./roles.js";
export { localCaller } from "./caller.js";
export type { Caller, CredentialKind } from "./caller.js";
export { decide, owningTeams } from "./decide.js";
export type { AssetOwnership, Decision } from "./decide.js";
export { RequestAccess, auditEntry, localGuard } from "./request-access.js";
export type { AccessScope, Guard, RequestAccessDeps } from "./request-access.js";
export { Authenticator, SESSION_COOKIE, SESSION_TTL_MS } from "./authenticator.js";
export type { AuthenticatorOptions, Presented } from "./authenticator.js";
export { oidcUserName } from "./oidc-identity.js";
export type { OidcIdentity } from "./oidc-identity.js";
export {
  API_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_SECONDS,
  MIN_PASSWORD_LENGTH,
  hashPassword,
  newApiToken,
  secretHash,
  signAccessToken,
  verifyAccessToken,
} from "./credentials.js";

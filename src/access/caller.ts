import type { Grant } from "./roles.js";

/** How a caller proved who it is. */
export type CredentialKind = "api-token" | "access-token" | "session" | "local";

/** Who is asking, with what they were granted: built once per request by the authenticator. */
export interface Caller {
  /** Null for the local caller of an instance without access control. */
  readonly principalId: string | null;
  readonly name: string;
  readonly kind: "user" | "service" | "local";
  readonly grants: readonly Grant[];
  readonly via: CredentialKind;
  /** The API token used, for the audit trail. */
  readonly tokenId: string | null;
  /** The client's address, for the audit trail. */
  readonly address: string | null;
}

/**
 * The caller of an instance that runs without access control (`tributary dev` on loopback, `--insecure-no-auth`, and
 * commands working on the database in their own process): may do everything.
 */
export function localCaller(address: string | null = null): Caller {
  return { principalId: null, name: "local", kind: "local", grants: [{ role: "admin", team: null }], via: "local", tokenId: null, address };
}

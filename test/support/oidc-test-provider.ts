import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export const OIDC_CLIENT_ID = "tributary-test";
export const OIDC_CLIENT_SECRET = "a-client-secret-for-tests";

export interface TestOidcProvider {
  /** Its issuer URL (http://127.0.0.1:<port>), listening from the start. */
  readonly issuer: string;
  /**
   * Serves OpenID Connect from now on, with one confidential client sending browsers back to `redirectUri`. Until
   * then every connection is dropped, as by a provider that is down.
   */
  serve(redirectUri: string): void;
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider (oidc-provider, with its development login form: any login, any password) for
 * sign-in tests. The login names the account: its `sub`, `preferred_username` and `email` (<login>@example.com).
 * Consent is given at once, so a browser goes from the login form straight back to the client.
 */
export async function startOidcProvider(): Promise<TestOidcProvider> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (req) => req.socket.destroy();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    serve(redirectUri) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: OIDC_CLIENT_ID,
            client_secret: OIDC_CLIENT_SECRET,
            redirect_uris: [redirectUri],
            grant_types: ["authorization_code"],
            response_types: ["code"],
          },
        ],
        findAccount: (_ctx, sub) => ({
          accountId: sub,
          claims: () => ({ sub, preferred_username: sub, email: `${sub}@example.com` }),
        }),
        claims: { openid: ["sub"], profile: ["preferred_username"], email: ["email"] },
        cookies: { keys: ["oidc-test-provider-cookies"] },
        features: { devInteractions: { enabled: true } },
        // Consent without asking: a grant of the scopes the client asks for, made on the first authorization.
        loadExistingGrant: async (ctx) => {
          const { client, session, result, provider: self } = ctx.oidc;
          if (!client || !session?.accountId) return undefined;
          const existing = result?.consent?.grantId ?? session.grantIdFor(client.clientId);
          if (existing) return self.Grant.find(existing);
          const grant = new self.Grant({ clientId: client.clientId, accountId: session.accountId });
          grant.addOIDCScope("openid profile email");
          await grant.save();
          return grant;
        },
      });
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

import { describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";

// TRIBUTARY_OIDC_*: checked at startup, every problem naming its variable.
describe("OIDC settings", () => {
  const base = {
    TRIBUTARY_OIDC_ISSUER: "https://login.example.com/realms/data",
    TRIBUTARY_OIDC_CLIENT_ID: "tributary",
    TRIBUTARY_OIDC_CLIENT_SECRET: "s3cret",
  };
  const oidc = (env: Record<string, string>) => resolveSettings({}, env).oidc;

  it("are absent without an issuer, and default the label and the redirect URL", () => {
    expect(oidc({})).toBeUndefined();
    expect(oidc(base)).toEqual({
      issuer: base.TRIBUTARY_OIDC_ISSUER,
      clientId: "tributary",
      clientSecret: "s3cret",
      redirectUrl: undefined,
      label: "single sign-on",
    });
    expect(
      oidc({ ...base, TRIBUTARY_OIDC_REDIRECT_URL: "https://tributary.example.com/auth/oidc/callback", TRIBUTARY_OIDC_LABEL: "Okta" }),
    ).toMatchObject({ redirectUrl: "https://tributary.example.com/auth/oidc/callback", label: "Okta" });
    // A provider on this machine may speak plain http (a developer's, a test's).
    expect(oidc({ ...base, TRIBUTARY_OIDC_ISSUER: "http://127.0.0.1:4000" })?.issuer).toBe("http://127.0.0.1:4000");
  });

  it("refuse what cannot work, naming the variable", () => {
    const refused: [Record<string, string>, string][] = [
      [{ TRIBUTARY_OIDC_CLIENT_ID: "x" }, "environment variable TRIBUTARY_OIDC_CLIENT_ID is set but TRIBUTARY_OIDC_ISSUER is not"],
      [
        { ...base, TRIBUTARY_OIDC_CLIENT_SECRET: "" },
        "environment variable TRIBUTARY_OIDC_CLIENT_SECRET: is required with TRIBUTARY_OIDC_ISSUER",
      ],
      [{ ...base, TRIBUTARY_OIDC_ISSUER: "login.example.com" }, "environment variable TRIBUTARY_OIDC_ISSUER: must be an https:// URL"],
      [{ ...base, TRIBUTARY_OIDC_ISSUER: "http://login.example.com" }, "(http:// only on localhost)"],
      [
        { ...base, TRIBUTARY_OIDC_REDIRECT_URL: "https://t.example.com/callback" },
        "TRIBUTARY_OIDC_REDIRECT_URL: must end in /auth/oidc/callback",
      ],
      [{ ...base, TRIBUTARY_OIDC_LABEL: "x".repeat(61) }, "TRIBUTARY_OIDC_LABEL: must be at most 60 characters"],
    ];
    for (const [env, message] of refused) expect(() => oidc(env), JSON.stringify(env)).toThrow(message);
  });
});

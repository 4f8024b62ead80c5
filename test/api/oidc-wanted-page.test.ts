import { describe, expect, it } from "vitest";
import { wantedPage } from "../../src/api/auth/oidc-routes.js";

// Where a single sign-on returns: a page of this server, never another site.
describe("the page a sign-in returns to", () => {
  it("keeps a path of this server, with its query", () => {
    expect(wantedPage("/assets/sales/orders?tab=history")).toBe("/assets/sales/orders?tab=history");
    expect(wantedPage("/runs")).toBe("/runs");
  });

  it("is the catalog for anything else", () => {
    for (const next of [
      undefined,
      "",
      "https://evil.example",
      "//evil.example/x",
      "/\\evil.example",
      "/\t/evil.example",
      "javascript:alert(1)",
    ]) {
      expect(wantedPage(next), String(next)).toBe("/");
    }
  });
});

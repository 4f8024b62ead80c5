import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp, type ApiServices } from "../../src/api/index.js";
import { describeBrowser, expectNoProblems, openBrowser, openPage } from "./browser.js";

// GraphiQL at /graphql comes from this server alone: it works on a machine without internet.

const app = () => createApiApp({ context: {} as ApiServices, ping: async () => {}, version: "test" });

/** The URLs of the page's scripts and stylesheets. */
function assetUrls(html: string): string[] {
  return [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)=["']?([^"'\s>]+)/g)]
    .map((m) => m[1]!)
    .filter((u) => !u.startsWith("data:"));
}

it("serves the GraphiQL page with every script and stylesheet from the same origin", async () => {
  const page = await app().request("/graphql", { headers: { accept: "text/html" } });
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toContain("text/html");
  const html = await page.text();
  const urls = assetUrls(html);
  expect(urls.length).toBeGreaterThanOrEqual(2);
  for (const url of urls) {
    expect(url, "a same-origin path").toMatch(/^\/[^/]/);
    const res = await app().request(url);
    expect(res.status, url).toBe(200);
    expect((await res.text()).length, url).toBeGreaterThan(100);
  }
  // The editor's workers too, named by the setup script the page loads before the bundle.
  const setup = urls.find((u) => u.endsWith("/setup.js"));
  expect(setup).toBeDefined();
  const workers = (await (await app().request(setup!)).text()).match(/"\/graphql\/_graphiql\/[^"]+\.worker\.js"/g) ?? [];
  expect(workers).toHaveLength(3);
  for (const url of workers) expect((await app().request(JSON.parse(url) as string)).status).toBe(200);
  // No inline script: the page's Content-Security-Policy allows scripts from this server only.
  expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self';/);
  for (const [, attrs] of html.matchAll(/<script\b([^>]*)>/g)) expect(attrs).toMatch(/\bsrc=|type="application\/json"/);
  expect(html).not.toMatch(/unpkg|jsdelivr|cdn\./);
});

describeBrowser("GraphiQL without internet", () => {
  let server: ServerType;
  let base = "";
  let browser: Browser;
  beforeAll(async () => {
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app().fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await openBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("renders the editor and introspects the schema with no request beyond this server", async () => {
    const { page, problems } = await openPage(browser, base);
    const elsewhere: string[] = [];
    await page.context().route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    const introspection = page.waitForResponse(
      (r) => r.url() === `${base}/graphql` && r.request().method() === "POST" && (r.request().postData() ?? "").includes("__schema"),
      { timeout: 60_000 },
    );
    await page.goto("/graphql");
    await page.locator(".graphiql-container").first().waitFor({ timeout: 60_000 });
    expect((await introspection).status()).toBe(200);
    await page.locator(".graphiql-query-editor .monaco-editor, .graphiql-query-editor .CodeMirror").first().waitFor({ timeout: 60_000 });
    expect(elsewhere).toEqual([]);
    expectNoProblems(problems);
  }, 120_000);
});

// Browser safety and request limits, over a real HTTP server: the Host check, CORS, the Origin check, GraphQL's
// transport rules, the security headers, and the limits on mutations and partitions. Every refusal writes nothing.
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp, isSameOrigin, type ApiOptions } from "../../src/api/index.js";
import { graphql } from "../../src/cli/server-client.js";
import { openRuntime, type Runtime } from "../../src/cli/runtime.js";
import { resolveSettings } from "../../src/cli/settings.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { chainSource, storeDefinitions } from "./graphql-fixture.js";

/** The chain, and an hourly asset with about 100 000 partitions. */
const SOURCE = `${chainSource(3)}import { hourly } from "tributary";
export const big = asset({ key: "big", partitions: hourly({ start: "2015-08-01", timezone: "UTC" }) }, async () => 1);
`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: () => { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: Record<string, unknown> }[] } & {
    error?: { code: string; message: string };
  };
}

/** One request with any headers (Host included), over node:http. */
function send(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | undefined } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const length = options.body === undefined ? {} : { "content-length": String(Buffer.byteLength(options.body)) };
    const headers = { ...length, ...options.headers };
    const req = httpRequest({ host: "127.0.0.1", port, path, method: options.method ?? "GET", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text, json: () => JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

const json = { "content-type": "application/json" };
const launch = (alias: string, partition: string) =>
  `${alias}: launchRun(input: { assetKeys: ["chain/a000"], partition: "${partition}" }) { id }`;
const page = (alias: string, fields = "key") =>
  `${alias}: asset(key: "big") { partitions(first: 10000) { totalCount nodes { ${fields} } } }`;

describePostgres("browser safety and request limits", () => {
  const database = useTestDatabase();
  let runtime: Runtime;
  const servers: ServerType[] = [];
  /** CORS for https://app.example, two public host names, no rate limit. */
  let port: number;
  /** Every default. */
  let plainPort: number;
  /** Three mutations at most in a burst, one a minute after that. */
  let limitedPort: number;
  /** One mutation at once, one every three seconds. */
  let slowPort: number;

  async function start(options: Partial<ApiOptions>): Promise<number> {
    const app = createApiApp({ context: runtime.apiContext(), ping: async () => {}, version: "test", ...options });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    servers.push(server);
    return (server.address() as AddressInfo).port;
  }

  beforeAll(async () => {
    await storeDefinitions(database.db, SOURCE);
    runtime = await openRuntime(resolveSettings({ definitions: "." }, { DATABASE_URL: database.url }));
    port = await start({
      safety: { publicHosts: ["tributary.example", "api.internal:3000"], corsOrigins: ["https://app.example"] },
      limits: { mutationRate: false },
    });
    plainPort = await start({});
    limitedPort = await start({
      limits: { mutationRate: { perMinute: 1, burst: 3 }, callerKey: (req) => req.headers.get("x-caller") ?? "anonymous" },
    });
    slowPort = await start({ limits: { mutationRate: { perMinute: 20, burst: 1 } } });
  }, 90_000);

  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    await runtime?.close();
  });

  async function runCount(): Promise<number> {
    const { rows } = await sql<{ n: string }>`select count(*) as n from runs`.execute(database.db);
    return Number(rows[0]!.n);
  }

  function expectRefused(answer: Answer, status: number, code: string, message: RegExp): void {
    expect(answer.status, answer.text).toBe(status);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
    const body = answer.json();
    const error = body.errors?.[0] ?? body.error;
    expect(error, answer.text).toBeDefined();
    expect("extensions" in error! ? error.extensions?.code : (error as { code: string }).code).toBe(code);
    expect(error!.message).toMatch(message);
  }

  it("refuses a cross-site form posting a mutation (403), and any POST to /graphql that is not JSON (415), running nothing", async () => {
    const before = await runCount();
    const form = `query=${encodeURIComponent(`mutation { ${launch("a", "2025-01-01")} }`)}`;
    // A form on another site: the browser sends its Origin.
    expectRefused(
      await send(port, "/graphql", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" },
        body: form,
      }),
      403,
      "ORIGIN_NOT_ALLOWED",
      /^a POST from origin "https:\/\/evil\.example" is refused: only this server's own pages \(http:\/\/127\.0\.0\.1:\d+\) and the origins listed in TRIBUTARY_CORS_ORIGINS/,
    );
    // The same body without an Origin (or from the server's own pages) is still no JSON.
    const own = `http://127.0.0.1:${port}`;
    for (const [contentType, origin] of [
      ["application/x-www-form-urlencoded", undefined],
      ["application/x-www-form-urlencoded; charset=UTF-8", own],
      ["text/plain", own],
    ] as const) {
      expectRefused(
        await send(port, "/graphql", {
          method: "POST",
          headers: { "content-type": contentType, ...(origin ? { origin } : {}) },
          body: contentType === "text/plain" ? JSON.stringify({ query: `mutation { ${launch("a", "2025-01-01")} }` }) : form,
        }),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        new RegExp(`^a POST to /graphql needs a body with Content-Type: application/json, not "${contentType.replace(/[;]/g, "\\$&")}"`),
      );
    }
    expectRefused(
      await send(port, "/graphql", { method: "POST", body: JSON.stringify({ query: "{ assets { key } }" }) }),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      /the request has no Content-Type$/,
    );
    expect(await runCount()).toBe(before);
  });

  it("refuses a multipart mutation (an upload form) with 415", async () => {
    const before = await runCount();
    const boundary = "----tributary";
    const body = [
      `--${boundary}`,
      `Content-Disposition: form-data; name="operations"`,
      "",
      JSON.stringify({ query: `mutation { ${launch("a", "2025-01-02")} }` }),
      `--${boundary}`,
      `Content-Disposition: form-data; name="map"`,
      "",
      "{}",
      `--${boundary}--`,
      "",
    ].join("\r\n");
    expectRefused(
      await send(port, "/graphql", { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, body }),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      /not "multipart\/form-data; boundary=----tributary" \(forms, multipart uploads and text are not accepted\)$/,
    );
    expect(await runCount()).toBe(before);
  });

  it("runs queries over GET, never mutations", async () => {
    const before = await runCount();
    const query = (q: string) => `/graphql?query=${encodeURIComponent(q)}`;
    const read = await send(port, query("{ assets { key } }"), { headers: { accept: "application/json" } });
    expect(read.status).toBe(200);
    expect(read.json().data?.assets).toHaveLength(4);
    const write = await send(port, query(`mutation { ${launch("a", "2025-01-03")} }`), { headers: { accept: "application/json" } });
    expect(write.status).toBe(405);
    expect(write.json().errors?.[0]?.message).toBe("Can only perform a mutation operation from a POST request.");
    expect(await runCount()).toBe(before);
  });

  it("refuses a Host that is not a public host name with 421 naming it and the setting, on every route", async () => {
    const before = await runCount();
    for (const [path, method, body] of [
      ["/healthz", "GET", undefined],
      ["/", "GET", undefined],
      ["/graphql", "POST", JSON.stringify({ query: `mutation { ${launch("a", "2025-01-04")} }` })],
      ["/api/v1/dags", "GET", undefined],
      ["/execution/v1/steps/1/tries/1/heartbeat", "POST", "{}"],
    ] as const) {
      const answer = await send(port, path, { method, headers: { host: `rebound.example:${port}`, ...json, accept: "text/html" }, body });
      expect(answer.status, `${method} ${path}`).toBe(421);
      expect(answer.text, path).toContain(
        `this server does not answer to the host name \\"rebound.example:${port}\\": add it to TRIBUTARY_PUBLIC_HOSTS`,
      );
    }
    expect(await runCount()).toBe(before);
    // Under /graphql the refusal is a GraphQL error, under /api/v1 Airflow's problem document.
    const graphql = await send(port, "/graphql", { method: "POST", headers: { host: "rebound.example", ...json }, body: "{}" });
    expectRefused(graphql, 421, "HOST_NOT_ALLOWED", /^this server does not answer to the host name "rebound\.example"/);
    expect((await send(port, "/api/v1/dags", { headers: { host: "rebound.example" } })).json()).toMatchObject({
      status: 421,
      title: "Misdirected request",
      code: "HOST_NOT_ALLOWED",
    });

    // Listed names, at any port or at the one given; loopback names always.
    const ok = async (host: string, p = port) => (await send(p, "/healthz", { headers: { host } })).status;
    expect(await ok(`tributary.example:${port}`)).toBe(200);
    expect(await ok("TRIBUTARY.EXAMPLE.")).toBe(200);
    expect(await ok("api.internal:3000")).toBe(200);
    expect(await ok(`api.internal:${port}`)).toBe(421);
    expect(await ok(`localhost:${port}`)).toBe(200);
    expect(await ok(`[::1]:${port}`)).toBe(200);
    // The defaults: loopback names only.
    expect(await ok(`127.0.0.1:${plainPort}`, plainPort)).toBe(200);
    expect(await ok(`tributary.example:${plainPort}`, plainPort)).toBe(421);
  });

  it("answers CORS for a listed origin only: echoed exactly with Vary, credentials, never *", async () => {
    const allowed = await send(port, "/graphql", {
      method: "POST",
      headers: { ...json, origin: "https://app.example" },
      body: JSON.stringify({ query: "{ assets { key } }" }),
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(allowed.headers["access-control-allow-credentials"]).toBe("true");
    expect(allowed.headers.vary).toMatch(/\bOrigin\b/);

    const preflight = await send(port, "/graphql", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(preflight.headers["access-control-allow-methods"]).toContain("POST");
    expect(preflight.headers["access-control-allow-headers"]).toMatch(/Content-Type/);

    // Another origin: no CORS headers (the browser keeps the answer from its page), and its preflight is refused.
    const other = await send(port, "/graphql?query=%7B%20assets%20%7B%20key%20%7D%20%7D", {
      headers: { origin: "https://other.example", accept: "application/json" },
    });
    expect(other.status).toBe(200);
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
    expect(other.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(other.headers.vary).toMatch(/\bOrigin\b/);
    expectRefused(
      await send(port, "/graphql", {
        method: "OPTIONS",
        headers: { origin: "https://other.example", "access-control-request-method": "POST" },
      }),
      403,
      "CORS_ORIGIN_NOT_ALLOWED",
      /^origin "https:\/\/other\.example" may not call this server from a browser: it is not listed in TRIBUTARY_CORS_ORIGINS$/,
    );

    // By default no origin gets CORS headers, and every preflight is refused.
    const plain = await send(plainPort, "/healthz", { headers: { origin: "https://app.example" } });
    expect(plain.status).toBe(200);
    expect(Object.keys(plain.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
    const plainPreflight = await send(plainPort, "/api/v1/dags", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "GET" },
    });
    expect(plainPreflight.status).toBe(403);
    expect(Object.keys(plainPreflight.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
  });

  it("refuses a state-changing request from a foreign Origin with 403; its own pages, listed origins and non-browsers pass", async () => {
    const before = await runCount();
    const mutation = (partition: string) => JSON.stringify({ query: `mutation { ${launch("a", partition)} }` });
    for (const origin of ["https://evil.example", "null", `http://127.0.0.1:${port + 1}`, `https://127.0.0.1:${port}`]) {
      expectRefused(
        await send(port, "/graphql", { method: "POST", headers: { ...json, origin }, body: mutation("2025-02-01") }),
        403,
        "ORIGIN_NOT_ALLOWED",
        /is refused: only this server's own pages/,
      );
    }
    // REST and the execution API too, whatever the method.
    for (const [method, path] of [
      ["POST", "/api/v1/dags/chain~a000/dagRuns"],
      ["PATCH", "/api/v1/dags/chain~a000"],
      ["DELETE", "/api/v1/dags/chain~a000/dagRuns/x"],
      ["POST", "/execution/v1/steps/1/tries/1/heartbeat"],
    ] as const) {
      const answer = await send(port, path, { method, headers: { ...json, origin: "https://evil.example" }, body: "{}" });
      expect(answer.status, `${method} ${path}`).toBe(403);
      expect(answer.text).toContain("ORIGIN_NOT_ALLOWED");
    }
    expect(await runCount()).toBe(before);

    const own = await send(port, "/graphql", {
      method: "POST",
      headers: { ...json, origin: `http://127.0.0.1:${port}` },
      body: mutation("2025-02-02"),
    });
    expect(own.json().errors).toBeUndefined();
    const viaName = await send(port, "/graphql", {
      method: "POST",
      headers: { ...json, host: `tributary.example:${port}`, origin: `http://tributary.example:${port}` },
      body: mutation("2025-02-03"),
    });
    expect(viaName.json().errors).toBeUndefined();
    const listed = await send(port, "/graphql", {
      method: "POST",
      headers: { ...json, origin: "https://app.example" },
      body: mutation("2025-02-04"),
    });
    expect(listed.json().errors).toBeUndefined();
    const curl = await send(port, "/graphql", { method: "POST", headers: json, body: mutation("2025-02-05") });
    expect(curl.json().errors).toBeUndefined();
    expect(await runCount()).toBe(before + 4);
  });

  it("exports the same-origin test: scheme, host and port of the request, X-Forwarded-Proto only when the proxy is trusted", () => {
    const behindProxy = new Request("http://tributary.example/graphql", { headers: { "x-forwarded-proto": "https" } });
    expect(isSameOrigin(behindProxy, "http://tributary.example")).toBe(true);
    expect(isSameOrigin(behindProxy, "https://tributary.example")).toBe(false);
    expect(isSameOrigin(behindProxy, "https://tributary.example", { trustProxy: true })).toBe(true);
    expect(isSameOrigin(behindProxy, "https://tributary.example:8443", { trustProxy: true })).toBe(false);
    const direct = new Request("http://127.0.0.1:3000/graphql");
    expect(isSameOrigin(direct, "http://127.0.0.1:3000")).toBe(true);
    expect(isSameOrigin(direct, "http://localhost:3000")).toBe(false);
    expect(isSameOrigin(direct, "null")).toBe(false);
    expect(isSameOrigin(direct, "file:///etc/passwd")).toBe(false);
  });

  it("sends the security headers with the UI and GraphiQL pages, and nosniff with every API answer", async () => {
    const ui = await send(port, "/assets/chain%2Fa000", { headers: { accept: "text/html" } });
    expect(ui.status).toBe(200);
    expect(ui.headers["content-security-policy"]).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
        "worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(ui.headers["x-frame-options"]).toBe("DENY");
    expect(ui.headers["x-content-type-options"]).toBe("nosniff");
    expect(ui.headers["referrer-policy"]).toBe("same-origin");
    // The built page has no inline script for the policy to block.
    expect([...ui.text.matchAll(/<script\b([^>]*)>/g)].every((m) => /\bsrc=/.test(m[1]!))).toBe(true);

    const graphiql = await send(port, "/graphql", { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(200);
    expect(graphiql.headers["content-security-policy"]).toMatch(
      /^default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline';.*frame-ancestors 'none'$/,
    );
    expect(graphiql.headers["x-frame-options"]).toBe("DENY");
    expect(graphiql.headers["referrer-policy"]).toBe("same-origin");
    // No inline script either: the options are a JSON element, the code comes from files.
    for (const [, attrs] of graphiql.text.matchAll(/<script\b([^>]*)>/g)) expect(attrs).toMatch(/\bsrc=|type="application\/json"/);

    for (const path of ["/healthz", "/api/v1/dags", "/graphql?query=%7B__typename%7D"]) {
      const api = await send(port, path, { headers: { accept: "application/json" } });
      expect(api.headers["x-content-type-options"], path).toBe("nosniff");
      expect(api.headers["content-security-policy"], path).toBeUndefined();
    }
    // Refusals too.
    expect((await send(port, "/healthz", { headers: { host: "rebound.example" } })).headers["x-content-type-options"]).toBe("nosniff");
  });

  it("refuses 1 000 aliased launchRun with TOO_MANY_MUTATIONS before creating any run, fragments counted", async () => {
    const before = await runCount();
    const thousand = Array.from({ length: 1000 }, (_, i) => launch(`r${i}`, "2025-03-01")).join("\n");
    const answer = await send(port, "/graphql", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ query: `mutation { ${thousand} }` }),
    });
    expectRefused(
      answer,
      200,
      "TOO_MANY_MUTATIONS",
      /^The mutation runs 1000 mutation fields \(launchRun × 1000\), more than the limit of 10 per request; send them in several requests$/,
    );
    expect(answer.json().data ?? null).toBeNull();
    // Eleven through fragments and an inline fragment.
    const viaFragments = `mutation Many { ...A ... on Mutation { ${launch("x", "2025-03-02")} } }
      fragment A on Mutation { ${Array.from({ length: 10 }, (_, i) => launch(`f${i}`, "2025-03-02")).join(" ")} ...A2 }
      fragment A2 on Mutation { f0: launchRun(input: { assetKeys: ["chain/a000"], partition: "2025-03-02" }) { id } }`;
    expectRefused(
      await send(port, "/graphql", { method: "POST", headers: json, body: JSON.stringify({ query: viaFragments }) }),
      200,
      "TOO_MANY_MUTATIONS",
      /^Mutation "Many" runs 11 mutation fields \(launchRun × 11\)/,
    );
    expect(await runCount()).toBe(before);
    // Ten run.
    const ten = Array.from({ length: 10 }, (_, i) => launch(`t${i}`, `2025-03-${String(i + 10)}`)).join("\n");
    const admitted = await send(port, "/graphql", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ query: `mutation { ${ten} }` }),
    });
    expect(admitted.json().errors, admitted.text).toBeUndefined();
    expect(await runCount()).toBe(before + 10);
  });

  it("refuses 24 aliased pages of 10 000 partitions with TOO_MANY_PARTITIONS, and answers one", async () => {
    const many = Array.from({ length: 24 }, (_, i) => page(`p${i}`)).join("\n");
    expectRefused(
      await send(port, "/graphql", { method: "POST", headers: json, body: JSON.stringify({ query: `{ ${many} }` }) }),
      200,
      "TOO_MANY_PARTITIONS",
      /^The query lists up to 240000 partitions in 24 fields \(the most: asset\.partitions with 10000\), more than the limit of 20000 per request/,
    );
    // Lists around a listing multiply it; `last` counts like `first`; erasureImpact counts the keys it starts from.
    expectRefused(
      await send(port, "/graphql", {
        method: "POST",
        headers: json,
        body: JSON.stringify({ query: `query ($n: Int) { assets { partitions(last: $n) { nodes { key } } } }`, variables: { n: 5000 } }),
      }),
      200,
      "TOO_MANY_PARTITIONS",
      /lists up to 50000 partitions in 1 field \(the most: assets\.partitions with 50000\)/,
    );
    expectRefused(
      await send(port, "/graphql", {
        method: "POST",
        headers: json,
        body: JSON.stringify({
          query: `query ($keys: [String!]!) { ${page("a")} ${page("b")} erasureImpact(assetKey: "big", partitionKeys: $keys) { assetKey } }`,
          variables: { keys: ["2015-08-01-00:00"] },
        }),
      }),
      200,
      "TOO_MANY_PARTITIONS",
      /lists up to 20001 partitions in 3 fields/,
    );
    const one = await send(port, "/graphql", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ query: `{ ${page("p0", "key status")} }` }),
    });
    expect(one.json().errors, one.text.slice(0, 500)).toBeUndefined();
    const listed = one.json().data!.p0 as { partitions: { totalCount: number; nodes: { key: string; status: string }[] } };
    expect(listed.partitions.totalCount).toBeGreaterThan(99_000);
    expect(listed.partitions.nodes).toHaveLength(10_000);
    expect(listed.partitions.nodes[9_999]).toEqual({ key: "2016-09-20-15:00", status: "MISSING" });
  });

  it("keeps answering /healthz while the largest admitted partition query runs", async () => {
    const fields = "key start end status dataVersion materializedAt staleReasonsTruncated";
    const heavy = send(port, "/graphql", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ query: `{ ${page("a", fields)} ${page("b", fields)} }` }),
    });
    let done = false;
    void heavy.then(() => (done = true));
    // Health checks answered while the query is worked on (how long each took is measured in docs/security.md; the
    // chunking itself is tested in partition-listing-chunks.test.ts).
    let answered = 0;
    while (!done) {
      const health = await send(port, "/healthz");
      expect(health.status).toBe(200);
      if (!done) answered++;
    }
    const answer = await heavy;
    expect(answer.json().errors, answer.text.slice(0, 500)).toBeUndefined();
    expect((answer.json().data!.b as { partitions: { nodes: unknown[] } }).partitions.nodes).toHaveLength(10_000);
    expect(answered).toBeGreaterThanOrEqual(1);
  });

  it("limits mutations per caller with 429 and Retry-After, writing nothing; other callers keep their own budget", async () => {
    const before = await runCount();
    const mutation = (n: number, day: number) =>
      JSON.stringify({
        query: `mutation { ${Array.from({ length: n }, (_, i) => launch(`m${i}`, `2025-04-${String(day + i).padStart(2, "0")}`)).join(" ")} }`,
      });
    const post = (caller: string, body: string) =>
      send(limitedPort, "/graphql", { method: "POST", headers: { ...json, "x-caller": caller }, body });
    expect((await post("alice", mutation(2, 1))).json().errors).toBeUndefined();
    // One token left: two mutations do not fit, and neither runs.
    const limited = await post("alice", mutation(2, 3));
    expectRefused(
      limited,
      429,
      "RATE_LIMITED",
      /^Too many mutations from this caller: the limit is 1 mutations a minute \(bursts of up to 3\); retry in \d+ s$/,
    );
    expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers["retry-after"])).toBe(limited.json().errors![0]!.extensions!.retryAfterSeconds);
    // Queries are not counted; another caller has a full bucket.
    expect((await post("alice", JSON.stringify({ query: "{ assets { key } }" }))).status).toBe(200);
    expect((await post("bob", mutation(3, 5))).json().errors).toBeUndefined();
    expect(await runCount()).toBe(before + 5);
    // More than a burst at once can never run: it says so.
    expectRefused(
      await post("carol", mutation(4, 10)),
      429,
      "RATE_LIMITED",
      /^This request runs 4 mutations, more than a caller may run at once/,
    );
    expect(await runCount()).toBe(before + 5);
  });

  it("lets the CLI's client send a mutation again after the Retry-After of a 429", async () => {
    const before = await runCount();
    const url = `http://127.0.0.1:${slowPort}`;
    const said: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => (said.push(String(chunk)), true)) as typeof process.stderr.write;
    // The caller's one token, taken by a mutation refused at once (no such asset): the client's mutation right after
    // meets the limit, however long a launch would take on a busy machine.
    const refused = await fetch(`${url}/graphql`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ query: `mutation { launchRun(input: { assetKeys: ["no/such-asset"] }) { id } }` }),
    });
    expect(JSON.stringify(await refused.json())).toContain("no/such-asset");
    try {
      await graphql(url, `mutation { ${launch("a", "2025-05-01")} }`);
    } finally {
      process.stderr.write = write;
    }
    expect(said.join("")).toMatch(new RegExp(`^the server at ${url} limits mutations per caller: sending again in [1-3] s\n$`));
    expect(await runCount()).toBe(before + 1);
  });
});

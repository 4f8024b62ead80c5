import { getIntrospectionQuery } from "graphql";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { MAX_GRAPHQL_BODY_BYTES } from "../../src/api/app.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/api/graphql/limit-defaults.js";
import { openRuntime, type Runtime } from "../../src/cli/runtime.js";
import { resolveSettings } from "../../src/cli/settings.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { chainSource, storeDefinitions } from "./graphql-fixture.js";

type GraphQLResult = { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: Record<string, unknown> }[] };

/** `levels` nested `upstream` fields under `asset`: the query is levels + 2 deep (asset, the upstreams, key). */
const nested = (levels: number) => `{ asset(key: "chain/a004") { ${"upstream { ".repeat(levels)} key ${"} ".repeat(levels)} } }`;

describePostgres("GraphQL depth, cost and body limits", () => {
  const database = useTestDatabase();
  let runtime: Runtime;
  let app: ReturnType<typeof createApiApp>;
  let removeDefinitions: () => Promise<void>;

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, chainSource(5));
    runtime = await openRuntime(resolveSettings({ definitions: "." }, { DATABASE_URL: database.url }));
    app = createApiApp({ context: runtime.apiContext(), ping: async () => {}, version: "test" });
  }, 90_000);

  afterAll(async () => {
    await runtime?.close();
    await removeDefinitions?.();
  });

  async function post(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult> {
    const res = await app.request("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as GraphQLResult;
  }

  async function rowCounts(): Promise<Record<string, string>> {
    const { rows } = await sql<Record<string, string>>`
      select (select count(*) from runs) as runs, (select count(*) from steps) as steps, (select count(*) from events) as events,
             (select count(*) from backfills) as backfills, (select count(*) from pools) as pools,
             (select count(*) from dynamic_partitions) as dynamic_partitions`.execute(database.db);
    return rows[0]!;
  }

  function expectError(result: GraphQLResult, code: string, message: RegExp): void {
    expect(result.data ?? null).toBeNull();
    expect(result.errors, JSON.stringify(result)).toHaveLength(1);
    expect(result.errors![0]!.extensions?.code).toBe(code);
    expect(result.errors![0]!.message).toMatch(message);
  }

  it("refuses a query nested 50 levels deep with QUERY_TOO_DEEP naming the path and the limit", async () => {
    const result = await post(nested(48));
    expectError(
      result,
      "QUERY_TOO_DEEP",
      /^The query nests fields more than 15 levels deep \(at asset(\.upstream){15}\); ask for fewer nested levels/,
    );
    expect(result.errors![0]!.extensions?.maxDepth).toBe(DEFAULT_QUERY_LIMITS.maxDepth);
  });

  it("admits exactly the depth limit, and counts the levels fragments add", async () => {
    // Type references nest without lists, so only the depth limit applies: __type, fields, type, 11 × ofType, name.
    const typeRef = (ofTypes: number) =>
      `{ __type(name: "Asset") { fields { type { ${"ofType { ".repeat(ofTypes)} name ${"} ".repeat(ofTypes)} } } } }`;
    const atLimit = await post(typeRef(11));
    expect(atLimit.errors, JSON.stringify(atLimit.errors)).toBeUndefined();
    expectError(await post(typeRef(12)), "QUERY_TOO_DEEP", /more than 15 levels deep \(at __type\.fields\.type(\.ofType){12}\.name\)/);
    const viaFragments = `query Named {
      asset(key: "chain/a004") { ...Up }
    }
    fragment Up on Asset { upstream { upstream { upstream { upstream { ...Up2 } } } } }
    fragment Up2 on Asset { upstream { upstream { upstream { upstream { ... on Asset { upstream { upstream { upstream { upstream { upstream { upstream { key } } } } } } } } } } } }`;
    expectError(await post(viaFragments), "QUERY_TOO_DEEP", /^Operation "Named" nests fields more than 15 levels deep/);
  });

  it("answers GraphiQL's introspection query within both limits", async () => {
    const result = await post(getIntrospectionQuery());
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    expect(result.data?.__schema).toBeTruthy();
  });

  it("refuses ten million rows with QUERY_TOO_COSTLY naming the field, whether first is a literal or a variable", async () => {
    const literal = await post(`{ asset(key: "chain/a004") { partitions(first: 10000000) { nodes { key } } } }`);
    expectError(
      literal,
      "QUERY_TOO_COSTLY",
      /^The query would resolve about 10000003 fields \(asset\.partitions\(first: 10000000\)\.nodes asks for 10000000 items\), more than the limit of 500000; lower `first`/,
    );
    const variable = await post(`query ($n: Int) { runs(first: $n) { id status } }`, { n: 10_000_000 });
    expectError(variable, "QUERY_TOO_COSTLY", /\(runs\(first: 10000000\) asks for 10000000 items\)/);
  });

  it("multiplies nested lists: a modest page under three levels of lists is too costly", async () => {
    const result = await post(`{ assets { downstream { downstream { partitions(first: 1000) { nodes { key status } } } } } }`);
    expectError(result, "QUERY_TOO_COSTLY", /assets\.downstream\.downstream\.partitions\(first: 1000\)\.nodes asks for 1000000 items/);
  });

  it("refuses fragments that expand exponentially, without expanding them", async () => {
    const levels = Array.from({ length: 12 }, (_, i) => `fragment F${i} on Asset { ${`upstream { ...F${i + 1} } `.repeat(8)} }`);
    const bomb = `{ asset(key: "chain/a004") { ...F0 } }\n${levels.join("\n")}\nfragment F12 on Asset { key }`;
    // 8^12 selections if expanded: the request finishes only because the limits stop measuring early.
    expectError(await post(bomb), "QUERY_TOO_COSTLY", /^The query expands to more than 100000 selections, more than the limit of 500000/);
  });

  it("still runs a full 10 000-partition page (the largest `first` allowed) within the cost limit", async () => {
    const result = await post(`{ asset(key: "chain/a004") { partitions(first: 10000) { totalCount nodes { key status } } } }`);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    expect((result.data?.asset as { partitions: { totalCount: number } }).partitions.totalCount).toBeGreaterThan(600);
  });

  it("answers malformed GraphQL and unknown fields with GraphQL's standard errors", async () => {
    expectError(await post(`{ assets { key `), "GRAPHQL_PARSE_FAILED", /^Syntax Error: Expected Name, found <EOF>\.$/);
    expectError(await post(`{ assets { nope } }`), "GRAPHQL_VALIDATION_FAILED", /^Cannot query field "nope" on type "Asset"\.$/);
    expectError(
      await post(`{ asset { key } }`),
      "GRAPHQL_VALIDATION_FAILED",
      /^Field "asset" argument "key" of type "String!" is required/,
    );
    expectError(
      await post(`{ runs(first: "ten") { id } }`),
      "GRAPHQL_VALIDATION_FAILED",
      /^Int cannot represent non-integer value: "ten"$/,
    );
  });

  it("refuses a body over 1 MB with 413 and a JSON error, announced or streamed", async () => {
    const big = JSON.stringify({ query: `{ assets { key } }`, variables: { pad: "x".repeat(MAX_GRAPHQL_BODY_BYTES) } });
    const expected = {
      errors: [
        {
          message: `The request body is larger than ${MAX_GRAPHQL_BODY_BYTES} bytes; send a smaller query or fewer variables`,
          extensions: { code: "BODY_TOO_LARGE", maxBytes: MAX_GRAPHQL_BODY_BYTES },
        },
      ],
    };
    const announced = await app.request("/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: big });
    expect(announced.status).toBe(413);
    expect(announced.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await announced.json()).toEqual(expected);

    // Chunked, without a content-length: counted while it streams in.
    const bytes = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.subarray(i, i + 64 * 1024));
        controller.close();
      },
    });
    const streamed = await app.request("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await streamed.json()).toEqual(expected);

    // Just under the limit still works.
    const fits = await app.request("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: `{ assets { key } }`, variables: { pad: "x".repeat(MAX_GRAPHQL_BODY_BYTES - 100) } }),
    });
    expect(fits.status).toBe(200);
  });

  it("writes nothing for any refused request, mutations included", async () => {
    const before = await rowCounts();
    const launch = `mutation ($n: Int) {
      launchRun(input: { assetKeys: ["chain/a000"], partition: "2025-01-01" }) { id }
      launchBackfill(input: { assetKeys: ["chain/a000"], allPartitions: true }) { id runs(first: $n) { id } }
    }`;
    expectError(await post(launch, { n: 10_000_000 }), "QUERY_TOO_COSTLY", /launchBackfill\.runs\(first: 10000000\)/);
    const bigMutation = JSON.stringify({
      query: `mutation { addDynamicPartitions(name: "x", keys: ["a"]) { name } }`,
      variables: { pad: "x".repeat(MAX_GRAPHQL_BODY_BYTES) },
    });
    expect(
      (await app.request("/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: bigMutation })).status,
    ).toBe(413);
    expect(await rowCounts()).toEqual(before);
  });
});

// Pools, setPoolSlots, and bad input that reaches resolvers: against a real API server in a child process, as a
// client sees it (its GraphQL errors carry their stable codes).
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { graphqlAt } from "../cli/run-cli.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { chainSource, storeDefinitions } from "./graphql-fixture.js";
import { startApiServer, type ApiServer } from "./triggers-seed.js";

type GraphQLResult<T> = { data?: T | null; errors?: { message: string; extensions?: { code?: string } }[] };
type Pool = { name: string; slots: number; occupied: number; queued: number; includeDeferred: boolean };

const POOL_FIELDS = "name slots occupied queued includeDeferred";
const INJECTION = `x'); drop table runs; --`;

describePostgres("GraphQL pools and bad input", () => {
  const database = useTestDatabase();
  let server: ApiServer;
  let removeDefinitions: () => Promise<void>;

  const gql = <T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> =>
    graphqlAt<T>(server.port, query, variables);

  async function expectError(query: string, variables: Record<string, unknown>, code: string, message: RegExp): Promise<void> {
    const result = await gql(query, variables);
    expect(result.errors?.[0]?.extensions?.code, JSON.stringify(result)).toBe(code);
    expect(result.errors?.[0]?.message).toMatch(message);
  }

  /** Every table a bad request could write to, whole: compared before and after. */
  async function snapshot(): Promise<unknown> {
    const { rows } = await sql<{ t: unknown }>`
      select json_build_object(
        'pools', (select json_agg(p order by name) from pools p),
        'runs', (select count(*) from runs), 'steps', (select count(*) from steps), 'events', (select count(*) from events),
        'backfills', (select count(*) from backfills), 'dynamic', (select count(*) from dynamic_partitions),
        'paused', (select count(*) from assets where paused)) as t`.execute(database.db);
    return rows[0]!.t;
  }

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, chainSource(5));
    // A run whose steps use the warehouse pool: 3 scheduled, 1 running (holding 2 slots), 2 deferred (1 + 2 slots).
    const { rows } = await sql<{ id: string }>`
      insert into runs (status, origin, snapshot_version, plan, steps_total, started_at)
      values ('running', 'manual', 1, '{}'::jsonb, 6, now()) returning id`.execute(database.db);
    await sql`
      insert into steps (run_id, asset_key, partition_key, state, pool, pool_slots)
      select ${rows[0]!.id}::uuid, 'chain/a000', 'p' || g, (array['scheduled','scheduled','scheduled','running','deferred','deferred'])[g],
             'warehouse', (array[1,1,1,2,1,2])[g]
      from generate_series(1, 6) g`.execute(database.db);
    await sql`insert into pools (name, slots, occupied_slots) values ('warehouse', 4, 2)`.execute(database.db);
    server = await startApiServer(database.url);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    await removeDefinitions?.();
  });

  it("lists pools with their slots, occupied slots and scheduled steps", async () => {
    const r = await gql<{ pools: Pool[] }>(`{ pools { ${POOL_FIELDS} description } }`);
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    expect(r.data!.pools).toEqual([
      { name: "default_pool", slots: 128, occupied: 0, queued: 0, includeDeferred: false, description: "Default pool" },
      { name: "warehouse", slots: 4, occupied: 2, queued: 3, includeDeferred: false, description: "" },
    ]);
  });

  it("sets a pool's slots, creates a new pool, and keeps occupied slots true when deferred steps start or stop counting", async () => {
    const set = `mutation ($name: String!, $slots: Int!, $includeDeferred: Boolean) {
      setPoolSlots(name: $name, slots: $slots, includeDeferred: $includeDeferred) { ${POOL_FIELDS} }
    }`;
    const grown = await gql<{ setPoolSlots: Pool }>(set, { name: "warehouse", slots: 8 });
    expect(grown.data?.setPoolSlots, JSON.stringify(grown)).toEqual({
      name: "warehouse",
      slots: 8,
      occupied: 2,
      queued: 3,
      includeDeferred: false,
    });
    // The deferred steps' 3 slots count from now on, and stop counting again.
    expect(
      (await gql<{ setPoolSlots: Pool }>(set, { name: "warehouse", slots: 8, includeDeferred: true })).data?.setPoolSlots,
    ).toMatchObject({ occupied: 5, includeDeferred: true });
    expect((await gql<{ setPoolSlots: Pool }>(set, { name: "warehouse", slots: 0 })).data?.setPoolSlots).toMatchObject({
      slots: 0,
      occupied: 5,
      includeDeferred: true,
    });
    expect(
      (await gql<{ setPoolSlots: Pool }>(set, { name: "warehouse", slots: 4, includeDeferred: false })).data?.setPoolSlots,
    ).toMatchObject({ occupied: 2, includeDeferred: false });
    const created = await gql<{ setPoolSlots: Pool }>(set, { name: "gpu.a100", slots: 2, includeDeferred: true });
    expect(created.data?.setPoolSlots).toEqual({ name: "gpu.a100", slots: 2, occupied: 0, queued: 0, includeDeferred: true });
    const listed = await gql<{ pools: Pool[] }>(`{ pools { ${POOL_FIELDS} } }`);
    expect(listed.data!.pools.map((p) => [p.name, p.slots])).toEqual([
      ["default_pool", 128],
      ["gpu.a100", 2],
      ["warehouse", 4],
    ]);
  });

  it.each([
    [{ name: "warehouse", slots: -1 }, /^setPoolSlots: slots: must be 0 \(hold the pool's steps back\) or more$/],
    [{ name: "warehouse", slots: 1_000_001 }, /^setPoolSlots: slots: at most 1000000$/],
    [{ name: "", slots: 1 }, /^setPoolSlots: name: must not be empty$/],
    [{ name: INJECTION, slots: 1 }, /^setPoolSlots: name: letters, digits, '_', '\.' and '-' only, as in an asset's `pool`$/],
    [{ name: "p".repeat(201), slots: 1 }, /^setPoolSlots: name: at most 200 characters$/],
  ])("refuses setPoolSlots(%j) with INPUT_INVALID naming the argument, writing nothing", async (variables, message) => {
    const before = await snapshot();
    await expectError(
      `mutation ($name: String!, $slots: Int!) { setPoolSlots(name: $name, slots: $slots) { name } }`,
      variables,
      "INPUT_INVALID",
      message,
    );
    expect(await snapshot()).toEqual(before);
  });

  it("answers unknown asset keys and run ids: null from queries, named errors from mutations", async () => {
    const before = await snapshot();
    const q = await gql<{ asset: unknown; run: unknown; notUuid: unknown; backfill: unknown }>(
      `query ($key: String!, $id: String!, $bad: String!) { asset(key: $key) { key } run(id: $id) { id } notUuid: run(id: $bad) { id } backfill(id: $bad) { id } }`,
      { key: "chain/nope", id: "00000000-0000-4000-8000-000000000000", bad: "1' or '1'='1" },
    );
    expect(q).toEqual({ data: { asset: null, run: null, notUuid: null, backfill: null } });
    await expectError(
      `mutation ($keys: [String!]!) { launchRun(input: { assetKeys: $keys, partition: "2025-01-01" }) { id } }`,
      { keys: ["chain/nope"] },
      "GRAPH_UNKNOWN_ASSET",
      /^no asset has the key "chain\/nope"/,
    );
    await expectError(
      `mutation ($id: String!) { cancelRun(id: $id) { id } }`,
      { id: "00000000-0000-4000-8000-000000000000" },
      "RUN_NOT_FOUND",
      /00000000-0000-4000-8000-000000000000/,
    );
    await expectError(
      `mutation { launchRun(input: { assetKeys: ["chain/a000"], partition: "2024-12-31" }) { id } }`,
      {},
      "PARTITION_KEY_INVALID",
      /^asset "chain\/a000": "2024-12-31" is not a partition of daily\(start 2025-01-01, UTC\): it is before the first partition "2025-01-01"/,
    );
    expect(await snapshot()).toEqual(before);
  });

  it("refuses a huge first that passes the cost limit with the field's own INPUT_INVALID range", async () => {
    await expectError(
      `{ asset(key: "chain/a000") { partitions(first: 20000) { totalCount } } }`,
      {},
      "INPUT_INVALID",
      /^partitions\(first: 20000\): first must be between 0 and 10000$/,
    );
    await expectError(`{ runs(first: 5000) { id } }`, {}, "INPUT_INVALID", /^runs\(first: 5000\): first must be between 1 and 1000$/);
  });

  it("treats SQL-injection-shaped text arguments as text: refused or found nowhere, and stored and echoed verbatim", async () => {
    const before = await snapshot();
    const found = await gql<{ asset: unknown; assets: unknown[]; run: unknown; triggers: { nodes: unknown[] } }>(
      `query ($s: String!) { asset(key: $s) { key } assets(search: $s, group: $s) { key } run(id: $s) { id } triggers(assetKey: $s) { nodes { id } } }`,
      { s: INJECTION },
    );
    expect(found).toEqual({ data: { asset: null, assets: [], run: null, triggers: { nodes: [] } } });
    await expectError(
      `mutation ($keys: [String!]!) { launchRun(input: { assetKeys: $keys, partition: "2025-01-01" }) { id } }`,
      { keys: [INJECTION] },
      "GRAPH_UNKNOWN_ASSET",
      new RegExp(`^no asset has the key "${INJECTION.replace(/[()]/g, "\\$&")}"`),
    );
    await expectError(
      `mutation ($p: String!) { launchRun(input: { assetKeys: ["chain/a000"], partition: $p }) { id } }`,
      { p: INJECTION },
      "PARTITION_KEY_INVALID",
      /^asset "chain\/a000": "x'\); drop table runs; --" is not a partition of daily/,
    );
    expect(await snapshot()).toEqual(before);

    // A text that is stored: the run's tags come back exactly as sent, and every table is still there.
    const tags = { note: INJECTION, [`k'; delete from steps; --`]: `"; select pg_sleep(10); --` };
    const launched = await gql<{ launchRun: { id: string; tags: unknown } }>(
      `mutation ($tags: JSON) { launchRun(input: { assetKeys: ["chain/a000"], partition: "2025-01-01", tags: $tags }) { id tags } }`,
      { tags },
    );
    expect(launched.errors, JSON.stringify(launched.errors)).toBeUndefined();
    expect(launched.data!.launchRun.tags).toEqual(tags);
    const again = await gql<{ run: { tags: unknown } }>(`query ($id: String!) { run(id: $id) { tags } }`, {
      id: launched.data!.launchRun.id,
    });
    expect(again.data!.run.tags).toEqual(tags);
    expect(await snapshot()).toMatchObject({ runs: Number((before as { runs: number }).runs) + 1 });
  });
});

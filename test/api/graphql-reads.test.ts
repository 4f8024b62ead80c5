// GraphQL read entry points: runs(filter, first, after) / runsConnection, run(id) with steps and tries,
// Asset.materializations and Asset.latestMaterialization. Answers and bad input go through a real API server
// in a child process (errors keep their codes there); statement counts through the app in-process.
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { graphqlAt } from "../cli/run-cli.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { chainSource, countingStatements, storeDefinitions } from "./graphql-fixture.js";
import { startApiServer, type ApiServer } from "./triggers-seed.js";

type GraphQLResult<T> = { data?: T | null; errors?: { message: string; extensions?: { code?: string } }[] };
type RunNode = { id: string; status: string; origin: string };
type Connection<T> = { nodes: T[]; endCursor: string | null; hasNextPage: boolean };
type Materialization = {
  eventId: string;
  kind: string;
  partitionKey: string | null;
  runId: string | null;
  stepId: string | null;
  dataVersion: string | null;
  codeVersion: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
};

const SOURCE = chainSource(100) + `export const plain = asset({ key: "plain" }, async () => 1);\n`;
const M_FIELDS = "eventId kind partitionKey runId stepId dataVersion codeVersion metadata createdAt";
const INJECTION = `x'); drop table runs; --`;

describePostgres("GraphQL reads: runs, run steps and materialisation history", () => {
  const database = useTestDatabase();
  let server: ApiServer;
  let removeDefinitions: () => Promise<void>;
  /** Seeded run ids, newest first (created_at desc, id desc). */
  let runIds: string[];
  let backfillId: string;
  let firstRun: string;

  const gql = <T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> =>
    graphqlAt<T>(server.port, query, variables);

  async function data<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const result = await gql<T>(query, variables);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data!;
  }

  async function expectError(query: string, variables: Record<string, unknown>, code: string, message: RegExp): Promise<void> {
    const result = await gql(query, variables);
    expect(result.errors?.[0]?.extensions?.code, JSON.stringify(result)).toBe(code);
    expect(result.errors?.[0]?.message).toMatch(message);
  }

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, SOURCE);
    const db = database.db;
    backfillId = (await sql<{ id: string }>`insert into backfills (selection, partitions) values ('{}', '{}') returning id`.execute(db))
      .rows[0]!.id;
    // 9 runs: three share one created_at (ties break on id), the others differ by a microsecond or a day.
    await sql`
      insert into runs (status, origin, backfill_id, snapshot_version, plan, created_at)
      select (array['success','failed','running'])[g % 3 + 1], (array['manual','backfill','automation'])[g % 3 + 1],
             case when g % 3 = 1 then ${backfillId}::uuid end, 1, '{}'::jsonb,
             case when g <= 3 then timestamptz '2026-01-10 00:00:00.000001+00'
                  else timestamptz '2026-01-01 00:00:00+00' + (g * interval '1 day') + (g * interval '1 microsecond') end
      from generate_series(1, 9) g`.execute(db);
    runIds = (await sql<{ id: string }>`select id from runs order by created_at desc, id desc`.execute(db)).rows.map((r) => r.id);
    firstRun = runIds[runIds.length - 1]!;
    // The oldest run has a step of chain/a007 with two tries; events of several kinds for chain/a000, chain/a001 and plain.
    const step = await sql<{ id: number }>`
      insert into steps (run_id, asset_key, partition_key, state, try_number, max_tries, pool, worker_id, started_at, ended_at, error)
      values (${firstRun}::uuid, 'chain/a007', '2025-01-02', 'success', 2, 3, 'warehouse', 'w-2',
              '2026-01-02 00:01:00+00', '2026-01-02 00:02:00+00', null) returning id`.execute(db);
    const stepId = step.rows[0]!.id;
    await sql`
      insert into step_tries (step_id, run_id, try_number, state, worker_id, hostname, pid, queued_at, started_at, ended_at, duration_ms, error, log_ref)
      values (${stepId}, ${firstRun}::uuid, 1, 'failed', 'w-1', 'host-a', 101, '2026-01-02 00:00:00+00', '2026-01-02 00:00:01+00',
              '2026-01-02 00:00:02+00', 1000, '{"message":"boom"}'::jsonb, 'logs/1.log'),
             (${stepId}, ${firstRun}::uuid, 2, 'success', 'w-2', 'host-b', 202, '2026-01-02 00:00:59+00', '2026-01-02 00:01:00+00',
              '2026-01-02 00:02:00+00', 60000, null, 'logs/2.log')`.execute(db);
    await sql`
      insert into events (kind, asset_key, partition_key, run_id, step_id, data_version, code_version, metadata, created_at)
      values ('materialization', 'chain/a000', '2025-01-01', ${firstRun}::uuid, ${stepId}, 'dv1', 'cv1', '{"rows":1}', '2026-01-02 00:00:00+00'),
             ('external', 'chain/a000', '2025-01-02', null, null, 'dv2', null, '{"by":"etl"}', '2026-01-03 00:00:00+00'),
             ('check_result', 'chain/a000', '2025-01-01', null, null, null, null, '{}', '2026-01-03 00:00:01+00'),
             ('planned', 'chain/a000', '2025-01-03', null, null, null, null, '{}', '2026-01-03 00:00:02+00'),
             ('observation', 'chain/a000', '2025-01-01', null, null, 'dv3', null, '{}', '2026-01-04 00:00:00+00'),
             ('materialization', 'chain/a001', '2025-01-01', ${firstRun}::uuid, ${stepId}, 'dv4', null, '{}', '2026-01-05 00:00:00+00'),
             ('materialization', 'plain', '', ${firstRun}::uuid, ${stepId}, 'dv5', null, ${JSON.stringify({ note: INJECTION })}, '2026-01-06 00:00:00+00')`.execute(
      db,
    );
    server = await startApiServer(database.url);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await removeDefinitions?.();
  });

  /** Every page of runsConnection with `filter`, `first` at a time, and the ids in order. */
  async function allPages(filter: Record<string, unknown>, first: number): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const { runsConnection }: { runsConnection: Connection<RunNode> } = await data(
        `query ($filter: RunFilter, $first: Int, $after: String) { runsConnection(filter: $filter, first: $first, after: $after) { nodes { id status origin } endCursor hasNextPage } }`,
        { filter, first, after },
      );
      pages++;
      ids.push(...runsConnection.nodes.map((r) => r.id));
      if (!runsConnection.hasNextPage) return { ids, pages };
      after = runsConnection.endCursor;
    }
  }

  it("pages through runs newest first on (created_at, id), ties and microseconds included", async () => {
    const { ids, pages } = await allPages({}, 2);
    expect(ids).toEqual(runIds);
    expect(pages).toBe(5);
    const { runs } = await data<{ runs: RunNode[] }>(`{ runs(first: 4) { id } }`);
    expect(runs.map((r) => r.id)).toEqual(runIds.slice(0, 4));
    // The list form takes a runsConnection cursor too.
    const first3 = await data<{ runsConnection: { endCursor: string } }>(`{ runsConnection(first: 3) { endCursor } }`);
    const next = await data<{ runs: RunNode[] }>(`query ($after: String) { runs(first: 4, after: $after) { id } }`, {
      after: first3.runsConnection.endCursor,
    });
    expect(next.runs.map((r) => r.id)).toEqual(runIds.slice(3, 7));
  });

  it("filters runs by status, origin, backfill, asset and creation time", async () => {
    const expected = async (where: string) =>
      (
        await sql<{ id: string }>`select id from runs r where ${sql.raw(where)} order by created_at desc, id desc`.execute(database.db)
      ).rows.map((r) => r.id);
    expect((await allPages({ status: "failed" }, 2)).ids).toEqual(await expected("status = 'failed'"));
    expect((await allPages({ origin: "backfill" }, 10)).ids).toEqual(await expected("origin = 'backfill'"));
    expect((await allPages({ backfillId }, 10)).ids).toEqual(await expected(`backfill_id = '${backfillId}'`));
    expect((await allPages({ assetKey: "chain/a007" }, 10)).ids).toEqual([firstRun]);
    expect((await allPages({ assetKey: "chain/a008" }, 10)).ids).toEqual([]);
    const window = { createdAfter: "2026-01-05T00:00:00.000Z", createdBefore: "2026-01-10T00:00:00.000Z" };
    expect((await allPages(window, 1)).ids).toEqual(await expected(`created_at >= '2026-01-05' and created_at < '2026-01-10'`));
    expect((await allPages({ ...window, status: "running", origin: "automation" }, 10)).ids).toEqual(
      await expected(`created_at >= '2026-01-05' and created_at < '2026-01-10' and status = 'running' and origin = 'automation'`),
    );
    // The older form keeps working.
    const { runs } = await data<{ runs: RunNode[] }>(`{ runs(first: 50, status: success) { id status } }`);
    expect(runs.map((r) => r.id)).toEqual(await expected("status = 'success'"));
  });

  it("shows a run's steps with state, try, times, pool, worker and error, and every try", async () => {
    const { run } = await data<{ run: { steps: Record<string, unknown>[] } }>(
      `query ($id: String!) { run(id: $id) { steps { assetKey partitionKey state tryNumber maxTries pool workerId startedAt endedAt error
         tries { tryNumber state workerId hostname pid queuedAt startedAt endedAt durationMs error logRef } } } }`,
      { id: firstRun },
    );
    expect(run.steps).toEqual([
      {
        assetKey: "chain/a007",
        partitionKey: "2025-01-02",
        state: "success",
        tryNumber: 2,
        maxTries: 3,
        pool: "warehouse",
        workerId: "w-2",
        startedAt: "2026-01-02T00:01:00.000Z",
        endedAt: "2026-01-02T00:02:00.000Z",
        error: null,
        tries: [
          {
            tryNumber: 1,
            state: "failed",
            workerId: "w-1",
            hostname: "host-a",
            pid: 101,
            queuedAt: "2026-01-02T00:00:00.000Z",
            startedAt: "2026-01-02T00:00:01.000Z",
            endedAt: "2026-01-02T00:00:02.000Z",
            durationMs: 1000,
            error: { message: "boom" },
            logRef: "logs/1.log",
          },
          expect.objectContaining({ tryNumber: 2, state: "success", hostname: "host-b", pid: 202, error: null, logRef: "logs/2.log" }),
        ],
      },
    ]);
  });

  it("lists an asset's materialisations, reports and observations newest first, by partition, a page at a time", async () => {
    type A = { asset: { materializations: Connection<Materialization>; latestMaterialization: Materialization | null } };
    const q = `query ($key: String!, $partition: String, $first: Int, $after: String) { asset(key: $key) {
      materializations(partition: $partition, first: $first, after: $after) { nodes { ${M_FIELDS} } endCursor hasNextPage }
      latestMaterialization(partition: $partition) { ${M_FIELDS} } } }`;
    const all = (await data<A>(q, { key: "chain/a000", first: 20 })).asset;
    expect(all.materializations.nodes.map((m) => [m.kind, m.partitionKey, m.dataVersion])).toEqual([
      ["OBSERVATION", "2025-01-01", "dv3"],
      ["EXTERNAL", "2025-01-02", "dv2"],
      ["MATERIALIZATION", "2025-01-01", "dv1"],
    ]);
    expect(all.materializations.hasNextPage).toBe(false);
    expect(all.materializations.nodes[2]).toMatchObject({
      runId: firstRun,
      codeVersion: "cv1",
      metadata: { rows: 1 },
      createdAt: "2026-01-02T00:00:00.000Z",
    });
    expect(all.materializations.nodes[2]!.stepId).toMatch(/^\d+$/);
    expect(all.latestMaterialization).toEqual(all.materializations.nodes[0]);

    const page1 = (await data<A>(q, { key: "chain/a000", partition: "2025-01-01", first: 1 })).asset;
    expect(page1.materializations.nodes.map((m) => m.dataVersion)).toEqual(["dv3"]);
    expect(page1.materializations.hasNextPage).toBe(true);
    const page2 = (await data<A>(q, { key: "chain/a000", partition: "2025-01-01", first: 1, after: page1.materializations.endCursor }))
      .asset;
    expect(page2.materializations.nodes.map((m) => m.dataVersion)).toEqual(["dv1"]);
    expect(page2.materializations.hasNextPage).toBe(false);
    expect(page2.latestMaterialization?.dataVersion).toBe("dv3");

    const none = (await data<A>(q, { key: "chain/a000", partition: "2025-01-03" })).asset;
    expect(none).toEqual({ materializations: { nodes: [], endCursor: null, hasNextPage: false }, latestMaterialization: null });
    const plain = (await data<A>(q, { key: "plain" })).asset;
    expect(plain.latestMaterialization).toMatchObject({ partitionKey: null, dataVersion: "dv5", metadata: { note: INJECTION } });
  });

  it("rejects bad arguments with a code and a message naming the field", async () => {
    const runsQ = `query ($filter: RunFilter, $first: Int, $after: String) { runsConnection(filter: $filter, first: $first, after: $after) { nodes { id } } }`;
    await expectError(runsQ, { first: 1001 }, "INPUT_INVALID", /^runsConnection\(first: 1001\): first must be between 1 and 1000$/);
    await expectError(runsQ, { first: 0 }, "INPUT_INVALID", /^runsConnection\(first: 0\): first must be between 1 and 1000$/);
    await expectError(`{ runs(first: 5000) { id } }`, {}, "INPUT_INVALID", /^runs\(first: 5000\): first must be between 1 and 1000$/);
    await expectError(
      runsQ,
      { after: INJECTION },
      "INPUT_INVALID",
      /^after: "x'\); drop table runs; --" is not a run cursor; pass the endCursor/,
    );
    // A materialisation cursor is no run cursor.
    const m = await data<{ asset: { materializations: { endCursor: string } } }>(
      `{ asset(key: "chain/a000") { materializations(first: 1) { endCursor } } }`,
    );
    await expectError(runsQ, { after: m.asset.materializations.endCursor }, "INPUT_INVALID", /is not a run cursor/);
    await expectError(runsQ, { filter: { assetKey: "chain/a999" } }, "GRAPH_UNKNOWN_ASSET", /no asset has the key "chain\/a999"/);
    await expectError(
      runsQ,
      { filter: { assetKey: INJECTION } },
      "GRAPH_UNKNOWN_ASSET",
      /no asset has the key "x'\); drop table runs; --"/,
    );
    await expectError(
      runsQ,
      { filter: { backfillId: "nope" } },
      "INPUT_INVALID",
      /^runsConnection: filter\.backfillId: must be a backfill id \(a UUID\)$/,
    );
    await expectError(
      runsQ,
      { filter: { createdAfter: "2026-02-01T00:00:00Z", createdBefore: "2026-01-01T00:00:00Z" } },
      "INPUT_INVALID",
      /^runsConnection: filter\.createdAfter: createdAfter must be before createdBefore$/,
    );
    // Variable coercion fails before any resolver: graphql-js gives it no code.
    expect((await gql(runsQ, { filter: { status: "DONE" } })).errors?.[0]?.message).toMatch(
      /at "filter\.status"; Value "DONE" does not exist in "RunStatus" enum/,
    );

    const matQ = `query ($key: String!, $partition: String, $first: Int, $after: String) { asset(key: $key) {
      materializations(partition: $partition, first: $first, after: $after) { nodes { eventId } } } }`;
    await expectError(
      matQ,
      { key: "chain/a000", first: 1001 },
      "INPUT_INVALID",
      /^asset\("chain\/a000"\)\.materializations\(first: 1001\): first must be between 1 and 1000$/,
    );
    await expectError(matQ, { key: "chain/a000", after: "bm9wZQ" }, "INPUT_INVALID", /^after: "bm9wZQ" is not a materialization cursor/);
    await expectError(matQ, { key: "chain/a000", partition: "2025-13-45" }, "PARTITION_KEY_INVALID", /^asset "chain\/a000": .*2025-13-45/);
    await expectError(
      matQ,
      { key: "chain/a000", partition: INJECTION },
      "PARTITION_KEY_INVALID",
      /^asset "chain\/a000": .*drop table runs/,
    );
    await expectError(
      matQ,
      { key: "plain", partition: "2025-01-01" },
      "PARTITION_UNEXPECTED",
      /^asset "plain" is not partitioned: leave out the partition \(got "2025-01-01"\)$/,
    );
    await expectError(
      `{ asset(key: "plain") { latestMaterialization(partition: "p") { eventId } } }`,
      {},
      "PARTITION_UNEXPECTED",
      /^asset "plain" is not partitioned/,
    );
    expect(await data(`{ asset(key: "chain/a999") { materializations { nodes { eventId } } } }`)).toEqual({ asset: null });
    expect((await sql<{ n: number }>`select count(*)::int as n from runs`.execute(database.db)).rows[0]!.n).toBe(9);
  });

  it("reads materialisations of 100 assets in as many statements as of 1", async () => {
    const counted = countingStatements(database.db);
    const context = apiServicesOn(counted.db);
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    const count = async (
      search: string,
    ): Promise<{
      assets: { key: string; latestMaterialization: { dataVersion: string } | null; materializations: { nodes: unknown[] } }[];
      statements: number;
    }> => {
      counted.reset();
      const query = `{ assets(search: "${search}") { key latestMaterialization { dataVersion } materializations(first: 5) { nodes { eventId } } } }`;
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query }),
      });
      const body = (await res.json()) as GraphQLResult<{ assets: never }>;
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
      return { assets: body.data!.assets, statements: counted.statements };
    };
    await count("nothing"); // loads the snapshot into the graph cache
    const all = await count("chain/");
    expect(all.assets).toHaveLength(100);
    expect(all.assets.find((a) => a.key === "chain/a001")).toMatchObject({
      latestMaterialization: { dataVersion: "dv4" },
      materializations: { nodes: [{}] },
    });
    expect(all.assets.find((a) => a.key === "chain/a002")).toMatchObject({ latestMaterialization: null, materializations: { nodes: [] } });
    const one = await count("chain/a001");
    // The snapshot version check, then one statement for the latest materialisation of every asset (read with the
    // list) and one for every asset's first five.
    expect(all.statements).toBe(one.statements);
    expect(all.statements).toBe(3);
  });

  it("summarises the assets of every listed run in one statement, without reading step lists", async () => {
    // A second step in the oldest run (another partition of the same asset) and one of another asset.
    await sql`
      insert into steps (run_id, asset_key, partition_key, state, try_number, max_tries, pool)
      values (${firstRun}::uuid, 'chain/a007', '2025-01-09', 'pending', 0, 1, 'default_pool'),
             (${firstRun}::uuid, 'plain', '', 'pending', 0, 1, 'default_pool')`.execute(database.db);
    const counted = countingStatements(database.db);
    const context = apiServicesOn(counted.db);
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    counted.reset();
    const query = `{ runsConnection(first: 20) { nodes { id assets { assetKey steps minPartition maxPartition } } } }`;
    const res = await app.request("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query }),
    });
    const body = (await res.json()) as GraphQLResult<{ runsConnection: { nodes: { id: string; assets: unknown[] }[] } }>;
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    const nodes = body.data!.runsConnection.nodes;
    expect(nodes).toHaveLength(9);
    expect(nodes.find((n) => n.id === firstRun)!.assets).toEqual([
      { assetKey: "chain/a007", steps: 2, minPartition: "2025-01-02", maxPartition: "2025-01-09" },
      { assetKey: "plain", steps: 1, minPartition: "", maxPartition: "" },
    ]);
    expect(nodes.filter((n) => n.id !== firstRun).every((n) => n.assets.length === 0)).toBe(true);
    // The page of runs, then the assets of all nine.
    expect(counted.statements).toBe(2);
  });
});

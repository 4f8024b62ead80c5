import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { PgPauseStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { chainSource, countingStatements, storeDefinitions } from "./graphql-fixture.js";

type GraphQLResult<T> = { data?: T; errors?: { message: string }[] };
type AssetRow = { key: string; paused: boolean; upstream: { key: string; paused: boolean }[]; downstream: { key: string }[] };

const COUNTS = "partitionStatus { counts { materialized failed missing total } }";
const RANGES = "partitionStatus { counts { total } ranges { status from to count } }";

/** Asks `query` of `app`, expecting no errors: its data and how many statements it ran. */
async function answered<T>(
  app: ReturnType<typeof createApiApp>,
  counted: ReturnType<typeof countingStatements>,
  query: string,
): Promise<{ data: T; statements: number }> {
  counted.reset();
  const res = await app.request("/graphql", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  const body = (await res.json()) as GraphQLResult<T>;
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return { data: body.data!, statements: counted.statements };
}

describePostgres("GraphQL batching: statements per query do not grow with the assets asked for", () => {
  const database = useTestDatabase();
  let removeDefinitions: () => Promise<void>;
  let counted: ReturnType<typeof countingStatements>;
  let app: ReturnType<typeof createApiApp>;

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, chainSource(100));
    // Some recorded statuses and paused assets, so every loader has rows to return.
    await sql`
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, materialized_at)
      select 'chain/a' || lpad(a::text, 3, '0'), to_char(date '2025-01-01' + d, 'YYYY-MM-DD'),
             case when d % 7 = 0 then 'failed' else 'materialized' end, case when d % 7 <> 0 then a * 100 + d + 1 end, now()
      from generate_series(0, 99) a, generate_series(0, 29) d`.execute(database.db);
    await new PgPauseStore(database.db).pause({ assetKeys: ["chain/a003", "chain/a050"] }, new Date());

    counted = countingStatements(database.db);
    const db = counted.db;
    const context = apiServicesOn(db);
    app = createApiApp({ context, ping: async () => {}, version: "test" });
    // Loads the snapshot into the graph cache: later requests only check its version.
    await count(`{ assets(search: "nothing") { key } }`);
  }, 90_000);

  afterAll(() => removeDefinitions?.());

  const count = <T>(query: string) => answered<T>(app, counted, query);

  const assetsQuery = (search: string, status: string) =>
    `{ assets(search: "${search}") { key paused upstream { key paused } downstream { key } ${status} } }`;

  it("answers 100 assets with upstream, downstream, paused and status counts in a few statements, no more than for 1 asset", async () => {
    const all = await count<{ assets: (AssetRow & { partitionStatus: { counts: Record<string, number> } })[] }>(
      assetsQuery("chain/", COUNTS),
    );
    expect(all.data.assets).toHaveLength(100);
    const a050 = all.data.assets.find((a) => a.key === "chain/a050")!;
    expect(a050.paused).toBe(true);
    expect(a050.upstream.map((u) => u.key).sort()).toEqual(["chain/a000", "chain/a049"]);
    expect(all.data.assets.find((a) => a.key === "chain/a004")!.upstream).toEqual([{ key: "chain/a003", paused: true }]);
    expect(a050.downstream.map((d) => d.key)).toEqual(["chain/a051"]);
    expect(a050.partitionStatus.counts).toMatchObject({ materialized: 25, failed: 5 });
    const one = await count(assetsQuery("chain/a050", COUNTS));
    // The snapshot version, once (a request reads one version of the definitions); with the list, the status counts
    // (after turning JIT off for its transaction) and the pauses of its assets; then the pauses of upstreams outside
    // the list (a050's two), while those of the 100 are all in it.
    expect(all.statements).toBe(4);
    expect(one.statements).toBe(5);
  });

  it("also batches status ranges", async () => {
    const all = await count<{ assets: { key: string; partitionStatus: { ranges: { status: string; count: number }[] } }[] }>(
      assetsQuery("chain/", RANGES),
    );
    expect(all.data.assets).toHaveLength(100);
    const ranges = all.data.assets.find((a) => a.key === "chain/a050")!.partitionStatus.ranges;
    expect(ranges.slice(0, 3)).toEqual(
      [
        { status: "FAILED", from: "2025-01-01", to: "2025-01-01", count: 1 },
        { status: "MATERIALIZED", from: "2025-01-02", to: "2025-01-07", count: 6 },
        { status: "FAILED", from: "2025-01-08", to: "2025-01-08", count: 1 },
      ].map((r) => expect.objectContaining(r)),
    );
    const one = await count(assetsQuery("chain/a050", RANGES));
    // The keys by status of all 100 assets (which give the counts too) in one statement, not one per asset.
    expect(all.statements).toBe(4);
    expect(one.statements).toBe(5);
  });

  it("reads the status with the list however the query asks for it: fragments, aliases, with and without ranges", async () => {
    type Status = { counts: Record<string, number>; ranges?: { status: string; count: number }[] };
    const all = await count<{ assets: { key: string; partitionStatus: Status; inline: Status; withRanges: Status }[] }>(`
      { assets(search: "chain/a05") {
          key ...Counts ... on Asset { inline: partitionStatus { counts { total } } }
          withRanges: partitionStatus { counts { missing } ranges { status count } } } }
      fragment Counts on Asset { partitionStatus { counts { materialized failed total } } }`);
    expect(all.data.assets.map((a) => a.key)).toHaveLength(10);
    // The version, the status read once with ranges for every alias, the JIT setting: no read per asset or per alias.
    expect(all.statements).toBe(3);
    for (const asset of all.data.assets) {
      const alone = await count<{ asset: { partitionStatus: Required<Status> } }>(
        `{ asset(key: "${asset.key}") { partitionStatus { counts { materialized failed total missing } ranges { status count } } } }`,
      );
      const { counts, ranges } = alone.data.asset.partitionStatus;
      expect(asset.partitionStatus.counts).toEqual({ materialized: counts.materialized, failed: counts.failed, total: counts.total });
      expect(asset.inline.counts).toEqual({ total: counts.total });
      expect(asset.withRanges).toEqual({ counts: { missing: counts.missing }, ranges });
    }
  });
});

describePostgres("GraphQL batching: a page of runs asking for their steps", () => {
  const database = useTestDatabase();
  let removeDefinitions: () => Promise<void>;
  let counted: ReturnType<typeof countingStatements>;
  let app: ReturnType<typeof createApiApp>;

  const STEP_FIELDS = "id assetKey partitionKey state tryNumber upstreamStepIds tries { tryNumber state }";
  type StepRow = { id: string; assetKey: string; partitionKey: string; state: string; upstreamStepIds: string[]; tries: object[] };
  type RunRow = { id: string; steps: StepRow[]; viewerCan: { operate: boolean } };

  const request = <T>(query: string) => answered<T>(app, counted, query);

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, chainSource(6));
    counted = countingStatements(database.db);
    const context = apiServicesOn(counted.db);
    app = createApiApp({ context, ping: async () => {}, version: "test" });
    // Runs of different shapes: a chain over three days, one step, a fan-in with its upstreams; then tries for some steps.
    for (const input of [
      `{ assetKeys: ["chain/a000", "chain/a001", "chain/a002"], from: "2025-01-01", to: "2025-01-03" }`,
      `{ assetKeys: ["chain/a000"], partition: "2025-01-05" }`,
      `{ assetKeys: ["chain/a005"], partition: "2025-02-01", includeUpstream: true }`,
    ]) {
      await request(`mutation { launchRun(input: ${input}) { id } }`);
    }
    const claimed = await context.runs.store.claimRunnable({ now: new Date(), capacity: { local: 4 }, limit: 4 });
    expect(claimed.length).toBe(4);
  }, 90_000);

  afterAll(() => removeDefinitions?.());

  it("reads the steps of every run on the page in the statements a page of one run takes, each run with its own", async () => {
    const page = await request<{ runs: RunRow[] }>(`{ runs(first: 10) { id steps { ${STEP_FIELDS} } viewerCan { operate } } }`);
    expect(page.data.runs).toHaveLength(3);
    expect(page.data.runs.map((r) => r.steps.length).sort()).toEqual([1, 6, 9]);
    expect(page.data.runs.flatMap((r) => r.steps).filter((s) => s.tries.length > 0)).toHaveLength(4);
    // Each run's steps as its own page gives them.
    for (const run of page.data.runs) {
      const alone = await request<{ run: RunRow }>(`{ run(id: "${run.id}") { id steps { ${STEP_FIELDS} } viewerCan { operate } } }`);
      expect(run.steps).toEqual(alone.data.run.steps);
      expect(run.viewerCan).toEqual({ operate: true });
      const fanIn = run.steps.find((s) => s.assetKey === "chain/a005");
      if (fanIn) expect(fanIn.upstreamStepIds).toHaveLength(2);
    }
    const one = await request<{ runs: RunRow[] }>(`{ runs(first: 1) { id steps { ${STEP_FIELDS} } viewerCan { operate } } }`);
    expect(one.data.runs).toHaveLength(1);
    expect(page.statements).toBe(one.statements);
  });

  it("reads the backfill of a page's runs once, however many of them it created", async () => {
    const { data } = await request<{ launchBackfill: { id: string } }>(
      `mutation { launchBackfill(input: { assetKeys: ["chain/a000"], from: "2025-03-01", to: "2025-03-02" }) { id } }`,
    );
    const backfillId = data.launchBackfill.id;
    // Two of the three runs as if the backfill had created them.
    const runs = (await request<{ runs: { id: string }[] }>(`{ runs(first: 10) { id } }`)).data.runs;
    expect(runs).toHaveLength(3);
    await sql`update runs set backfill_id = ${backfillId}::uuid where id = any(${runs.slice(1).map((r) => r.id)}::uuid[])`.execute(
      database.db,
    );
    type Row = { id: string; backfillId: string | null; backfill: { id: string; status: string } | null };
    const withBackfill = await request<{ runs: Row[] }>(`{ runs(first: 10) { id backfillId backfill { id status } } }`);
    const without = await request<{ runs: Row[] }>(`{ runs(first: 10) { id backfillId } }`);
    expect(withBackfill.data.runs.map((r) => r.backfill?.id ?? null)).toEqual([null, backfillId, backfillId]);
    expect(withBackfill.data.runs.map((r) => r.backfillId)).toEqual([null, backfillId, backfillId]);
    expect(withBackfill.statements).toBe(without.statements + 1);
  });
});

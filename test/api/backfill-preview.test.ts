// backfillPreview: what launchBackfill would create, checked the same way, with nothing stored. Against a real API
// server in a child process (its GraphQL errors keep their codes) on a real Postgres.
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { graphqlAt } from "../cli/run-cli.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { storeDefinitions } from "./graphql-fixture.js";
import { startApiServer, type ApiServer } from "./triggers-seed.js";

const DEFS = `
import { asset, daily, dep, timeWindow, weekly } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-03-01", timezone: "UTC" });
export const raw = asset({ key: "pv/raw", partitions: days }, async () => 1);
export const clean = asset({ key: "pv/clean", partitions: days, deps: { raw: dep(raw) } }, async () => 2);
export const weeklyRollup = asset(
  { key: "pv/weekly", partitions: weekly({ start: "2025-01-06", end: "2025-03-03", timezone: "UTC" }), deps: { raw: dep(raw, timeWindow()) } },
  async () => 3,
);
export const lookup = asset({ key: "pv/lookup" }, async () => 4);
`;

type GraphQLResult<T> = { data?: T | null; errors?: { message: string; extensions?: { code?: string } }[] };
interface Preview {
  partitions: number;
  runs: number;
  maxPartitionsPerRun: number;
  maxConcurrentRuns: number;
  priority: number;
  perAsset: { assetKey: string; partitions: number; firstKey: string; lastKey: string }[];
}

const PREVIEW = `query ($input: LaunchBackfillInput!) {
  backfillPreview(input: $input) { partitions runs maxPartitionsPerRun maxConcurrentRuns priority perAsset { assetKey partitions firstKey lastKey } }
}`;
const LAUNCH = `mutation ($input: LaunchBackfillInput!) { launchBackfill(input: $input) { id requested chunks maxPartitionsPerRun } }`;

describePostgres("GraphQL backfillPreview", () => {
  const database = useTestDatabase();
  let server: ApiServer;
  let removeDefinitions: () => Promise<void>;

  const gql = <T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> =>
    graphqlAt<T>(server.port, query, variables);
  const preview = async (input: Record<string, unknown>): Promise<Preview> => {
    const r = await gql<{ backfillPreview: Preview }>(PREVIEW, { input });
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    return r.data!.backfillPreview;
  };

  /** Every table a preview could write to. */
  async function rowCounts(): Promise<unknown> {
    const { rows } = await sql<{ t: unknown }>`
      select json_build_object('backfills', (select count(*) from backfills), 'runs', (select count(*) from runs),
        'steps', (select count(*) from steps), 'events', (select count(*) from events)) as t`.execute(database.db);
    return rows[0]!.t;
  }

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, DEFS);
    server = await startApiServer(database.url);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    await removeDefinitions?.();
  });

  it("counts the partitions and runs of a range, per asset, and launchBackfill then creates exactly that", async () => {
    const input = { assetKeys: ["pv/raw", "pv/clean"], from: "2025-01-01", to: "2025-01-31", maxPartitionsPerRun: 7, maxConcurrentRuns: 2 };
    const p = await preview(input);
    expect(p).toEqual({
      partitions: 62,
      runs: 5,
      maxPartitionsPerRun: 7,
      maxConcurrentRuns: 2,
      priority: -10,
      perAsset: [
        { assetKey: "pv/raw", partitions: 31, firstKey: "2025-01-01", lastKey: "2025-01-31" },
        { assetKey: "pv/clean", partitions: 31, firstKey: "2025-01-01", lastKey: "2025-01-31" },
      ],
    });
    // One day per run: 31 runs.
    expect((await preview({ ...input, maxPartitionsPerRun: undefined })).runs).toBe(31);
    // A daily range selects the weeks of the weekly rollup that read it: three whole weeks.
    expect(await preview({ assetKeys: ["pv/raw", "pv/weekly"], from: "2025-01-06", to: "2025-01-26" })).toMatchObject({
      partitions: 21 + 3,
      perAsset: [
        { assetKey: "pv/raw", partitions: 21, firstKey: "2025-01-06", lastKey: "2025-01-26" },
        { assetKey: "pv/weekly", partitions: 3, firstKey: "2025-01-06", lastKey: "2025-01-20" },
      ],
    });
    // Every partition, and an unpartitioned asset.
    expect(await preview({ assetKeys: ["pv/raw"], allPartitions: true })).toMatchObject({ partitions: 59, runs: 59 });
    expect(await preview({ assetKeys: ["pv/lookup"] })).toMatchObject({
      partitions: 1,
      runs: 1,
      perAsset: [{ assetKey: "pv/lookup", partitions: 1, firstKey: "", lastKey: "" }],
    });

    const launched = await gql<{ launchBackfill: { id: string; requested: number; chunks: number; maxPartitionsPerRun: number } }>(LAUNCH, {
      input,
    });
    expect(launched.errors, JSON.stringify(launched.errors)).toBeUndefined();
    expect(launched.data!.launchBackfill).toMatchObject({ requested: p.partitions, chunks: p.runs, maxPartitionsPerRun: 7 });
  });

  it("rejects what launchBackfill rejects, with the same codes and messages, and stores nothing", async () => {
    const before = await rowCounts();
    const cases: { input: Record<string, unknown>; code: string; message: RegExp }[] = [
      {
        input: { assetKeys: ["pv/raw"], from: "2025-01-31", to: "2025-01-01" },
        code: "PARTITION_RANGE_INVALID",
        message: /reversed partition range.*"2025-01-31" comes after "2025-01-01"/,
      },
      { input: { assetKeys: ["pv/raw"], from: "2025-01-01", to: "not-a-day" }, code: "", message: /not-a-day/ },
      { input: { assetKeys: ["pv/raw"], from: "2024-12-01", to: "2025-01-05" }, code: "", message: /2024-12-01/ },
      { input: { assetKeys: ["pv/raw"], from: "2025-02-20", to: "2025-03-10" }, code: "", message: /2025-03-10/ },
      { input: { assetKeys: ["pv/rwa"] }, code: "GRAPH_UNKNOWN_ASSET", message: /pv\/rwa.*pv\/raw/s },
      { input: { assetKeys: ["pv/clean"], from: "2025-01-01", to: "2025-01-02" }, code: "PLAN_MISSING_UPSTREAM", message: /pv\/raw/ },
      { input: { assetKeys: ["pv/raw"], maxPartitionsPerRun: 0 }, code: "INPUT_INVALID", message: /maxPartitionsPerRun/ },
      { input: { assetKeys: ["pv/raw"], allPartitions: true, from: "2025-01-01" }, code: "INPUT_INVALID", message: /one of/ },
    ];
    for (const { input, code, message } of cases) {
      const p = await gql<{ backfillPreview: Preview }>(PREVIEW, { input });
      const l = await gql<{ launchBackfill: { id: string } }>(LAUNCH, { input });
      const label = JSON.stringify(input);
      expect(p.errors?.[0], `${label}: ${JSON.stringify(p)}`).toBeDefined();
      expect(p.data?.backfillPreview ?? null, label).toBeNull();
      if (code) expect(p.errors![0]!.extensions?.code, `${label}: ${JSON.stringify(p.errors)}`).toBe(code);
      expect(p.errors![0]!.message, label).toMatch(message);
      // The same check as the launch: the same code and the same explanation (named for its own field).
      expect(l.errors?.[0]?.extensions?.code, `${label}: ${JSON.stringify(l.errors)}`).toBe(p.errors![0]!.extensions?.code);
      const same = (m: string) => m.replace(/launchBackfill/g, "backfillPreview").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<now>");
      expect(same(l.errors![0]!.message)).toBe(same(p.errors![0]!.message));
    }
    // With includeUpstream the missing upstream partitions join the backfill instead.
    expect(await preview({ assetKeys: ["pv/clean"], from: "2025-01-01", to: "2025-01-02", includeUpstream: true })).toMatchObject({
      partitions: 4,
    });
    expect(await rowCounts()).toEqual(before);
  });
});

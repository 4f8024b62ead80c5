// Asset checks through GraphQL: Asset.checks with latestResult, Asset.checkResults, Run.checkResults, and the
// runChecks mutation, against a real `tributary dev` server on a Postgres clone (runs really execute); statement
// counts through the app in-process.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { eventually, graphqlAt, startDev, type DevServer } from "../cli/run-cli.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { countingStatements } from "./graphql-fixture.js";

// Three days of orders; the 3rd has none, which the blocking check refuses. Ten unpartitioned assets with a check
// each (never run) for the batching test, and one asset without checks.
const DEFS = `
import { asset, check, daily } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-01-11" });
export const orders = asset({ key: "ck/orders", partitions: days }, async (ctx) => ({ rows: ctx.partition.key === "2025-01-03" ? 0 : 10 }));
export const notEmpty = check(orders, { name: "not_empty", blocking: true, description: "at least one order" }, (_ctx, value) => ({
  passed: value.rows > 0,
  metadata: { rows: value.rows },
}));
export const small = check(orders, { name: "small", severity: "warn" }, (_ctx, value) => ({ passed: value.rows < 100 }));
export const plain = asset({ key: "ck/plain" }, async () => 1);
${Array.from(
  { length: 10 },
  (_, i) => `export const m${i} = asset({ key: "ck/m${i}" }, async () => ${i});
export const m${i}Check = check(m${i}, { name: "positive" }, (_ctx, v) => ({ passed: v > 0 }));`,
).join("\n")}
`;

type GraphQLResult<T> = { data?: T | null; errors?: { message: string; extensions?: { code?: string } }[] };
type Result = {
  id: string;
  assetKey: string;
  checkName: string;
  partitionKey: string | null;
  passed: boolean;
  severity: string;
  blocking: boolean;
  metadata: Record<string, unknown>;
  error: { code: string; message: string } | null;
  runId: string;
  stepId: string;
  materializationEventId: string;
  createdAt: string;
};
type Run = {
  id: string;
  status: string;
  origin: string;
  tags: Record<string, string>;
  steps: { checkName: string | null; partitionKey: string }[];
};
const R_FIELDS = "id assetKey checkName partitionKey passed severity blocking metadata error runId stepId materializationEventId createdAt";
const RUN_CHECKS = `mutation ($input: RunChecksInput!) { runChecks(input: $input) { id status origin tags steps { checkName partitionKey } } }`;

describePostgres("GraphQL: asset checks, their results and runChecks", () => {
  const database = useTestDatabase();
  let dev: DevServer;
  let defsDir: string;
  /** The run that materialised 2025-01-01..03 with its checks. */
  let firstRun: Run;

  const gql = <T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> =>
    graphqlAt<T>(dev.port, query, variables);

  async function data<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const result = await gql<T>(query, variables);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data!;
  }

  /** Polls the run until it ends. */
  function ended(id: string): Promise<string> {
    return eventually(
      async () => {
        const { run } = await data<{ run: { status: string } }>(`query ($id: String!) { run(id: $id) { status } }`, { id });
        return ["success", "failed", "canceled"].includes(run.status) ? run.status : undefined;
      },
      60_000,
      () => `run ${id} to end\n${dev.output()}`,
    );
  }

  const runCount = async () => (await sql<{ n: number }>`select count(*)::int as n from runs`.execute(database.db)).rows[0]!.n;

  beforeAll(async () => {
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-checks-defs-"));
    await writeFile(path.join(defsDir, "orders.ts"), DEFS);
    dev = await startDev({ databaseUrl: database.url, definitionsDir: defsDir, processes: 1 });
    const launched = await data<{ launchRun: Run }>(
      `mutation ($input: LaunchRunInput!) { launchRun(input: $input) { id status origin tags steps { checkName partitionKey } } }`,
      {
        input: { assetKeys: ["ck/orders"], from: "2025-01-01", to: "2025-01-03" },
      },
    );
    firstRun = launched.launchRun;
    expect(await ended(firstRun.id)).toBe("failed"); // not_empty fails on the 3rd
  }, 180_000);

  afterAll(async () => {
    await dev?.stop();
    await rm(defsDir, { recursive: true, force: true });
  });

  it("lists an asset's checks with their latest result per partition (null when never run)", async () => {
    const { asset } = await data<{
      asset: {
        checks: {
          name: string;
          assetKey: string;
          blocking: boolean;
          severity: string;
          description: string | null;
          third: Result | null;
          ninth: Result | null;
          any: Result | null;
        }[];
      };
    }>(
      `{ asset(key: "ck/orders") { checks { name assetKey blocking severity description
          third: latestResult(partition: "2025-01-03") { ${R_FIELDS} }
          ninth: latestResult(partition: "2025-01-09") { id }
          any: latestResult { id partitionKey } } } }`,
    );
    expect(asset.checks.map((c) => [c.name, c.assetKey, c.blocking, c.severity, c.description])).toEqual([
      ["not_empty", "ck/orders", true, "ERROR", "at least one order"],
      ["small", "ck/orders", false, "WARN", null],
    ]);
    const notEmpty = asset.checks[0]!;
    expect(notEmpty.third).toMatchObject({
      assetKey: "ck/orders",
      checkName: "not_empty",
      partitionKey: "2025-01-03",
      passed: false,
      severity: "ERROR",
      blocking: true,
      metadata: { rows: 0 },
      error: null,
      runId: firstRun.id,
    });
    // The result names the materialisation it judged: the partition's latest.
    const { asset: m } = await data<{ asset: { latestMaterialization: { eventId: string } } }>(
      `{ asset(key: "ck/orders") { latestMaterialization(partition: "2025-01-03") { eventId } } }`,
    );
    expect(notEmpty.third!.materializationEventId).toBe(m.latestMaterialization.eventId);
    expect(notEmpty.ninth).toBeNull();
    expect(notEmpty.any).not.toBeNull();
    expect(asset.checks[1]!.third).toMatchObject({ checkName: "small", passed: true, severity: "WARN", blocking: false, metadata: {} });

    const plain = await data<{ asset: { checks: unknown[] } }>(`{ asset(key: "ck/plain") { checks { name } } }`);
    expect(plain.asset.checks).toEqual([]);
    const never = await data<{ asset: { checks: { latestResult: unknown }[] } }>(
      `{ asset(key: "ck/m1") { checks { latestResult { id } } } }`,
    );
    expect(never.asset.checks).toEqual([{ latestResult: null }]);
  });

  it("pages check results newest first, filtered by check and partition; a run lists its own", async () => {
    type Page = { nodes: Result[]; endCursor: string | null; hasNextPage: boolean };
    const all = await data<{ asset: { checkResults: Page } }>(
      `{ asset(key: "ck/orders") { checkResults { nodes { ${R_FIELDS} } hasNextPage } } }`,
    );
    expect(all.asset.checkResults.nodes).toHaveLength(6);
    const ids = all.asset.checkResults.nodes.map((n) => Number(n.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));

    const pages: Result[] = [];
    let after: string | null = null;
    do {
      const page: { asset: { checkResults: Page } } = await data(
        `query ($after: String) { asset(key: "ck/orders") { checkResults(first: 4, after: $after) { nodes { id } endCursor hasNextPage } } }`,
        { after },
      );
      pages.push(...page.asset.checkResults.nodes);
      after = page.asset.checkResults.hasNextPage ? page.asset.checkResults.endCursor : null;
    } while (after);
    expect(pages.map((n) => Number(n.id))).toEqual(ids);

    const one = await data<{ asset: { checkResults: Page } }>(
      `{ asset(key: "ck/orders") { checkResults(check: "not_empty", partition: "2025-01-02") { nodes { checkName partitionKey passed metadata } } } }`,
    );
    expect(one.asset.checkResults.nodes).toEqual([
      { checkName: "not_empty", partitionKey: "2025-01-02", passed: true, metadata: { rows: 10 } },
    ]);
    const byCheck = await data<{ asset: { checkResults: Page } }>(
      `{ asset(key: "ck/orders") { checkResults(check: "small") { nodes { checkName } } } }`,
    );
    expect(byCheck.asset.checkResults.nodes.map((n) => n.checkName)).toEqual(["small", "small", "small"]);

    const { run } = await data<{ run: { checkResults: Result[] } }>(
      `query ($id: String!) { run(id: $id) { checkResults { checkName partitionKey passed } } }`,
      { id: firstRun.id },
    );
    expect(run.checkResults).toHaveLength(6);
    expect(run.checkResults.filter((r) => !r.passed)).toEqual([{ checkName: "not_empty", partitionKey: "2025-01-03", passed: false }]);

    for (const [query, code] of [
      [`{ asset(key: "ck/orders") { checkResults(after: "bm9wZQ") { nodes { id } } } }`, "INPUT_INVALID"],
      [`{ asset(key: "ck/orders") { checkResults(first: 0) { nodes { id } } } }`, "INPUT_INVALID"],
      [`{ asset(key: "ck/orders") { checkResults(check: "nope") { nodes { id } } } }`, "CHECK_UNKNOWN"],
      [`{ asset(key: "ck/orders") { checkResults(partition: "2025-13-01") { nodes { id } } } }`, "PARTITION_KEY_INVALID"],
      [`{ asset(key: "ck/plain") { checks { latestResult(partition: "x") { id } } } }`, undefined],
      [`{ asset(key: "ck/m1") { checks { latestResult(partition: "x") { id } } } }`, "PARTITION_UNEXPECTED"],
    ] as const) {
      const result = await gql(query);
      if (code === undefined)
        expect(result.errors).toBeUndefined(); // no checks: nothing to resolve
      else expect(result.errors?.[0]?.extensions?.code, JSON.stringify(result)).toBe(code);
    }
  });

  it("runChecks runs only check steps on the latest materialisation and records new results", async () => {
    const before = await data<{ asset: { checkResults: { nodes: Result[] } } }>(
      `{ asset(key: "ck/orders") { checkResults(first: 100) { nodes { ${R_FIELDS} } } } }`,
    );
    const { runChecks } = await data<{ runChecks: Run }>(RUN_CHECKS, {
      input: { assetKey: "ck/orders", partitions: ["2025-01-01", "2025-01-03"], checks: ["not_empty"] },
    });
    expect(runChecks).toMatchObject({ origin: "manual", tags: { checks: "ck/orders" } });
    expect(runChecks.steps.map((s) => [s.checkName, s.partitionKey]).sort()).toEqual([
      ["not_empty", "2025-01-01"],
      ["not_empty", "2025-01-03"],
    ]);
    expect(await ended(runChecks.id)).toBe("failed"); // the blocking check still fails on the 3rd

    const { run } = await data<{ run: { checkResults: Result[] } }>(
      `query ($id: String!) { run(id: $id) { checkResults { ${R_FIELDS} } } }`,
      { id: runChecks.id },
    );
    expect(run.checkResults.map((r) => [r.checkName, r.partitionKey, r.passed]).sort()).toEqual([
      ["not_empty", "2025-01-01", true],
      ["not_empty", "2025-01-03", false],
    ]);
    // They judged the same materialisations as the first run's checks (nothing was materialised again).
    for (const r of run.checkResults) {
      const earlier = before.asset.checkResults.nodes.find((b) => b.checkName === r.checkName && b.partitionKey === r.partitionKey)!;
      expect(r.materializationEventId).toBe(earlier.materializationEventId);
      expect(Number(r.id)).toBeGreaterThan(Number(earlier.id));
    }
    const { asset } = await data<{ asset: { checks: { name: string; latestResult: { runId: string } | null }[] } }>(
      `{ asset(key: "ck/orders") { checks { name latestResult(partition: "2025-01-03") { runId } } } }`,
    );
    expect(asset.checks).toEqual([
      { name: "not_empty", latestResult: { runId: runChecks.id } },
      { name: "small", latestResult: { runId: firstRun.id } },
    ]);

    // Without checks: all of them; an unpartitioned asset takes no partitions.
    await data(`mutation { launchRun(input: { assetKeys: ["ck/m2"] }) { id } }`);
    await eventually(async () =>
      (await sql<{ n: number }>`select count(*)::int as n from check_results where asset_key = 'ck/m2'`.execute(database.db)).rows[0]!.n > 0
        ? true
        : undefined,
    );
    const unpartitioned = await data<{ runChecks: Run }>(RUN_CHECKS, { input: { assetKey: "ck/m2" } });
    expect(unpartitioned.runChecks.steps).toEqual([{ checkName: "positive", partitionKey: "" }]);
    expect(await ended(unpartitioned.runChecks.id)).toBe("success");
  }, 120_000);

  it.each([
    [
      { assetKey: "ck/order", partitions: ["2025-01-01"] },
      "GRAPH_UNKNOWN_ASSET",
      /no asset has the key "ck\/order"; did you mean "ck\/orders"\?/,
    ],
    [{ assetKey: "ck/plain" }, "CHECKS_NONE", /asset "ck\/plain" has no checks/],
    [
      { assetKey: "ck/orders", partitions: ["2025-01-01"], checks: ["not_empty", "nope"] },
      "CHECK_UNKNOWN",
      /asset "ck\/orders" has no check "nope"; its checks are "not_empty", "small"/,
    ],
    [{ assetKey: "ck/orders" }, "CHECK_PARTITION_REQUIRED", /asset "ck\/orders" is partitioned: name the partitions to check/],
    [{ assetKey: "ck/orders", partitions: [] }, "CHECK_PARTITION_REQUIRED", /asset "ck\/orders"/],
    [
      { assetKey: "ck/orders", partitions: ["2025-01-01", "2025-13-01"] },
      "CHECK_PARTITION_INVALID",
      /asset "ck\/orders": "2025-13-01" is not a partition of daily/,
    ],
    [{ assetKey: "ck/orders", partitions: ["2026-01-01"] }, "CHECK_PARTITION_INVALID", /after the last partition "2025-01-10"/],
    [{ assetKey: "ck/m1", partitions: ["2025-01-01"] }, "CHECK_PARTITION_UNEXPECTED", /asset "ck\/m1" is not partitioned/],
    [
      { assetKey: "ck/orders", partitions: ["2025-01-01", "2025-01-09"] },
      "CHECK_NOTHING_TO_CHECK",
      /^partition "2025-01-09" of asset "ck\/orders" has not been materialised: there is nothing to check$/,
    ],
    [{ assetKey: "ck/m1" }, "CHECK_NOTHING_TO_CHECK", /^asset "ck\/m1" has not been materialised: there is nothing to check$/],
    [{ assetKey: "" }, "INPUT_INVALID", /runChecks: input.assetKey: name the asset whose checks to run/],
    [{ assetKey: "ck/orders", partitions: ["2025-01-01"], extra: 1 }, undefined, /extra/],
  ])("runChecks(%j) answers %s and creates no run", async (input, code, message) => {
    const runs = await runCount();
    const result = await gql(RUN_CHECKS, { input });
    expect((result.data as { runChecks?: unknown } | null | undefined)?.runChecks ?? null, JSON.stringify(result)).toBeNull();
    if (code) expect(result.errors?.[0]?.extensions?.code, JSON.stringify(result)).toBe(code);
    expect(result.errors?.[0]?.message).toMatch(message);
    expect(await runCount()).toBe(runs);
  });

  it("reads checks and latest results of many assets in as many statements as of one", async () => {
    const counted = countingStatements(database.db);
    const context = apiServicesOn(counted.db);
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    const count = async (search: string) => {
      counted.reset();
      const query = `{ assets(search: "${search}") { key checks { name latestResult { passed } } checkResults(first: 2) { nodes { id } } } }`;
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query }),
      });
      const body = (await res.json()) as GraphQLResult<{
        assets: { key: string; checks: { name: string; latestResult: { passed: boolean } | null }[] }[];
      }>;
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
      return { assets: body.data!.assets, statements: counted.statements };
    };
    await count("nothing"); // loads the snapshot into the graph cache
    const all = await count("ck/");
    expect(all.assets).toHaveLength(12);
    expect(all.assets.find((a) => a.key === "ck/m2")!.checks).toEqual([{ name: "positive", latestResult: { passed: true } }]);
    const one = await count("ck/m2");
    // The snapshot version, then one statement per kind of scan asked for (a check's results on one partition, or open
    // over partitions): the assets' checks are at hand, so their latest results and the assets' own pages are read
    // together, and ck/orders adds nothing.
    expect(one.statements).toBe(3);
    expect(all.statements).toBe(3);
  });
});

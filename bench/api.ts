// The GraphQL API at scale, through the real Hono app in-process
// (`createApiApp(...).request("/graphql")`) on the local Postgres, one fresh
// database per scenario (dropped after). History is seeded with bulk SQL:
// events, event_inputs (what each materialisation read) and partition_status,
// so that statuses, staleness and lineage are derived as in production.
//
// 1. `asset(key) { partitionStatus { counts ranges } }` and the first page of
//    `partitions(first: 100)` (with status) for hourly assets with 10 000 and
//    100 000 partitions; statuses mixed in runs and scattered: materialised,
//    failed, missing, stale (upstream re-materialised, or code version changed).
//    The status is asked again with a write of one of the asset's partitions
//    before each request (partitionStatusAfterWrite: the server derives that
//    partition again), and with a statement writing 1 001 of them
//    (partitionStatusAfterBulkWrite: the server reads and folds every key, as
//    without a cache), and from a new server after a one-partition write
//    (partitionStatusNewServer: nothing in its memory, it starts from the
//    database's copy of the folded statuses the first server kept).
// 2. `assets { key group upstream { key } partitionStatus { counts } }` (the
//    asset graph page) and the asset catalog page's query (status counts,
//    pause, latest materialisation) over 10 000 generated assets with 24
//    recent partitions each.
// 3. `erasureImpact` over a 5-level graph (2 assets a level, each reading
//    both of the level above) with 10 000 derived partitions.
// 4. `runs(first: 500)` with each run's steps, their upstream steps and tries:
//    500 runs of a 3-step chain, launched as the API launches them, as many
//    first steps handed out as the default pool takes (a try each).
// Prints one JSON object: p50/p95/max per query, over --requests requests
// after one warm-up.
//
//   npx tsx bench/api.ts [--requests 30] [--assets 10000] [--only partitions,assets,erasure,runs]
import { parseArgs } from "node:util";
import { sql, type Kysely } from "kysely";
import type { Runtime } from "../src/cli/index.js";
import type { Database } from "../src/storage/index.js";
import { benchStores, openBenchRuntime, storeBenchDefinitions } from "./_definitions.js";
import { p50p95max, printResult, timed, withScope } from "./_setup.js";
import { createApiApp, launchRun } from "../src/api/index.js";
import { partitionSpace, type PartitionsSpec } from "../src/partitions/index.js";
import { hourlyStart, mixedStatuses, now, random, resetRandom, seedHistory, type SeedAsset } from "./_seed-history.js";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "30" },
    assets: { type: "string", default: "10000" },
    only: { type: "string", default: "partitions,assets,erasure,runs" },
  },
});
const ONLY = new Set(values.only.split(","));
const REQUESTS = Number(values.requests);
const ASSETS = Number(values.assets);
type Request = (query: string, variables?: Record<string, unknown>) => Promise<{ ms: number; data: Record<string, unknown> }>;

/**
 * A fresh database with these definitions and history, the API app over it
 * (the same API services `tributary dev` builds, with the clock at `now`), then
 * the database is dropped.
 */
async function withApi<T>(
  name: string,
  source: string,
  assets: (specs: ReadonlyMap<string, PartitionsSpec>) => SeedAsset[],
  run: (
    request: Request,
    seeded: object,
    specs: ReadonlyMap<string, PartitionsSpec>,
    db: Kysely<Database>,
    newServer: () => Promise<{ request: Request; close: () => Promise<void> }>,
  ) => Promise<T>,
): Promise<T> {
  return withScope(async (scope) => {
    const url = await scope.scratchDatabase(`api_${name}`);
    const dir = await scope.tempDir("api");
    const runtime = await openBenchRuntime(scope, url, dir);
    const load = await timed(() => storeBenchDefinitions(runtime.database.db, dir, source, 300_000));
    const loadDefinitionsMs = Math.round(load.ms);
    const { graph } = await runtime.graphs.current();
    const specs = new Map(graph.assets.filter((a) => a.partitions).map((a) => [a.key, a.partitions!]));
    const { value: seeded, ms: seedingMs } = await timed(() => seedHistory(runtime.database.db, assets(specs)));
    const seedMs = Math.round(seedingMs);
    const request = requestOf(runtime);
    // Another server on the database: its own runtime, so nothing cached in memory.
    const newServer = async () => {
      const { openRuntime, resolveSettings } = await import("../src/cli/index.js");
      const other = await openRuntime(resolveSettings({ definitions: dir, dataDir: dir }, { DATABASE_URL: url }));
      return { request: requestOf(other), close: () => other.close() };
    };
    return await run(request, { ...seeded, loadDefinitionsMs, seedMs }, specs, runtime.database.db, newServer);
  });
}

/** GraphQL requests to the API app over `runtime` (the same API services `tributary dev` builds, the clock at `now`). */
function requestOf(runtime: Runtime): Request {
  const app = createApiApp({ context: { ...runtime.apiContext(), now: () => now }, ping: async () => {}, version: "bench" });
  return async (query, variables) => {
    const started = performance.now();
    const res = await app.request("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown>; errors?: { message: string }[] };
    const ms = performance.now() - started;
    if (body.errors?.length || !body.data) throw new Error(`bench query failed: ${JSON.stringify(body.errors ?? body)}`);
    return { ms, data: body.data };
  };
}

/** One warm-up, then `times` timed requests (each after `before`, untimed): p50/p95/max in ms, and the last answer. */
async function measure(
  request: Request,
  query: string,
  variables: Record<string, unknown>,
  times: number,
  before: () => Promise<unknown> = async () => {},
) {
  await request(query, variables);
  const ms: number[] = [];
  let data: Record<string, unknown> = {};
  for (let i = 0; i < times; i++) {
    await before();
    ({ ms: ms[i]!, data } = await request(query, variables));
  }
  return { stats: { requests: times, ...p50p95max(ms) }, data };
}

/** What the UI's asset catalog asks for every asset. */
const CATALOG_QUERY = `{ assets { key group owner kind tags partitionsDescription paused
  partitionStatus { counts { total materialized stale failed materializing missing timedOut erased } }
  latestMaterialization { createdAt runId kind } } }`;

const STATUS_QUERY = `query($key: String!) { asset(key: $key) { partitionStatus {
  counts { missing materialized failed stale total } ranges { status from to count } } } }`;
const PAGE_QUERY = `query($key: String!) { asset(key: $key) { partitions(first: 100) {
  totalCount endCursor nodes { key start status staleReasons { kind } } } } }`;

async function partitionsScenario() {
  resetRandom();
  const sizes = [10_000, 100_000];
  const source = [
    `import { asset, dep, hourly } from "tributary";`,
    `const noop = async () => null;`,
    `export const raw = asset({ key: "bench/raw", partitions: hourly({ start: "${hourlyStart(100_000)}" }) }, noop);`,
    ...sizes.map(
      (n) =>
        `export const p${n} = asset({ key: "bench/p${n}", codeVersion: "v2", partitions: hourly({ start: "${hourlyStart(n)}" }), deps: { raw: dep(raw) } }, noop);`,
    ),
  ].join("\n");
  return withApi(
    "parts",
    source,
    (specs) => [
      {
        key: "bench/raw",
        partitions: specs.get("bench/raw")!,
        from: () => 0,
        status: () => "materialized",
        upstreams: [],
        codeVersion: null,
      },
      ...sizes.map((n): SeedAsset => {
        const statuses = mixedStatuses(n);
        const key = `bench/p${n}`;
        return {
          key,
          partitions: specs.get(key)!,
          from: () => 0,
          status: (i) => statuses[i]!,
          upstreams: ["bench/raw"],
          codeVersion: "v2",
        };
      }),
    ],
    async (request, seeded, _specs, db, newServer) => {
      const out: Record<string, unknown> = { seeded };
      for (const n of sizes) {
        const variables = { key: `bench/p${n}` };
        const status = await measure(request, STATUS_QUERY, variables, REQUESTS);
        // A write to one of the asset's status rows before each request: the server's cached ranges no longer hold,
        // so every answer reads and folds the keys again.
        const touch = () =>
          sql`update partition_status set updated_at = updated_at
              where asset_key = ${variables.key} and partition_key = (select min(partition_key) from partition_status where asset_key = ${variables.key})`.execute(
            db,
          );
        const afterWrite = await measure(request, STATUS_QUERY, variables, REQUESTS, touch);
        // A statement writing 1 001 of its partitions before each request: more than a change row names, so every
        // answer reads and folds all the asset's keys (what an answer without a cache costs).
        const touchMany = () =>
          sql`update partition_status set updated_at = updated_at
              where asset_key = ${variables.key} and partition_key in (
                select partition_key from partition_status where asset_key = ${variables.key} order by partition_key limit 1001)`.execute(
            db,
          );
        const afterBulkWrite = await measure(request, STATUS_QUERY, variables, REQUESTS, touchMany);
        // A server that has not read the asset (just started, or another behind a load balancer), after a write of one
        // partition: it starts from the copy of the folded statuses the other server kept in the database.
        const fresh: number[] = [];
        for (let i = 0; i < REQUESTS; i++) {
          await touch();
          const server = await newServer();
          try {
            fresh.push((await server.request(STATUS_QUERY, variables)).ms);
          } finally {
            await server.close();
          }
        }
        const page = await measure(request, PAGE_QUERY, variables, REQUESTS);
        const summary = (status.data.asset as { partitionStatus: { counts: object; ranges: unknown[] } }).partitionStatus;
        out[`partitions${n}`] = {
          partitionStatus: status.stats,
          partitionStatusAfterWrite: afterWrite.stats,
          partitionStatusAfterBulkWrite: afterBulkWrite.stats,
          partitionStatusNewServer: { requests: REQUESTS, ...p50p95max(fresh) },
          counts: summary.counts,
          ranges: summary.ranges.length,
          responseBytes: JSON.stringify(status.data).length,
          firstPage: page.stats,
        };
      }
      return out;
    },
  );
}

/** 10 000 assets as one definitions file: half daily, half hourly, up to 3 deps of the same cadence, 20 groups. */
function manyAssets(): { source: string; upstreams: Map<string, string[]> } {
  const upstreams = new Map<string, string[]>();
  const lines = [
    `import { asset, daily, dep, hourly } from "tributary";`,
    `const days = daily({ start: "2024-01-01" });`,
    `const hours = hourly({ start: "2025-01-01T00:00" });`,
    `const noop = async () => null;`,
  ];
  const pools: [number[], number[]] = [[], []];
  for (let i = 0; i < ASSETS; i++) {
    const pool = pools[i % 2]!;
    const deps = new Set<number>();
    for (let d = 0; d < 3 && pool.length > 0; d++) deps.add(pool[Math.floor(random() * pool.length)]!);
    const depList = [...deps].map((j) => `d${j}: dep(a${j})`).join(", ");
    lines.push(
      `export const a${i} = asset({ key: "bench/a${i}", group: "g${i % 20}", partitions: ${i % 2 ? "hours" : "days"}, deps: { ${depList} } }, noop);`,
    );
    upstreams.set(
      `bench/a${i}`,
      [...deps].map((j) => `bench/a${j}`),
    );
    pool.push(i);
  }
  return { source: lines.join("\n") + "\n", upstreams };
}

async function assetsScenario() {
  resetRandom();
  const { source, upstreams } = manyAssets();
  const recent = 24;
  return withApi(
    "assets",
    source,
    (specs) =>
      [...upstreams].map(([key, ups]): SeedAsset => {
        const statuses = mixedStatuses(recent);
        const status = (i: number) => statuses[i % recent]!;
        return { key, partitions: specs.get(key)!, from: (count) => count - recent, status, upstreams: ups, codeVersion: null };
      }),
    async (request, seeded) => {
      const query = `{ assets { key group upstream { key } partitionStatus { counts { missing materialized failed stale total } } } }`;
      const { stats, data } = await measure(request, query, {}, REQUESTS);
      const catalog = await measure(request, CATALOG_QUERY, {}, REQUESTS);
      return {
        seeded,
        assets: (data.assets as unknown[]).length,
        responseBytes: JSON.stringify(data).length,
        query: stats,
        catalogResponseBytes: JSON.stringify(catalog.data).length,
        catalog: catalog.stats,
      };
    },
  );
}

/** A source and 5 levels of 2 assets, each reading both assets of the level above (the source for level 1); `history` hourly partitions each. */
async function erasureScenario() {
  const history = 5_000;
  const asked = 1_000;
  const levels = 5;
  const lines = [
    `import { asset, dep, hourly } from "tributary";`,
    `const hours = hourly({ start: "${hourlyStart(history)}" });`,
    `const noop = async () => null;`,
    `export const l0a = asset({ key: "bench/customers", partitions: hours, metadata: { pii: ["email", "name"] } }, noop);`,
  ];
  const order: { key: string; upstreams: string[] }[] = [{ key: "bench/customers", upstreams: [] }];
  for (let l = 1; l <= levels; l++) {
    const ups = l === 1 ? ["l0a"] : [`l${l - 1}a`, `l${l - 1}b`];
    for (const side of ["a", "b"]) {
      const pii = side === "a" ? `, metadata: { pii: true }` : "";
      const deps = ups.map((u) => `${u}: dep(${u})`).join(", ");
      lines.push(`export const l${l}${side} = asset({ key: "bench/l${l}${side}", partitions: hours${pii}, deps: { ${deps} } }, noop);`);
      order.push({ key: `bench/l${l}${side}`, upstreams: ups.map((u) => (u === "l0a" ? "bench/customers" : `bench/${u}`)) });
    }
  }
  return withApi(
    "erasure",
    lines.join("\n") + "\n",
    (specs) => order.map((a) => ({ ...a, partitions: specs.get(a.key)!, from: () => 0, status: () => "materialized", codeVersion: null })),
    async (request, seeded, specs) => {
      const space = partitionSpace(specs.get("bench/customers")!);
      const partitionKeys = Array.from({ length: asked }, (_, i) => space.keyAt(history - asked - 500 + i));
      const query = `query($key: String!, $keys: [String!]!) { erasureImpact(assetKey: $key, partitionKeys: $keys) {
        assets { assetKey hasPii partitionCount } partitions { assetKey partitionKey eventId runId output { storageRef } } } }`;
      const { stats, data } = await measure(request, query, { key: "bench/customers", keys: partitionKeys }, Math.min(REQUESTS, 10));
      const impact = data.erasureImpact as { partitions: unknown[]; assets: unknown[] };
      return {
        seeded,
        levels,
        sourcePartitionsAsked: asked,
        impactedPartitions: impact.partitions.length,
        assets: impact.assets.length,
        responseBytes: JSON.stringify(data).length,
        query: stats,
      };
    },
  );
}

/** 500 runs of a daily 3-step chain (one partition each), launched as the API launches them; as many first steps handed out as the default pool takes. */
async function runsScenario() {
  const runs = 500;
  const source = [
    `import { asset, daily, dep } from "tributary";`,
    `const days = daily({ start: "2024-01-01" });`,
    `const noop = async () => null;`,
    `export const a = asset({ key: "bench/a", partitions: days }, noop);`,
    `export const b = asset({ key: "bench/b", partitions: days, deps: { a: dep(a) } }, noop);`,
    `export const c = asset({ key: "bench/c", partitions: days, deps: { b: dep(b) } }, noop);`,
  ].join("\n");
  return withApi(
    "runs",
    source,
    () => [],
    async (request, seeded, specs, db) => {
      const space = partitionSpace(specs.get("bench/a")!);
      const stores = benchStores(db);
      for (let i = 0; i < runs; i++)
        await launchRun(stores, { assetKeys: ["bench/a", "bench/b", "bench/c"], partition: space.keyAt(i) }, now);
      const claimed = await stores.runs.claimRunnable({ now, capacity: { local: runs }, limit: runs });
      const query = `{ runs(first: ${runs}) { id status steps { assetKey partitionKey state upstreamStepIds tries { tryNumber state queuedAt } } } }`;
      const { stats, data } = await measure(request, query, {}, Math.min(REQUESTS, 10));
      const page = data.runs as { steps: unknown[] }[];
      return {
        seeded: { ...seeded, runs, tries: claimed.length },
        runs: page.length,
        steps: page.reduce((n, r) => n + r.steps.length, 0),
        responseBytes: JSON.stringify(data).length,
        query: stats,
      };
    },
  );
}

async function main(): Promise<void> {
  const partitions = ONLY.has("partitions") ? await partitionsScenario() : undefined;
  const assets = ONLY.has("assets") ? await assetsScenario() : undefined;
  const erasure = ONLY.has("erasure") ? await erasureScenario() : undefined;
  const runs = ONLY.has("runs") ? await runsScenario() : undefined;
  printResult({ bench: "api", database: "postgres (local)", requests: REQUESTS, partitions, assets, erasure, runs });
}

await main();

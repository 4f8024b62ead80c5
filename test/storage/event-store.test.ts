import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { reportAssetEvent, type ReportEventServices } from "../../src/api/index.js";
import { AssetGraph } from "../../src/graph/index.js";
import { asset, daily, dynamicPartitions, staticPartitions } from "../../src/index.js";
import { PgEventStore, WAKE_CHANNEL, type GraphCache, type PgliteHandle } from "../../src/storage/index.js";
import { noop, snap } from "../graph/helpers.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";

const NOW = new Date("2025-03-12T12:00:00Z");

const graph = new AssetGraph([
  snap(asset({ key: "t/daily", partitions: daily({ start: "2025-01-01" }) }, noop), "t.ts"),
  snap(asset({ key: "t/plain" }, noop), "t.ts"),
  snap(asset({ key: "t/regions", partitions: staticPartitions(["eu", "us"]) }, noop), "t.ts"),
  snap(asset({ key: "t/customers", partitions: dynamicPartitions("customers") }, noop), "t.ts"),
]);
const graphs = { current: async () => ({ version: 1, graph, loadedAt: NOW }) } as unknown as GraphCache;

let handle: PgliteHandle;
let store: PgEventStore;
let services: ReportEventServices;

beforeAll(async () => {
  handle = await openTestPglite();
});
afterAll(async () => {
  await handle.close();
});
beforeEach(async () => {
  await resetDatabase(handle.db);
  store = new PgEventStore(handle.db);
  services = { graphs, events: store, definitions: { listDynamicPartitions: async (name) => (name === "customers" ? ["acme"] : []) } };
});

const status = (assetKey: string, partitionKey: string) =>
  handle.db
    .selectFrom("partition_status")
    .selectAll()
    .where("asset_key", "=", assetKey)
    .where("partition_key", "=", partitionKey)
    .executeTakeFirst();
const eventCount = async () => Number((await sql<{ n: string }>`select count(*) as n from events`.execute(handle.db)).rows[0]!.n);

describe("PgEventStore", () => {
  it("stores events in input order and marks each partition materialised by its latest event", async () => {
    const ids = await store.reportEvents(
      [
        { assetKey: "t/daily", partitionKey: "2025-03-01", kind: "external", metadata: { rows: 3 } },
        { assetKey: "t/daily", partitionKey: "2025-03-02", kind: "observation", metadata: {}, dataVersion: "v9" },
        { assetKey: "t/daily", partitionKey: "2025-03-01", kind: "external", metadata: { rows: 4 } },
      ],
      NOW,
    );
    expect(ids).toHaveLength(3);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const s1 = await status("t/daily", "2025-03-01");
    expect(s1).toMatchObject({ status: "materialized", last_run_id: null, last_step_id: null });
    expect(Number(s1?.last_materialization_event_id)).toBe(ids[2]);
    expect(s1?.materialized_at?.toISOString()).toBe(NOW.toISOString());
    const s2 = await status("t/daily", "2025-03-02");
    expect(Number(s2?.last_materialization_event_id)).toBe(ids[1]);
    expect(s2?.data_version).toBe("v9");

    const newest = await store.listEvents({ assetKey: "t/daily", limit: 2 });
    expect(newest.map((e) => e.id)).toEqual([ids[2], ids[1]]);
    expect(newest[0]).toMatchObject({ kind: "external", partitionKey: "2025-03-01", metadata: { rows: 4 }, runId: null, stepId: null });
    const after = await store.listEvents({ afterId: ids[0]!, limit: 10 });
    expect(after.map((e) => e.id)).toEqual([ids[1], ids[2]]);
  });

  it("keeps the run of an earlier materialisation but drops its step (its output is no longer the value)", async () => {
    const runId = "00000000-0000-4000-8000-000000000001";
    await sql`insert into partition_status (asset_key, partition_key, status, last_run_id, last_step_id, last_materialization_event_id, code_version)
              values ('t/daily', '2025-03-03', 'failed', ${runId}, 77, 5, 'c1')`.execute(handle.db);
    const [id] = await store.reportEvents([{ assetKey: "t/daily", partitionKey: "2025-03-03", kind: "external", metadata: {} }], NOW);
    const s = await status("t/daily", "2025-03-03");
    expect(s).toMatchObject({ status: "materialized", last_run_id: runId, last_step_id: null, code_version: null });
    expect(Number(s?.last_materialization_event_id)).toBe(id);
  });

  it("wakes the reconciler when the events commit", async () => {
    const got: string[] = [];
    const unlisten = await handle.listen(WAKE_CHANNEL, (payload) => got.push(payload));
    try {
      await store.reportEvents([{ assetKey: "t/plain", partitionKey: "", kind: "external", metadata: {} }], NOW);
      await expect.poll(() => got).toContain("event");
    } finally {
      await unlisten();
    }
  });

  it("stores and echoes SQL-injection-shaped strings verbatim", async () => {
    const evil = `x'); drop table events; --`;
    const [id] = await store.reportEvents(
      [{ assetKey: "t/plain", partitionKey: "", kind: "external", metadata: { [evil]: evil, nested: { q: `"'\\` } }, dataVersion: evil }],
      NOW,
    );
    const [e] = await store.listEvents({ assetKey: "t/plain", limit: 1 });
    expect(e).toMatchObject({ id, dataVersion: evil, metadata: { [evil]: evil, nested: { q: `"'\\` } } });
    expect(await store.listEvents({ assetKey: evil, limit: 5 })).toEqual([]);
  });
});

describe("reportAssetEvent", () => {
  it("records an event for an existing partition, an unpartitioned asset, a static and a dynamic key", async () => {
    const a = await reportAssetEvent(services, { assetKey: "t/daily", partition: "2025-03-11", metadata: { rows: 3 } }, NOW);
    expect(a).toMatchObject({ assetKey: "t/daily", partitionKey: "2025-03-11", kind: "external", createdAt: NOW });
    expect(Number((await status("t/daily", "2025-03-11"))?.last_materialization_event_id)).toBe(a.eventId);
    expect((await reportAssetEvent(services, { assetKey: "t/plain" }, NOW)).partitionKey).toBe("");
    await reportAssetEvent(services, { assetKey: "t/regions", partition: "eu" }, NOW);
    await reportAssetEvent(services, { assetKey: "t/customers", partition: "acme", kind: "observation" }, NOW);
    expect(await eventCount()).toBe(4);
  });

  it.each([
    [{ assetKey: "t/dialy", partition: "2025-03-01" }, "GRAPH_UNKNOWN_ASSET", /no asset has the key "t\/dialy"; did you mean "t\/daily"\?/],
    [{ assetKey: "t/daily" }, "EVENT_PARTITION_REQUIRED", /"t\/daily" is partitioned/],
    [{ assetKey: "t/daily", partition: "2025-02-30" }, "EVENT_PARTITION_INVALID", /"t\/daily".*"2025-02-30" is not a partition of daily/],
    [
      { assetKey: "t/daily", partition: "2025-03-12" },
      "EVENT_PARTITION_NOT_EXISTING",
      /partition "2025-03-12" does not exist yet \(its window ends 2025-03-13/,
    ],
    [{ assetKey: "t/plain", partition: "2025-03-01" }, "EVENT_PARTITION_UNEXPECTED", /"t\/plain" is not partitioned/],
    [{ assetKey: "t/regions", partition: "apac" }, "EVENT_PARTITION_INVALID", /"apac"/],
    [{ assetKey: "t/customers", partition: "globex" }, "EVENT_PARTITION_INVALID", /"globex"/],
    [{ assetKey: "t/plain", metadata: [1, 2] }, "EVENT_METADATA_INVALID", /"t\/plain".*metadata must be a JSON object, got an array/],
    [{ assetKey: "t/plain", metadata: "rows=3" }, "EVENT_METADATA_INVALID", /got a string/],
    [{ assetKey: "t/plain", metadata: { blob: "x".repeat(70_000) } }, "EVENT_METADATA_TOO_LARGE", /"t\/plain".*over the 65536-byte limit/],
    [{ assetKey: "t/daily", partition: `2025-03-01'; delete from events; --` }, "EVENT_PARTITION_INVALID", /delete from events/],
  ])("rejects bad input #%# with its code and writes nothing", async (request, code, message) => {
    await expect(reportAssetEvent(services, request, NOW)).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
    expect(await eventCount()).toBe(0);
    expect(Number((await sql<{ n: string }>`select count(*) as n from partition_status`.execute(handle.db)).rows[0]!.n)).toBe(0);
  });
});

describe("GraphQL reportAssetEvent", () => {
  it("returns the event, and errors without writing for bad input", async () => {
    const { createApiApp } = await import("../../src/api/index.js");
    const context = {
      assets: { reportEvent: (request: Parameters<typeof reportAssetEvent>[1]) => reportAssetEvent(services, request, NOW) },
    };
    const app = createApiApp({ context: context as never, ping: async () => {}, version: "test" });
    const query = `mutation ($input: ReportAssetEventInput!) { reportAssetEvent(input: $input) { eventId assetKey partitionKey createdAt } }`;
    const post = async (input: unknown) =>
      (await (
        await app.request("/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query, variables: { input } }),
        })
      ).json()) as { data?: { reportAssetEvent: unknown }; errors?: { message: string; extensions?: { code?: string } }[] };
    const ok = await post({ assetKey: "t/daily", partition: "2025-03-01", metadata: { rows: 1 } });
    expect(ok.errors).toBeUndefined();
    expect(ok.data?.reportAssetEvent).toMatchObject({ assetKey: "t/daily", partitionKey: "2025-03-01", createdAt: NOW.toISOString() });
    const outside = (await post({ assetKey: "t/daily", partition: "2099-01-01" })).errors;
    expect(outside).toHaveLength(1);
    expect(outside?.[0]?.extensions?.code, JSON.stringify(outside)).toBe("EVENT_PARTITION_NOT_EXISTING");
    const empty = (await post({ assetKey: "", kind: "wipe" })).errors;
    expect(empty).toHaveLength(1);
    expect(empty?.[0]?.extensions?.code, JSON.stringify(empty)).toBe("INPUT_INVALID");
    expect(await eventCount()).toBe(1);
  });
});

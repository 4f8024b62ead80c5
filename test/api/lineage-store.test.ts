// PgLineageStore on both engines (server Postgres and PGlite), on a small
// hand-made lineage: a diamond, an unrecorded upstream, an external source
// event, and a partition whose older materialisation read the source but
// whose latest one did not.
import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgLineageStore, type Database, type LineageStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { openTestPglite } from "../support/pglite.js";

const RUN = "00000000-0000-4000-8000-000000000001";

//   src@p1 (external, 1) ─► a@p1 (2) ─► b@p1 (3) ─► c (4) ◄─ ghost@x (never recorded)
//            └──────────────────────────┘
//   src@p1 ─► a@p2 (5, replaced)     src@p2 (none) ─► a@p2 (6, latest)
async function seed(db: Kysely<Database>): Promise<void> {
  await sql`
    insert into events (id, kind, asset_key, partition_key, run_id, step_id, try_number, data_version) values
      (1, 'external', 'src', 'p1', null, null, null, 'v-src'),
      (2, 'materialization', 'a', 'p1', ${RUN}, 12, 1, 'v-a1'),
      (3, 'materialization', 'b', 'p1', ${RUN}, 13, 2, 'v-b1'),
      (4, 'materialization', 'c', '', ${RUN}, 14, 1, 'v-c'),
      (5, 'materialization', 'a', 'p2', ${RUN}, 15, 1, 'v-a2-old'),
      (6, 'materialization', 'a', 'p2', ${RUN}, 16, 1, 'v-a2'),
      (7, 'failure', 'c', '', ${RUN}, 17, 1, null)`.execute(db);
  await sql`
    insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id) values
      (2, 'src', 'p1', 1), (3, 'a', 'p1', 2), (3, 'src', 'p1', 1), (4, 'b', 'p1', 3), (4, 'ghost', 'x', null),
      (5, 'src', 'p1', 1), (6, 'src', 'p2', null)`.execute(db);
  await sql`
    insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, data_version) values
      ('src', 'p1', 'materialized', 1, 'v-src'), ('a', 'p1', 'materialized', 2, 'v-a1'), ('b', 'p1', 'materialized', 3, 'v-b1'),
      ('c', '', 'failed', 4, 'v-c'), ('a', 'p2', 'materialized', 6, 'v-a2')`.execute(db);
  await sql`
    insert into outputs (asset_key, partition_key, run_id, step_id, try_number, size_bytes, inline_value, storage_ref) values
      ('a', 'p1', ${RUN}, 12, 1, 10, '{"n":1}', null),
      ('b', 'p1', ${RUN}, 13, 1, 90000, null, 's3://bucket/b/first-try'),
      ('b', 'p1', ${RUN}, 13, 2, 90001, null, 's3://bucket/b/p1'),
      ('c', '', ${RUN}, 14, 1, 5, '"c"', null)`.execute(db);
}

function lineageStoreSuite(store: () => LineageStore): void {
  it("walks upstream to a depth, each event once at its shortest depth, with unrecorded inputs as edges", async () => {
    const all = await store().runLineage({ assetKey: "c", partitionKey: "", direction: "upstream", depth: 5, limit: 100 });
    expect(all.truncated).toBe(false);
    expect(all.start).toMatchObject({
      eventId: 4,
      kind: "materialization",
      runId: RUN,
      stepId: 14,
      tryNumber: 1,
      dataVersion: "v-c",
      depth: 0,
    });
    expect(all.events.map((e) => [e.eventId, e.depth])).toEqual([
      [4, 0],
      [3, 1],
      [1, 2],
      [2, 2],
    ]);
    expect(all.edges.map((e) => [e.eventId, e.upstreamAssetKey, e.upstreamPartitionKey, e.upstreamEventId])).toEqual([
      [2, "src", "p1", 1],
      [3, "a", "p1", 2],
      [3, "src", "p1", 1],
      [4, "b", "p1", 3],
      [4, "ghost", "x", null],
    ]);
    const one = await store().runLineage({ assetKey: "c", partitionKey: "", direction: "upstream", depth: 1, limit: 100 });
    expect(one.events.map((e) => e.eventId)).toEqual([4, 3]);
    expect(one.edges.map((e) => e.upstreamAssetKey)).toEqual(["b", "ghost"]);
  });

  it("walks downstream from the latest event, readers of replaced versions included", async () => {
    const down = await store().runLineage({ assetKey: "src", partitionKey: "p1", direction: "downstream", depth: 3, limit: 100 });
    expect(down.start).toMatchObject({ eventId: 1, kind: "external", runId: null, stepId: null });
    expect(down.events.map((e) => [e.eventId, e.depth])).toEqual([
      [1, 0],
      [2, 1],
      [3, 1],
      [5, 1],
      [4, 2],
    ]);
    expect(down.edges).toHaveLength(5);
  });

  it("answers an empty walk for a partition without events, and cuts a walk past the limit", async () => {
    expect(await store().runLineage({ assetKey: "src", partitionKey: "p2", direction: "downstream", depth: 3, limit: 100 })).toEqual({
      start: null,
      events: [],
      edges: [],
      truncated: false,
    });
    const cut = await store().runLineage({ assetKey: "c", partitionKey: "", direction: "upstream", depth: 5, limit: 2 });
    expect(cut.truncated).toBe(true);
    expect(cut.events).toHaveLength(2);
  });

  it("closes over partitions whose latest materialisation read the sources, with what wrote them and where it is stored", async () => {
    const impact = await store().erasureImpact({ assetKey: "src", partitionKeys: ["p1"], limit: 100 });
    expect(impact.truncated).toBe(false);
    expect(impact.sources).toEqual([
      expect.objectContaining({ assetKey: "src", partitionKey: "p1", eventId: 1, eventKind: "external", runId: null, output: null }),
    ]);
    // a@p2 is not there: its latest materialisation (6) read src@p2, not p1.
    expect(impact.impacted.map((p) => `${p.assetKey}@${p.partitionKey}`)).toEqual(["a@p1", "b@p1", "c@"]);
    const [a, b, c] = impact.impacted;
    expect(a).toMatchObject({
      eventId: 2,
      runId: RUN,
      stepId: 12,
      tryNumber: 1,
      dataVersion: "v-a1",
      output: { inline: true, storageRef: null, sizeBytes: 10 },
    });
    // The output of the try that made the event, not the first try's.
    expect(b).toMatchObject({ eventId: 3, tryNumber: 2, output: { inline: false, storageRef: "s3://bucket/b/p1", sizeBytes: 90001 } });
    // A failed later run leaves the last materialisation's data in place: still impacted.
    expect(c).toMatchObject({ eventId: 4, output: { inline: true } });
  });

  it("keeps unknown source partitions as sources without events, and cuts past the limit", async () => {
    const none = await store().erasureImpact({ assetKey: "src", partitionKeys: ["p9", "p1"], limit: 100 });
    expect(none.sources.map((s) => [s.partitionKey, s.eventId])).toEqual([
      ["p9", null],
      ["p1", 1],
    ]);
    const cut = await store().erasureImpact({ assetKey: "src", partitionKeys: ["p1"], limit: 2 });
    expect(cut).toMatchObject({ truncated: true });
    expect(cut.impacted).toHaveLength(2);
  });
}

describePostgres("PgLineageStore on Postgres", () => {
  const database = useTestDatabase();
  beforeAll(() => seed(database.db));
  lineageStoreSuite(() => new PgLineageStore(database.db));
});

describe("PgLineageStore on PGlite", () => {
  let handle: Awaited<ReturnType<typeof openTestPglite>> | undefined;
  beforeAll(async () => {
    handle = await openTestPglite();
    await seed(handle.db);
  }, 60_000);
  afterAll(() => handle?.close());
  lineageStoreSuite(() => new PgLineageStore(handle!.db));
});

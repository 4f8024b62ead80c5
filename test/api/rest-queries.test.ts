import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgAirflowQueryStore, type PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";

// The REST API's reads on the embedded database (PGlite): the same SQL as on Postgres (rest-airflow.test.ts).
describe("PgAirflowQueryStore on PGlite", () => {
  let handle: PgliteHandle;
  let store: PgAirflowQueryStore;
  const runIds = ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"];

  beforeAll(async () => {
    handle = await openTestPglite();
    store = new PgAirflowQueryStore(handle.db);
    const db = handle.db;
    for (const [i, id] of runIds.entries()) {
      await sql`insert into runs (id, status, origin, snapshot_version, plan, created_at)
                values (${id}::uuid, 'running', 'manual', 1, '{}', ${new Date(Date.UTC(2025, 0, 1 + i))})`.execute(db);
    }
    // Run 1: a/2025-01-02 and a/2025-01-01 (succeeded, with an output); run 2: only b; run 3: a.
    await sql`insert into steps (run_id, asset_key, partition_key, state, pool, pool_slots) values
      (${runIds[0]}::uuid, 'a', '2025-01-02', 'running', 'warehouse', 2),
      (${runIds[0]}::uuid, 'a', '2025-01-01', 'success', 'warehouse', 1),
      (${runIds[1]}::uuid, 'b', '', 'scheduled', 'default_pool', 1),
      (${runIds[2]}::uuid, 'a', '2025-01-03', 'deferred', 'warehouse', 1)`.execute(db);
    await sql`insert into outputs (asset_key, partition_key, run_id, step_id, try_number, size_bytes, inline_value)
      select asset_key, partition_key, run_id, id, 1, 2, '1' from steps where state = 'success'`.execute(db);
  }, 60_000);
  afterAll(async () => {
    await handle?.close();
  });

  it("pages the runs of a set of assets, newest first, with their partition span and the total", async () => {
    const all = await store.listRunsOfAssets(["a"], { limit: 10, offset: 0 });
    expect(all.total).toBe(2);
    expect(all.rows.map((r) => [r.id, r.firstPartitionKey, r.lastPartitionKey])).toEqual([
      [runIds[2], "2025-01-03", "2025-01-03"],
      [runIds[0], "2025-01-01", "2025-01-02"],
    ]);
    expect((await store.listRunsOfAssets(["a", "b"], { limit: 1, offset: 1 })).rows.map((r) => r.id)).toEqual([runIds[1]]);
    expect(await store.listRunsOfAssets([], { limit: 1, offset: 0 })).toEqual({ rows: [], total: 0 });
  });

  it("filters the runs in SQL: status, first partition key (range or list), run times; the total counts the filtered runs", async () => {
    await sql`update runs set status = 'success', started_at = created_at, ended_at = created_at + interval '1 hour' where id = ${runIds[2]}::uuid`.execute(
      handle.db,
    );
    const ids = async (filter: Parameters<PgAirflowQueryStore["listRunsOfAssets"]>[2]) => {
      const { rows, total } = await store.listRunsOfAssets(["a"], { limit: 10, offset: 0 }, filter);
      expect(total).toBe(rows.length);
      return rows.map((r) => r.id);
    };
    expect(await ids({ statuses: ["success"] })).toEqual([runIds[2]]);
    expect(await ids({ statuses: [] })).toEqual([]);
    // Run 1's first key is 2025-01-01 (its other step has 2025-01-02).
    expect(await ids({ firstKeyRange: { gte: "2025-01-02" } })).toEqual([runIds[2]]);
    expect(await ids({ firstKeyRange: { lte: "2025-01-01" } })).toEqual([runIds[0]]);
    expect(await ids({ firstKeyIn: ["2025-01-02", "2025-01-03"] })).toEqual([runIds[2]]);
    expect(await ids({ createdAt: { gte: new Date(Date.UTC(2025, 0, 2)) } })).toEqual([runIds[2]]);
    expect(await ids({ startedAt: { lte: new Date(Date.UTC(2025, 0, 5)) }, endedAt: { gte: new Date(Date.UTC(2025, 0, 3, 1)) } })).toEqual([
      runIds[2],
    ]);
    expect(await ids({ updatedAt: { lte: new Date(Date.UTC(2000, 0, 1)) } })).toEqual([]);
    const page = await store.listRunsOfAssets(["a", "b"], { limit: 1, offset: 0 }, { statuses: ["running"] });
    expect({ ids: page.rows.map((r) => r.id), total: page.total }).toEqual({ ids: [runIds[1]], total: 2 });
  });

  it("tells each partition's latest run and the steps' queue, executor and pool slots", async () => {
    const latest = await store.latestRunsOfPartitions([
      { assetKey: "a", partitionKey: "2025-01-01" },
      { assetKey: "b", partitionKey: "" },
      { assetKey: "a", partitionKey: "2030-01-01" },
    ]);
    expect(latest).toEqual([
      { assetKey: "a", partitionKey: "2025-01-01", runId: runIds[0] },
      { assetKey: "b", partitionKey: "", runId: runIds[1] },
    ]);
    const ids = (await sql<{ id: number }>`select id from steps order by id`.execute(handle.db)).rows.map((r) => Number(r.id));
    const attrs = await store.stepAttributes(ids.slice(0, 1));
    expect(attrs).toEqual([{ stepId: ids[0], queue: null, executor: "local", poolSlots: 2, updatedAt: expect.any(Date) }]);
  });

  it("lists the outputs of steps and refuses pages out of range, naming the field", async () => {
    const ids = (await sql<{ id: number }>`select id from steps order by id`.execute(handle.db)).rows.map((r) => r.id);
    expect((await store.stepOutputs(ids)).map((o) => [o.stepId, o.tryNumber, o.sizeBytes])).toEqual([[ids[1], 1, 2]]);
    await expect(store.listRunsOfAssets(["a"], { limit: 0, offset: 0 })).rejects.toMatchObject({
      code: "INPUT_INVALID",
      message: expect.stringContaining("limit"),
    });
    await expect(store.listRunsOfAssets(["a"], { limit: 1, offset: -1 })).rejects.toMatchObject({
      code: "INPUT_INVALID",
      message: expect.stringContaining("offset"),
    });
  });
});

// An erased partition (its data removed by an erasure request, waiting to be materialised again): reported `erased`
// whatever staleness its kept record would otherwise show, `materializing` while a step for it is unfinished, and
// `materialized` again once a step writes it.
import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { PgPartitionStatusStore } from "../../src/storage/index.js";
import { upsertPartitionStatus } from "../../src/storage/runs/partition-status.js";
import { chainSource, storeDefinitions } from "../api/graphql-fixture.js";
import { apiServicesOn } from "../support/api-services.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";

// chain/a001 reads chain/a000 (daily from 2025-01-01): the definitions the GraphQL case loads.
const UP = "chain/a000";
const DOWN = "chain/a001";
const day = (d: number) => `2025-01-0${d}`;

describePostgres("partition status: erased partitions", () => {
  const database = useTestDatabase();
  let store: PgPartitionStatusStore;
  beforeEach(async () => {
    store = new PgPartitionStatusStore(database.db);
    await sql`truncate partition_status, event_inputs, events, steps, runs cascade`.execute(database.db);
  });

  /** A materialisation of `assetKey`'s partition `d` that read the given upstream partitions at their latest events. */
  const materialize = async (assetKey: string, d: number, options: { codeVersion?: string; reads?: string[] } = {}) => {
    const { rows } = await sql<{ id: string }>`
      insert into events (kind, asset_key, partition_key, code_version)
      values ('materialization', ${assetKey}, ${day(d)}, ${options.codeVersion ?? null}) returning id`.execute(database.db);
    const id = Number(rows[0]!.id);
    for (const upstream of options.reads ?? []) {
      await sql`
        insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
        select ${id}, ${upstream}, ${day(d)},
               (select last_materialization_event_id from partition_status where asset_key = ${upstream} and partition_key = ${day(d)})`.execute(
        database.db,
      );
    }
    await sql`
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version)
      values (${assetKey}, ${day(d)}, 'materialized', ${id}, ${options.codeVersion ?? null})
      on conflict (asset_key, partition_key) do update set status = 'materialized',
        last_materialization_event_id = excluded.last_materialization_event_id, code_version = excluded.code_version`.execute(database.db);
    return id;
  };
  /** What an erasure does to a partition's record: its status, nothing else. */
  const erase = (assetKey: string, ...days: number[]) =>
    sql`update partition_status set status = 'erased' where asset_key = ${assetKey} and partition_key = any(${days.map(day)}::text[])`.execute(
      database.db,
    );
  const statuses = async (asset: { assetKey: string; codeVersion: string | null }, days: number[]) =>
    [...(await store.partitionStates(asset, days.map(day))).values()].map((s) => s.status);
  const sorted = (keys: readonly string[] | undefined) => [...(keys ?? [])].sort();

  it("reports an erased partition erased, never stale nor materialized, even when an upstream is newer", async () => {
    for (const d of [1, 2]) await materialize(UP, d);
    const kept = await materialize(DOWN, 1, { codeVersion: "v1", reads: [UP] });
    await materialize(DOWN, 2, { codeVersion: "v1", reads: [UP] });
    await materialize(DOWN, 3, { codeVersion: "v1" });
    await erase(DOWN, 1, 3);
    // Day 1's upstream is materialised again: its reader would be stale, but its data is gone.
    await materialize(UP, 1);
    const down = { assetKey: DOWN, codeVersion: "v1" };

    expect(await statuses(down, [1, 2, 3, 4])).toEqual(["erased", "materialized", "erased", "missing"]);
    expect((await store.partitionStates(down, [day(1)])).get(day(1))).toMatchObject({
      status: "erased",
      staleReasons: [],
      moreStaleUpstreams: false,
      lastMaterializationEventId: kept,
    });
    expect((await store.countByStatus([down])).get(DOWN)).toEqual({
      materializing: 0,
      materialized: 1,
      failed: 0,
      stale: 0,
      timed_out: 0,
      erased: 2,
    });
    const keys = await store.keysByStatus(down);
    expect(sorted(keys.get("erased"))).toEqual([day(1), day(3)]);
    expect(keys.get("stale")).toBeUndefined();
    expect((await store.staleKeys([down])).get(DOWN)).toEqual([]);
    const read = (await store.recordedStatusOfMany([down])).get(DOWN)!;
    expect(read.materializing).toEqual([]);
    expect(sorted(read.recorded!.keys.get("erased"))).toEqual([day(1), day(3)]);
    expect(read.recorded!.keys.get("stale")).toBeUndefined();

    // A new code version makes the materialised partition stale; the erased ones stay erased.
    const v2 = { assetKey: DOWN, codeVersion: "v2" };
    expect(await statuses(v2, [1, 2, 3])).toEqual(["erased", "stale", "erased"]);
    expect((await store.countByStatus([v2])).get(DOWN)).toMatchObject({ stale: 1, materialized: 0, erased: 2 });
  });

  it("reports an erased partition materializing while a step for it is unfinished, erased again once it ends without writing", async () => {
    await materialize(DOWN, 1, { codeVersion: "v1" });
    await materialize(DOWN, 2, { codeVersion: "v1" });
    await erase(DOWN, 1, 2);
    const { rows } = await sql<{ id: string }>`
      insert into runs (status, origin, snapshot_version, plan) values ('running', 'manual', 1, '{}') returning id`.execute(database.db);
    await sql`insert into steps (run_id, asset_key, partition_key, state) values (${rows[0]!.id}, ${DOWN}, ${day(1)}, 'queued')`.execute(
      database.db,
    );
    const down = { assetKey: DOWN, codeVersion: "v1" };

    expect(await statuses(down, [1, 2])).toEqual(["materializing", "erased"]);
    expect((await store.countByStatus([down])).get(DOWN)).toMatchObject({ materializing: 1, erased: 1, materialized: 0 });
    const keys = await store.keysByStatus(down);
    expect(keys.get("materializing")).toEqual([day(1)]);
    expect(keys.get("erased")).toEqual([day(2)]);
    // Recorded statuses leave unfinished steps to the caller, who lays materializing over them.
    const read = (await store.recordedStatusOfMany([down])).get(DOWN)!;
    expect(read.materializing).toEqual([day(1)]);
    expect(sorted(read.recorded!.keys.get("erased"))).toEqual([day(1), day(2)]);

    await sql`update runs set status = 'failed'`.execute(database.db);
    expect(await statuses(down, [1, 2])).toEqual(["erased", "erased"]);
  });

  it("a successful step overwrites erased with materialized and its new event", async () => {
    await materialize(DOWN, 1, { codeVersion: "v1" });
    await erase(DOWN, 1);
    const { rows: runs } = await sql<{ id: string }>`
      insert into runs (status, origin, snapshot_version, plan) values ('running', 'manual', 1, '{}') returning id`.execute(database.db);
    const runId = runs[0]!.id;
    const { rows: steps } = await sql<{ id: string }>`
      insert into steps (run_id, asset_key, partition_key, state) values (${runId}, ${DOWN}, ${day(1)}, 'success') returning id`.execute(
      database.db,
    );
    const { rows: events } = await sql<{ id: string }>`
      insert into events (kind, asset_key, partition_key, code_version) values ('materialization', ${DOWN}, ${day(1)}, 'v1') returning id`.execute(
      database.db,
    );
    const eventId = Number(events[0]!.id);
    const row = { asset_key: DOWN, partition_key: day(1), event_id: eventId, run_id: runId, step_id: Number(steps[0]!.id) };
    await database.db
      .transaction()
      .execute((trx) => upsertPartitionStatus(trx, [{ ...row, data_version: "d2", code_version: "v1" }], "materialized", new Date()));
    expect((await store.partitionStates({ assetKey: DOWN, codeVersion: "v1" }, [day(1)])).get(day(1))).toMatchObject({
      status: "materialized",
      lastMaterializationEventId: eventId,
      lastRunId: runId,
    });
  });

  it("through GraphQL: the PartitionStatus ERASED, counts { erased } and ranges", async () => {
    const removeDefinitions = await storeDefinitions(database.db, chainSource(2));
    try {
      const now = new Date("2025-01-06T12:00:00Z");
      const app = createApiApp({ context: { ...apiServicesOn(database.db), now: () => now }, ping: async () => {}, version: "test" });
      await materialize(UP, 2);
      await materialize(DOWN, 2, { reads: [UP] });
      await materialize(DOWN, 3);
      await erase(DOWN, 2);
      await materialize(UP, 2);
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          query: `{ asset(key: "${DOWN}") {
            partitionStatus { counts { missing materializing materialized failed stale timedOut erased total } ranges { status from to count } }
            partitions(first: 10) { nodes { key status staleReasons { kind } } }
          } }`,
        }),
      });
      const body = (await res.json()) as {
        errors?: unknown;
        data: {
          asset: {
            partitionStatus: { counts: Record<string, number>; ranges: { status: string; from: string; to: string; count: number }[] };
            partitions: { nodes: { key: string; status: string; staleReasons: unknown[] }[] };
          };
        };
      };
      expect(body.errors).toBeUndefined();
      const { partitionStatus, partitions } = body.data.asset;
      expect(partitionStatus.counts).toEqual({
        missing: 3,
        materializing: 0,
        materialized: 1,
        failed: 0,
        stale: 0,
        timedOut: 0,
        erased: 1,
        total: 5,
      });
      expect(partitionStatus.ranges.map((r) => `${r.status} ${r.from}–${r.to}`)).toEqual([
        `MISSING ${day(1)}–${day(1)}`,
        `ERASED ${day(2)}–${day(2)}`,
        `MATERIALIZED ${day(3)}–${day(3)}`,
        `MISSING ${day(4)}–${day(5)}`,
      ]);
      expect(partitions.nodes.find((n) => n.key === day(2))).toEqual({ key: day(2), status: "ERASED", staleReasons: [] });
    } finally {
      await removeDefinitions();
    }
  });
});

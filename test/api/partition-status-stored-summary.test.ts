// The database's copy of a large asset's folded statuses: a server that has not read the asset (a new process, another
// server) starts from it and brings it up to date by the change rows since, with the same answer as one derived from
// scratch; a copy that does not hold (another definition, another cluster, changes pruned since) is read in full.
import { sql, type Kysely } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import type { SnapshotAsset } from "../../src/graph/index.js";
import { asset, dep, hourly, type AssetDefinition } from "../../src/index.js";
import {
  PartitionStatusCache,
  partitionStatusSummary,
  STORED_SUMMARY_MIN_PARTITIONS,
  type PartitionStatusSummary,
} from "../../src/api/partition-status-summary.js";
import { PgPartitionStatusStore, type Database } from "../../src/storage/index.js";
import { prunePartitionStatusChanges } from "../../src/storage/runs/partition-status.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { useTestPglite } from "../support/pglite.js";

const noop = async () => null;
/** 1 416 hourly partitions (59 days): above the size whose statuses are kept in the database. */
const hours = hourly({ start: "2025-01-01T00:00", end: "2025-03-01T00:00" });
const SIZE = 59 * 24;
const upDef = asset({ key: "s/up", partitions: hours }, noop);
const downDef = (codeVersion: string) => asset({ key: "s/down", partitions: hours, codeVersion, deps: { up: dep(upDef) } }, noop);
const snapshot = (d: AssetDefinition): SnapshotAsset => ({ ...d.spec, file: "defs.ts", exportName: d.key.replace(/\W/g, "_") });
const down = snapshot(downDef("v1"));
const smallDef = asset({ key: "s/small", partitions: hourly({ start: "2025-01-01T00:00", end: "2025-01-02T00:00" }) }, noop);
const now = new Date(Date.UTC(2025, 2, 1));

/** Partition `i` of the space (the `i`-th hour of 2025). */
const key = (i: number) => new Date(Date.UTC(2025, 0, 1, i)).toISOString().slice(0, 16).replace("T", "-");

/** The suite on a database: `concurrent` where two sessions can hold transactions at once (not PGlite's one). */
function storedSummarySuite(database: { readonly db: Kysely<Database> }, concurrent: boolean): void {
  let store: PgPartitionStatusStore;
  /** Per read through a cache: whether the store read the asset in full, derived some partitions again, or neither. */
  let reads: string[];
  /** Per read through a cache: the assets whose copy was written. */
  let stored: string[];
  beforeEach(async () => {
    reads = [];
    stored = [];
    store = new PgPartitionStatusStore(database.db);
    await sql`truncate partition_status, partition_status_changes, partition_status_changes_pruned_assets, partition_status_summaries, event_inputs, events cascade`.execute(
      database.db,
    );
    await sql`insert into partition_status_changes_pruned (singleton, through_tx) values (true, 0)
              on conflict (singleton) do update set through_tx = 0`.execute(database.db);
  });

  /** A server's answer with its own cache (a new one: a server that has not read the asset yet). */
  const served = (a: SnapshotAsset, cache = new PartitionStatusCache()): Promise<PartitionStatusSummary> =>
    partitionStatusSummary(a, {
      withRanges: true,
      now,
      dynamicKeys: async () => [],
      cache,
      store: {
        recordedStatusOfMany: async (assets) => {
          const out = await store.recordedStatusOfMany(assets);
          for (const read of out.values())
            reads.push(read.recorded ? "keys" : read.changed!.size > 0 ? `changed ${read.changed!.size}` : "cached");
          return out;
        },
        storedSummaries: store.storedSummaries.bind(store),
        storeSummaries: async (summaries) => {
          stored.push(...summaries.map((s) => s.assetKey));
          await store.storeSummaries(summaries);
        },
      },
    });
  /** A new server's answer, checked against one derived from scratch (no cache, no copy). */
  const answer = async (a: SnapshotAsset, cache?: PartitionStatusCache): Promise<PartitionStatusSummary> => {
    const got = await served(a, cache);
    const scratch = await partitionStatusSummary(a, {
      withRanges: true,
      now,
      dynamicKeys: async () => [],
      store,
      counts: () => Promise.reject(new Error("ranges only")),
    });
    expect(got).toEqual(scratch);
    return got;
  };

  /** Materialisations of partitions `from`..`to` (included) of `assetKey` in one statement, reading `up`'s same partitions. */
  const materialize = async (assetKey: string, from: number, to: number, options: { codeVersion?: string; reads?: string } = {}) => {
    await sql`
      with e as (
        insert into events (kind, asset_key, partition_key, code_version)
        select 'materialization', ${assetKey}, to_char(timestamp '2025-01-01' + make_interval(hours => i), 'YYYY-MM-DD-HH24:MI'), ${options.codeVersion ?? null}
        from generate_series(${from}::int, ${to}::int) as i
        returning id, partition_key
      ), i as (
        insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
        select e.id, ${options.reads ?? null}, e.partition_key, up.last_materialization_event_id
        from e left join partition_status up on up.asset_key = ${options.reads ?? null} and up.partition_key = e.partition_key
        where ${options.reads ?? null}::text is not null
      )
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version)
      select ${assetKey}, partition_key, 'materialized', id, ${options.codeVersion ?? null} from e
      on conflict (asset_key, partition_key) do update set status = 'materialized',
        last_materialization_event_id = excluded.last_materialization_event_id, code_version = excluded.code_version`.execute(database.db);
  };
  const ranges = (s: PartitionStatusSummary) => s.ranges!.map((r) => `${r.status} ${r.count}`);
  /** Both assets materialised, the downstream reading the upstream; the first server's answer keeps a copy. */
  const seeded = async () => {
    await materialize("s/up", 0, SIZE - 1);
    await materialize("s/down", 0, 999, { codeVersion: "v1", reads: "s/up" });
    expect(ranges(await answer(down))).toEqual(["materialized 1000", `missing ${SIZE - 1000}`]);
    expect(reads).toEqual(["keys"]);
    expect(stored).toEqual(["s/down"]);
  };

  it("a server that has not read the asset starts from the copy the first one kept", async () => {
    expect(SIZE).toBeGreaterThanOrEqual(STORED_SUMMARY_MIN_PARTITIONS);
    await seeded();
    expect(ranges(await answer(down))).toEqual(["materialized 1000", `missing ${SIZE - 1000}`]);
    expect(reads).toEqual(["keys", "cached"]);
    // Nothing changed: the copy stays as it is.
    expect(stored).toEqual(["s/down"]);
  });

  it("the copy is brought up to date by what changed since: upstream partitions written again, failures, new partitions", async () => {
    await seeded();
    await materialize("s/up", 10, 19);
    await sql`update partition_status set status = 'failed' where asset_key = 's/down' and partition_key = ${key(500)}`.execute(
      database.db,
    );
    await materialize("s/down", 1000, 1004, { codeVersion: "v1", reads: "s/up" });
    expect(ranges(await answer(down))).toEqual([
      "materialized 10",
      "stale 10",
      "materialized 480",
      "failed 1",
      "materialized 504",
      `missing ${SIZE - 1005}`,
    ]);
    expect(reads).toEqual(["keys", "changed 16"]);
    // The copy is younger than its refresh age: not written again for one change.
    expect(stored).toEqual(["s/down"]);

    // Once it has aged, a server whose answer found changes writes it again, and the next server starts from there.
    await sql`update partition_status_summaries set updated_at = now() - interval '1 minute'`.execute(database.db);
    await materialize("s/up", 30, 30);
    const cache = new PartitionStatusCache();
    await answer(down, cache);
    expect(stored).toEqual(["s/down", "s/down"]);
    expect(ranges(await answer(down))).toEqual([
      "materialized 10",
      "stale 10",
      "materialized 10",
      "stale 1",
      "materialized 469",
      "failed 1",
      "materialized 504",
      `missing ${SIZE - 1005}`,
    ]);
    expect(reads).toEqual(["keys", "changed 16", "changed 17", "cached"]);
  });

  it("a copy of another definition or cluster, ahead of its transactions or older than pruned changes is read in full", async () => {
    await seeded();
    // Another code version: the asset is stale where it ran v1, read in full and kept again.
    const v2 = snapshot(downDef("v2"));
    expect(ranges(await answer(v2))).toEqual(["stale 1000", `missing ${SIZE - 1000}`]);
    expect(reads).toEqual(["keys", "keys"]);
    expect(stored).toEqual(["s/down", "s/down"]);
    // The copy now holds for v2 alone.
    await answer(down);
    expect(reads).toEqual(["keys", "keys", "keys"]);

    // A copy whose snapshot names another cluster's transactions (a restored dump): not used.
    await sql`update partition_status_summaries set system_identifier = '1'`.execute(database.db);
    await answer(down);
    expect(reads).toEqual(["keys", "keys", "keys", "keys"]);
    await answer(down);
    expect(reads.at(-1)).toBe("cached");
    // Nor one whose subsets do not parse: read in full and written again.
    await sql`update partition_status_summaries set subsets = '{"materialized": "10-2"}'::jsonb`.execute(database.db);
    await answer(down);
    await answer(down);
    expect(reads.slice(-3)).toEqual(["cached", "keys", "cached"]);
    // Nor one whose snapshot is ahead of this database's transactions (a cluster whose ids restarted lower).
    await sql`update partition_status_summaries set snapshot = '9000000000:9000000000:'`.execute(database.db);
    await answer(down);
    expect(reads.slice(-2)).toEqual(["cached", "keys"]);

    // Change rows pruned since the copy was taken: what they named cannot be found, so the asset is read in full.
    for (let i = 0; i < 10; i++) await materialize("s/up", i, i);
    expect(await prunePartitionStatusChanges(database.db, { minAgeMs: 0 })).toBeGreaterThan(0);
    expect(ranges(await answer(down))).toEqual(["stale 10", "materialized 990", `missing ${SIZE - 1000}`]);
    expect(reads.at(-1)).toBe("keys");
  });

  /** A test that holds a transaction open while another session reads: on a database that allows it. */
  const itConcurrent = (name: string, fn: () => Promise<void>) => {
    if (concurrent) it(name, fn);
  };

  itConcurrent("a write not yet committed when the copy is kept shows from the copy once it commits", async () => {
    await materialize("s/up", 0, SIZE - 1);
    await materialize("s/down", 0, 999, { codeVersion: "v1", reads: "s/up" });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let written!: () => void;
    const wasWritten = new Promise<void>((r) => (written = r));
    const writer = database.db.transaction().execute(async (trx) => {
      await sql`update partition_status set status = 'failed' where asset_key = 's/down' and partition_key = ${key(7)}`.execute(trx);
      written();
      await released;
    });
    await wasWritten;
    // Read in full and kept while the write is pending: the committed state only.
    expect(ranges(await answer(down))).toEqual(["materialized 1000", `missing ${SIZE - 1000}`]);
    expect(stored).toEqual(["s/down"]);
    release();
    await writer;
    // A new server starts from the copy, whose snapshot did not see the write: it finds it among the changes since.
    expect(ranges(await answer(down))).toEqual(["materialized 7", "failed 1", "materialized 992", `missing ${SIZE - 1000}`]);
    expect(reads).toEqual(["keys", "changed 1"]);
  });

  it("keeps no copy of a small asset", async () => {
    await materialize("s/small", 0, 5);
    await answer(snapshot(smallDef));
    await answer(snapshot(smallDef));
    expect(reads).toEqual(["keys", "keys"]);
    expect(stored).toEqual([]);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from partition_status_summaries`.execute(database.db);
    expect(rows[0]!.n).toBe(0);
  });
}

describePostgres("partition status ranges: the database's copy of a large asset's statuses (Postgres)", () => {
  storedSummarySuite(useTestDatabase(), true);
});

describe("partition status ranges: the database's copy of a large asset's statuses (PGlite)", () => {
  storedSummarySuite(useTestPglite(), false);
});

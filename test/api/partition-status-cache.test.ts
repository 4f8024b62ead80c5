// The cache of folded partition statuses behind Asset.partitionStatus.ranges: every write that changes a
// recorded status (of the asset, or of an upstream it read) is seen by the next answer, the unfinished
// steps are always read fresh, and a time space growing with `now` shows its new partitions.
import { sql, type KyselyPlugin } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { Catalog, createApiApp } from "../../src/api/index.js";
import type { SnapshotAsset } from "../../src/graph/index.js";
import { asset, dep, hourly, type AssetDefinition } from "../../src/index.js";
import { PartitionStatusCache, partitionStatusSummary, type PartitionStatusSummary } from "../../src/api/partition-status-summary.js";
import { GraphCache, PgDefinitionStore, PgPartitionStatusStore } from "../../src/storage/index.js";
import { PartitionSubset } from "../../src/partitions/index.js";
import { CHANGES_KEPT_PER_ASSET, prunePartitionStatusChanges } from "../../src/storage/runs/partition-status.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { chainSource, storeDefinitions } from "./graphql-fixture.js";

const noop = async () => null;
const hours = hourly({ start: "2025-01-01T00:00", end: "2025-01-02T00:00" });
const upDef = asset({ key: "c/up", partitions: hours }, noop);
const downDef = (codeVersion: string) => asset({ key: "c/down", partitions: hours, codeVersion, deps: { up: dep(upDef) } }, noop);
const snapshot = (d: AssetDefinition): SnapshotAsset => ({ ...d.spec, file: "defs.ts", exportName: d.key.replace(/\W/g, "_") });
const up = snapshot(upDef);
const down = snapshot(downDef("v1"));

/** 24 hourly partitions of 2025-01-01; at 06:00 the first six exist. */
const at = (hour: number) => new Date(Date.UTC(2025, 0, 1, hour));
const key = (hour: number) => `2025-01-01-${String(hour).padStart(2, "0")}:00`;

describePostgres("partition status ranges: the cache of folded statuses", () => {
  const database = useTestDatabase();
  let store: PgPartitionStatusStore;
  let cache: PartitionStatusCache;
  /** Per cached answer: whether the store read the keys again or the cache's still held. */
  let reads: ("keys" | "cached")[];
  beforeEach(async () => {
    reads = [];
    store = new PgPartitionStatusStore(database.db);
    cache = new PartitionStatusCache({ skipValidationMs: 0 });
    await sql`truncate partition_status, event_inputs, events, steps, runs cascade`.execute(database.db);
  });

  const summaryOf = (a: SnapshotAsset, now: Date, cached: boolean): Promise<PartitionStatusSummary> => {
    const base = { counts: () => Promise.reject(new Error("counts only")), withRanges: true, now, dynamicKeys: async () => [] };
    if (!cached) return partitionStatusSummary(a, { ...base, store });
    const recordedStatusOfMany: PgPartitionStatusStore["recordedStatusOfMany"] = async (assets) => {
      const out = await store.recordedStatusOfMany(assets);
      for (const read of out.values()) reads.push(read.recorded ? "keys" : "cached");
      return out;
    };
    return partitionStatusSummary(a, { ...base, store: { recordedStatusOfMany }, cache });
  };
  /** The cached answer, checked against an answer derived from scratch. */
  const summary = async (a: SnapshotAsset, now = at(6)): Promise<PartitionStatusSummary> => {
    const cached = await summaryOf(a, now, true);
    expect(cached).toEqual(await summaryOf(a, now, false));
    // Counts alone (what `assets { partitionStatus { counts } }` reads) come from the same fold: exact, where the
    // uncached aggregate also counts records of partitions that do not exist yet.
    const folded = await partitionStatusSummary(a, { withRanges: false, now, dynamicKeys: async () => [], store, cache });
    expect(folded).toEqual({ counts: cached.counts });
    return cached;
  };
  const ranges = async (a: SnapshotAsset, now?: Date) =>
    (await summary(a, now)).ranges!.map((r) => `${r.status} ${r.from.slice(11)}–${r.to.slice(11)}`);

  /** A materialisation of `asset`'s partition `hour` that read the given upstream partitions at their latest events. */
  const materialize = async (assetKey: string, hour: number, options: { codeVersion?: string; reads?: string[] } = {}) => {
    const { rows } = await sql<{ id: string }>`
      insert into events (kind, asset_key, partition_key, code_version) values ('materialization', ${assetKey}, ${key(hour)}, ${options.codeVersion ?? null})
      returning id`.execute(database.db);
    const id = Number(rows[0]!.id);
    for (const upstream of options.reads ?? []) {
      await sql`
        insert into event_inputs (event_id, upstream_asset_key, upstream_partition_key, upstream_event_id)
        select ${id}, ${upstream}, ${key(hour)},
               (select last_materialization_event_id from partition_status where asset_key = ${upstream} and partition_key = ${key(hour)})`.execute(
        database.db,
      );
    }
    await sql`
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version)
      values (${assetKey}, ${key(hour)}, 'materialized', ${id}, ${options.codeVersion ?? null})
      on conflict (asset_key, partition_key) do update set status = 'materialized', last_materialization_event_id = excluded.last_materialization_event_id,
        code_version = excluded.code_version`.execute(database.db);
  };
  const fail = (assetKey: string, hour: number) =>
    sql`update partition_status set status = 'failed' where asset_key = ${assetKey} and partition_key = ${key(hour)}`.execute(database.db);

  it("a new materialisation and a failure show at once; an unchanged asset is answered from the cache", async () => {
    for (const h of [0, 1, 2]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–02:00", "missing 03:00–05:00"]);
    expect(cache.size).toBe(1);

    await materialize("c/up", 3);
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    // A failure keeps the partition's latest event: only its status changes.
    await fail("c/up", 1);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "failed 01:00–01:00", "materialized 02:00–03:00", "missing 04:00–05:00"]);

    // Each write above was followed by a fresh read; nothing changed since, so the cache answers.
    expect(reads).toEqual(["keys", "keys", "keys"]);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "failed 01:00–01:00", "materialized 02:00–03:00", "missing 04:00–05:00"]);
    expect(reads).toEqual(["keys", "keys", "keys", "cached"]);
  });

  it("while an asset is being written to, answers read its keys without validating first", async () => {
    cache = new PartitionStatusCache({ skipValidationMs: 60_000 });
    await materialize("c/up", 0);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    await materialize("c/up", 1);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    // The validation just failed: the next answers skip it (and are as exact).
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    expect(reads).toEqual(["keys", "cached", "keys", "keys"]);
  });

  it("an upstream materialised again makes the partitions that read it stale", async () => {
    for (const h of [0, 1, 2]) await materialize("c/up", h);
    for (const h of [0, 1, 2]) await materialize("c/down", h, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(down)).toEqual(["materialized 00:00–02:00", "missing 03:00–05:00"]);
    // Only c/up's rows change: the fingerprint covers the upstreams the asset's latest events read.
    await materialize("c/up", 1);
    expect(await ranges(down)).toEqual([
      "materialized 00:00–00:00",
      "stale 01:00–01:00",
      "materialized 02:00–02:00",
      "missing 03:00–05:00",
    ]);
    await materialize("c/down", 1, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(down)).toEqual(["materialized 00:00–02:00", "missing 03:00–05:00"]);
  });

  it("a new code version makes every partition materialised with another one stale", async () => {
    for (const h of [0, 1]) await materialize("c/down", h, { codeVersion: "v1" });
    expect(await ranges(down)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    expect(await ranges(snapshot(downDef("v2")))).toEqual(["stale 00:00–01:00", "missing 02:00–05:00"]);
    await materialize("c/down", 0, { codeVersion: "v2" });
    expect(await ranges(snapshot(downDef("v2")))).toEqual(["materialized 00:00–00:00", "stale 01:00–01:00", "missing 02:00–05:00"]);
    expect(await ranges(down)).toEqual(["stale 00:00–00:00", "materialized 01:00–01:00", "missing 02:00–05:00"]);
  });

  it("unfinished steps are read every time: materializing over a cached status", async () => {
    for (const h of [0, 1]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    const { rows } = await sql<{ id: string }>`
      insert into runs (status, origin, snapshot_version, plan) values ('running', 'manual', 1, '{}') returning id`.execute(database.db);
    const runId = rows[0]!.id;
    await sql`insert into steps (run_id, asset_key, partition_key, state) values (${runId}, 'c/up', ${key(1)}, 'running'), (${runId}, 'c/up', ${key(4)}, 'queued')`.execute(
      database.db,
    );
    expect(await ranges(up)).toEqual([
      "materialized 00:00–00:00",
      "materializing 01:00–01:00",
      "missing 02:00–03:00",
      "materializing 04:00–04:00",
      "missing 05:00–05:00",
    ]);
    expect((await summary(up)).counts).toEqual({
      missing: 3,
      materializing: 2,
      materialized: 1,
      failed: 0,
      stale: 0,
      timed_out: 0,
      erased: 0,
      total: 6,
    });
    await sql`update runs set status = 'success'`.execute(database.db);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
  });

  it("a time space growing with now shows its new partitions, recorded or not", async () => {
    // Hour 8 is recorded before it exists (say, reported early): it shows once it does.
    for (const h of [0, 8]) await materialize("c/up", h);
    expect(await ranges(up, at(6))).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    expect(await ranges(up, at(10))).toEqual([
      "materialized 00:00–00:00",
      "missing 01:00–07:00",
      "materialized 08:00–08:00",
      "missing 09:00–09:00",
    ]);
    expect((await summary(up, at(10))).counts.total).toBe(10);
  });

  it("a deleted status row shows at once, and a write that changes nothing is still a new version", async () => {
    for (const h of [0, 1]) await materialize("c/up", h);
    expect(await ranges(up)).toEqual(["materialized 00:00–01:00", "missing 02:00–05:00"]);
    await sql`delete from partition_status where asset_key = 'c/up' and partition_key = ${key(1)}`.execute(database.db);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    await sql`update partition_status set updated_at = now() where asset_key = 'c/up'`.execute(database.db);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    expect(reads).toEqual(["keys", "keys", "keys"]);
  });

  it("pruning the change rows keeps the newest of each asset and makes a cached answer read again, never stale", async () => {
    for (let round = 0; round < 3; round++) for (const h of [0, 1, 2, 3]) await materialize("c/up", h);
    await materialize("c/down", 0, { codeVersion: "v1", reads: ["c/up"] });
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    const changes = async () => {
      const { rows } = await sql<{ asset_key: string; n: number }>`
        select asset_key, count(*)::int as n from partition_status_changes group by asset_key order by asset_key`.execute(database.db);
      return Object.fromEntries(rows.map((r) => [r.asset_key, r.n]));
    };
    const before = await changes();
    expect(before["c/up"]).toBeGreaterThan(CHANGES_KEPT_PER_ASSET);

    // Two pruners at once: one prunes, the other skips.
    const pruned = await Promise.all([prunePartitionStatusChanges(database.db), prunePartitionStatusChanges(database.db)]);
    expect(pruned.reduce((a, b) => a + b)).toBe(before["c/up"]! - CHANGES_KEPT_PER_ASSET);
    expect(await changes()).toEqual({ ...before, "c/up": CHANGES_KEPT_PER_ASSET });
    expect(await prunePartitionStatusChanges(database.db)).toBe(0);

    // The pruned asset's version changed: read again, then cached; the unpruned one stays cached.
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    expect(await ranges(up)).toEqual(["materialized 00:00–03:00", "missing 04:00–05:00"]);
    expect(reads).toEqual(["keys", "cached", "keys", "cached"]);
  });

  it("a write not yet committed when the cache is filled shows once it commits", async () => {
    await materialize("c/up", 0);
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let written!: () => void;
    const wasWritten = new Promise<void>((r) => (written = r));
    const writer = database.db.transaction().execute(async (trx) => {
      await sql`insert into partition_status (asset_key, partition_key, status, last_materialization_event_id) values ('c/up', ${key(2)}, 'materialized', 1)`.execute(
        trx,
      );
      await sql`update partition_status set status = 'failed' where asset_key = 'c/up' and partition_key = ${key(0)}`.execute(trx);
      written();
      await released;
    });
    await wasWritten;
    // Read (and cached) while the write is pending: the committed state only.
    expect(await ranges(up)).toEqual(["materialized 00:00–00:00", "missing 01:00–05:00"]);
    release();
    await writer;
    expect(await ranges(up)).toEqual(["failed 00:00–00:00", "missing 01:00–01:00", "materialized 02:00–02:00", "missing 03:00–05:00"]);
  });

  it("through GraphQL: a server's requests share the cache, even with services built per request", async () => {
    const removeDefinitions = await storeDefinitions(database.db, chainSource(2));
    try {
      // Whether each statement read the keys again (the only one joining event_inputs) or only validated them.
      const statements: string[] = [];
      const plugin: KyselyPlugin = {
        transformQuery: (args) => {
          const text = JSON.stringify(args.node);
          if (text.includes("bit_xor")) statements.push(text.includes("event_inputs") ? "keys" : "validated");
          return args.node;
        },
        transformResult: async (args) => args.result,
      };
      const db = database.db.withPlugin(plugin);
      const definitions = new PgDefinitionStore(db);
      const catalog = new Catalog(new GraphCache(definitions, 0), definitions);
      const now = new Date("2025-01-06T12:00:00Z");
      const context = () => ({ ...apiServicesOn(db, { definitions, catalog }), now: () => now });
      // A new app (and services, and stores) per request: only the catalog is shared.
      const apps = () => createApiApp({ context: context(), ping: async () => {}, version: "test" });
      const ranges = async () => {
        const res = await apps().request("/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: `{ asset(key: "chain/a001") { partitionStatus { ranges { status from to count } } } }` }),
        });
        const body = (await res.json()) as {
          data: { asset: { partitionStatus: { ranges: { status: string; from: string; count: number }[] } } };
        };
        return body.data.asset.partitionStatus.ranges.map((r) => `${r.status} ${r.from} ${r.count}`);
      };
      await sql`
        insert into partition_status (asset_key, partition_key, status, last_materialization_event_id)
        values ('chain/a001', '2025-01-02', 'materialized', 1), ('chain/a001', '2025-01-03', 'failed', null)`.execute(database.db);
      expect(await ranges()).toEqual(["MISSING 2025-01-01 1", "MATERIALIZED 2025-01-02 1", "FAILED 2025-01-03 1", "MISSING 2025-01-04 2"]);
      expect(await ranges()).toEqual(["MISSING 2025-01-01 1", "MATERIALIZED 2025-01-02 1", "FAILED 2025-01-03 1", "MISSING 2025-01-04 2"]);
      await sql`update partition_status set status = 'failed' where asset_key = 'chain/a001' and partition_key = '2025-01-02'`.execute(
        database.db,
      );
      expect(await ranges()).toEqual(["MISSING 2025-01-01 1", "FAILED 2025-01-02 2", "MISSING 2025-01-04 2"]);
      expect(statements).toEqual(["keys", "validated", "validated", "keys"]);
    } finally {
      await removeDefinitions();
    }
  });
});

it("keeps the counts of many assets within its budget of ranges, dropping the least recently used", () => {
  const cache = new PartitionStatusCache({ maxRanges: 100 });
  const version = { fingerprint: "f", upstreamAssetKeys: [] };
  // 30 ranges of materialised partitions (every other index), then the entry itself: 31 each.
  const subsets = new Map([["materialized", PartitionSubset.fromIndices(Array.from({ length: 30 }, (_, i) => 2 * i))]] as const);
  for (const key of ["a", "b", "c"]) cache.fill(key, version, subsets);
  expect(cache.size).toBe(3);
  cache.lookup("a"); // now the most recently used
  cache.fill("d", version, subsets);
  expect(cache.size).toBe(3);
  expect(cache.lookup("b")).toBeUndefined();
  expect(cache.lookup("a")).toBeDefined();
  // An entry larger than the whole budget is still kept: it is what was just asked for.
  cache.fill("huge", version, new Map([["failed", PartitionSubset.fromIndices(Array.from({ length: 200 }, (_, i) => 2 * i))]] as const));
  expect(cache.size).toBe(1);
  expect(cache.lookup("huge")).toBeDefined();
});

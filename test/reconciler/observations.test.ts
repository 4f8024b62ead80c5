import { sql } from "kysely";
import { afterEach, beforeEach, expect, it } from "vitest";
import { AssetGraph, type SnapshotAsset } from "../../src/graph/index.js";
import { ObservationsTask } from "../../src/reconciler/index.js";
import {
  daily,
  fileExists,
  hourly,
  httpOk,
  multiPartitions,
  sourceAsset,
  staticPartitions,
  type AssetDefinition,
} from "../../src/index.js";
import {
  openPostgres,
  PgEventStore,
  PgObservationStore,
  recordObservationTimeoutsIn,
  type PostgresHandle,
} from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";

const NOW = new Date("2025-03-20T12:00:00Z");
const DAY = 86_400_000;

/** The snapshot form of definitions, as the loader stores them. */
const snapshotOf = (...defs: AssetDefinition[]): SnapshotAsset[] => defs.map((d) => ({ ...d.spec, file: "sources.ts", exportName: d.key }));

describePostgres("ObservationsTask: observation triggers for due source partitions", () => {
  const database = useTestDatabase();
  const extra: PostgresHandle[] = [];
  let graph: AssetGraph;

  beforeEach(async () => {
    await resetDatabase(database.db);
  });
  afterEach(async () => {
    for (const h of extra.splice(0)) await h.close();
  });

  const define = (...defs: AssetDefinition[]) => {
    graph = new AssetGraph(snapshotOf(...defs));
  };
  /** A task with its own connection, as each reconciler process has. */
  const task = async (options: { lookback?: number } = {}) => {
    const handle = await openPostgres({ kind: "postgres", url: database.url });
    extra.push(handle);
    return new ObservationsTask({
      store: new PgObservationStore(handle.db),
      graphs: { current: async () => ({ version: 1, graph, loadedAt: NOW }) },
      definitions: { listDynamicPartitions: async () => [] },
      ...options,
    });
  };
  const triggers = async (status = "waiting") =>
    (
      await sql<{
        asset_key: string;
        partition_key: string;
        kind: string;
        args: Record<string, unknown>;
        partition_window: unknown;
        poll_interval_ms: number;
        timeout_at: Date | null;
        step_id: number | null;
      }>`
        select asset_key, partition_key, kind, args, partition_window, poll_interval_ms, timeout_at, step_id
        from triggers where status = ${status} order by asset_key, partition_key`.execute(database.db)
    ).rows;

  const feed = sourceAsset({
    key: "partner/feed",
    partitions: daily({ start: "2025-03-01" }),
    observe: fileExists("/landing/{partition}.json"),
    pollInterval: "5m",
    timeout: "1d",
    owner: "team:partners",
  });

  it("creates a trigger for each due partition of the latest 14 windows, carrying key, window, poll interval and timeout", async () => {
    define(feed);
    await (await task()).run(NOW);
    const rows = await triggers();
    // Windows closed by 2025-03-20T12:00: 03-01 … 03-19; the latest 14 are 03-06 … 03-19 (03-20 is still open).
    expect(rows.map((r) => r.partition_key)).toEqual(Array.from({ length: 14 }, (_, i) => `2025-03-${String(6 + i).padStart(2, "0")}`));
    const last = rows.at(-1)!;
    expect(last).toMatchObject({
      asset_key: "partner/feed",
      kind: "fileExists",
      args: { path: "/landing/{partition}.json" },
      partition_window: { start: "2025-03-19T00:00:00Z", end: "2025-03-20T00:00:00Z" },
      poll_interval_ms: 300_000,
      step_id: null,
    });
    // Window end + 1 day; a window that ended longer ago is still checked for one poll interval first.
    expect(last.timeout_at?.toISOString()).toBe("2025-03-21T00:00:00.000Z");
    expect(rows[0]!.timeout_at?.toISOString()).toBe(new Date(NOW.getTime() + 300_000).toISOString());
  });

  it("is idempotent: two reconcilers at once, passes with nothing new, and a new window adds one trigger", async () => {
    define(feed);
    const [a, b] = [await task(), await task()];
    await Promise.all([a.run(NOW), b.run(NOW), a.run(NOW), b.run(NOW)]);
    expect(await triggers()).toHaveLength(14);
    // A fresh task (a restarted reconciler) ensures again: nothing new.
    await (await task()).run(NOW);
    expect(await triggers()).toHaveLength(14);
    // The next day closes: its window is due, and the oldest leaves the lookback: no longer observed.
    await Promise.all([a.run(new Date(NOW.getTime() + DAY)), b.run(new Date(NOW.getTime() + DAY))]);
    const keys = (await triggers()).map((r) => r.partition_key);
    expect(keys).toHaveLength(14);
    expect([keys[0], keys.at(-1)]).toEqual(["2025-03-07", "2025-03-20"]);
    expect((await triggers("canceled")).map((r) => r.partition_key)).toEqual(["2025-03-06"]);
  });

  it("ends the observations of a source that is removed or loses observe, and leaves deferred steps' triggers alone", async () => {
    define(feed, sourceAsset({ key: "partner/rates", observe: fileExists("/landing/rates.json") }));
    const t = await task();
    await t.run(NOW);
    expect(await triggers()).toHaveLength(15);
    await sql`
      insert into runs (id, status, origin, snapshot_version, plan) values ('00000000-0000-0000-0000-000000000001', 'running', 'manual', 1, '{}');
      insert into steps (id, run_id, asset_key, state) values (1, '00000000-0000-0000-0000-000000000001', 'partner/report', 'deferred');
      insert into triggers (kind, args, step_id) values ('fileExists', '{"path":"/x"}', 1);`.execute(database.db);
    define(
      sourceAsset({ key: "partner/feed", partitions: daily({ start: "2025-03-01" }) }),
      sourceAsset({ key: "partner/rates", observe: fileExists("/landing/rates.json") }),
    );
    await t.run(NOW);
    const waiting = await triggers();
    expect(waiting.map((r) => [r.asset_key, r.partition_key, r.step_id])).toEqual([
      ["partner/rates", "", null],
      [null, null, 1],
    ]);
    expect(await triggers("canceled")).toHaveLength(14);
  });

  it("skips partitions already observed or timed out, and an identical trigger that failed for good", async () => {
    define(feed);
    await new PgEventStore(database.db).reportEvents(
      [{ assetKey: "partner/feed", partitionKey: "2025-03-19", kind: "observation", metadata: {} }],
      NOW,
    );
    await database.db
      .transaction()
      .execute((trx) => recordObservationTimeoutsIn(trx, [{ triggerId: 0, assetKey: "partner/feed", partitionKey: "2025-03-18" }], NOW));
    await sql`
      insert into triggers (kind, args, asset_key, partition_key, status, ended_at)
      values ('fileExists', '{"path":"/landing/{partition}.json"}', 'partner/feed', '2025-03-17', 'failed', ${NOW})`.execute(database.db);
    await (await task()).run(NOW);
    const keys = (await triggers()).map((r) => r.partition_key);
    expect(keys).toHaveLength(11);
    expect(keys).not.toContain("2025-03-19");
    expect(keys).not.toContain("2025-03-18");
    expect(keys).not.toContain("2025-03-17");
  });

  it("replaces waiting triggers when the source's observe changes", async () => {
    define(feed);
    await (await task()).run(NOW);
    define(sourceAsset({
      key: "partner/feed",
      partitions: daily({ start: "2025-03-01" }),
      observe: fileExists("/landing/v2/{partition}.json"),
    }));
    await (await task()).run(NOW);
    const waiting = await triggers();
    expect(waiting).toHaveLength(14);
    expect(
      waiting.every((r) => r.args["path"] === "/landing/v2/{partition}.json" && r.poll_interval_ms === 60_000 && r.timeout_at === null),
    ).toBe(true);
    expect(await triggers("canceled")).toHaveLength(14);
  });

  it("observes every static key, an unpartitioned source once, the latest windows of a multi-partition, and costs 14 triggers for 40 000 partitions", async () => {
    define(
      sourceAsset({
        key: "ref/regions",
        partitions: staticPartitions(["eu", "us", "apac"]),
        observe: httpOk("https://ref.example/{partition}"),
      }),
      sourceAsset({ key: "ref/rates", observe: fileExists("/landing/rates.json") }),
      sourceAsset({
        key: "ref/by_region",
        partitions: multiPartitions({ date: daily({ start: "2025-03-01" }), region: staticPartitions(["eu", "us"]) }),
        observe: fileExists("/landing/{partition}/{start}.json"),
      }),
      sourceAsset({ key: "ref/ticks", partitions: hourly({ start: "2020-09-01" }), observe: fileExists("/ticks/{partition}") }),
      // No observe: reported by hand (`tributary report --observation`), never a trigger.
      sourceAsset({ key: "ref/manual", partitions: daily({ start: "2025-03-01" }) }),
    );
    await (await task({ lookback: 2 })).run(NOW);
    const rows = await triggers();
    const keysOf = (asset: string) => rows.filter((r) => r.asset_key === asset).map((r) => r.partition_key);
    expect(keysOf("ref/regions")).toEqual(["apac", "eu", "us"]);
    expect(rows.find((r) => r.asset_key === "ref/regions")!.partition_window).toBeNull();
    expect(keysOf("ref/rates")).toEqual([""]);
    expect(keysOf("ref/by_region")).toEqual(["2025-03-18|eu", "2025-03-18|us", "2025-03-19|eu", "2025-03-19|us"]);
    expect(keysOf("ref/ticks")).toEqual(["2025-03-20-10:00", "2025-03-20-11:00"]);
    expect(keysOf("ref/manual")).toEqual([]);

    define(sourceAsset({ key: "ref/ticks", partitions: hourly({ start: "2020-09-01" }), observe: fileExists("/ticks/{partition}") }));
    await resetDatabase(database.db);
    await (await task()).run(NOW);
    expect((await triggers()).filter((r) => r.asset_key === "ref/ticks")).toHaveLength(14);
  });
});

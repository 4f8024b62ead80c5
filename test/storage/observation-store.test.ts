import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import {
  PgAlertStore,
  PgPartitionStatusStore,
  PgRunStore,
  recordObservationsIn,
  recordObservationTimeoutsIn,
  type FiredObservation,
  type TimedOutObservation,
} from "../../src/storage/index.js";
import { alertText } from "../../src/reconciler/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

const NOW = new Date("2025-03-20T12:00:00Z");
const LATER = new Date("2025-03-20T13:00:00Z");

describePostgres("observation store: fired and timed-out source observations", () => {
  const database = useTestDatabase();

  beforeEach(async () => {
    await resetDatabase(database.db);
    await sql`
      insert into assets (key, file, spec, group_name, owner, is_source, first_seen_version, last_seen_version)
      values ('partner/feed', 'partner.ts', '{}'::jsonb, 'partner', 'team:partners', true, 1, 1)`.execute(database.db);
  });

  const observe = (rows: FiredObservation[], now = NOW) => database.db.transaction().execute((trx) => recordObservationsIn(trx, rows, now));
  const timeOut = (rows: TimedOutObservation[], now = NOW) =>
    database.db.transaction().execute((trx) => recordObservationTimeoutsIn(trx, rows, now));
  const status = (partitionKey: string) =>
    database.db
      .selectFrom("partition_status")
      .selectAll()
      .where("asset_key", "=", "partner/feed")
      .where("partition_key", "=", partitionKey)
      .executeTakeFirst();

  it("records an observation event per fired trigger and marks the partition materialized with it", async () => {
    await observe([
      { triggerId: 7, assetKey: "partner/feed", partitionKey: "2025-03-19", payload: { path: "/in/2025-03-19.json", size: 12 } },
      { triggerId: 8, assetKey: "partner/feed", partitionKey: null, payload: null },
    ]);
    const events = await database.db.selectFrom("events").selectAll().orderBy("id").execute();
    expect(events.map((e) => [e.kind, e.partition_key, e.metadata])).toEqual([
      ["observation", "2025-03-19", { triggerId: 7, payload: { path: "/in/2025-03-19.json", size: 12 } }],
      ["observation", "", { triggerId: 8, payload: null }],
    ]);
    expect(await status("2025-03-19")).toMatchObject({
      status: "materialized",
      last_materialization_event_id: events[0]!.id,
      last_step_id: null,
    });
    expect(await status("")).toMatchObject({ status: "materialized", last_materialization_event_id: events[1]!.id });
  });

  it("gives readers of a source partition its latest observation: { observedAt, payload }, with the event for lineage", async () => {
    await observe([{ triggerId: 1, assetKey: "partner/feed", partitionKey: "2025-03-19", payload: { size: 1 } }]);
    await observe([{ triggerId: 2, assetKey: "partner/feed", partitionKey: "2025-03-19", payload: { size: 2 } }], LATER);
    const [rec] = await new PgRunStore(database.db, RUN_DECISIONS).latestOutputs([
      { assetKey: "partner/feed", partitionKey: "2025-03-19" },
    ]);
    const latest = await database.db.selectFrom("events").select("id").orderBy("id", "desc").executeTakeFirstOrThrow();
    expect(rec).toMatchObject({
      hasOutput: true,
      ref: null,
      eventId: latest.id,
      inline: { observedAt: LATER.toISOString(), payload: { size: 2 } },
    });
  });

  it("marks unobserved partitions timed_out with one alert to the owner per trigger; observed ones stay materialized, unalerted", async () => {
    await observe([{ triggerId: 1, assetKey: "partner/feed", partitionKey: "2025-03-18", payload: {} }]);
    await sql`
      insert into triggers (id, kind, args, asset_key, partition_key, status, timeout_at)
      values (2, 'fileExists', '{"path":"/in/{partition}.json"}', 'partner/feed', '2025-03-19', 'timed_out', ${NOW})`.execute(database.db);
    const rows = [
      { triggerId: 2, assetKey: "partner/feed", partitionKey: "2025-03-19" },
      { triggerId: 3, assetKey: "partner/feed", partitionKey: "2025-03-18" },
    ];
    await timeOut(rows);
    await timeOut(rows); // a repeated expiry adds nothing
    expect(await status("2025-03-19")).toMatchObject({ status: "timed_out", last_materialization_event_id: null });
    expect(await status("2025-03-18")).toMatchObject({ status: "materialized" });
    const alerts = await new PgAlertStore(database.db).list();
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      kind: "observation_timed_out",
      causeKey: "observation_timed_out:2",
      assetKey: "partner/feed",
      partitionKey: "2025-03-19",
      owner: "team:partners",
      payload: { trigger: 2, kind: "fileExists", args: { path: "/in/{partition}.json" }, timeoutAt: expect.any(String) },
    });
    expect(alertText(alerts[0]!)).toMatch(
      /^\[tributary\] Source not observed in time: asset partner\/feed partition 2025-03-19 \(owner team:partners\)/,
    );

    // Partition status shows it; an observation arriving late still counts.
    const statuses = new PgPartitionStatusStore(database.db);
    const asset = { assetKey: "partner/feed", codeVersion: null };
    expect((await statuses.countByStatus([asset])).get("partner/feed")).toEqual({
      materializing: 0,
      materialized: 1,
      failed: 0,
      stale: 0,
      timed_out: 1,
      erased: 0,
    });
    expect((await statuses.keysByStatus(asset)).get("timed_out")).toEqual(["2025-03-19"]);
    expect((await statuses.partitionStates(asset, ["2025-03-19"])).get("2025-03-19")?.status).toBe("timed_out");
    await observe([{ triggerId: 4, assetKey: "partner/feed", partitionKey: "2025-03-19", payload: {} }], LATER);
    expect(await status("2025-03-19")).toMatchObject({ status: "materialized" });
  });
});

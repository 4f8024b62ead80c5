import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { AutomationTask, ObservationsTask } from "../../src/reconciler/index.js";
import {
  PgAutomationStore,
  PgObservationStore,
  recordObservationsIn,
  recordObservationTimeoutsIn,
  toJson,
  type JsonValue,
} from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";

// A partner's daily file (a source observed by a trigger) → an eager reader.
const defs = `
import { asset, daily, eager, fileExists, sourceAsset } from "tributary";
const days = daily({ start: "2025-03-01" });
export const feed = sourceAsset({ key: "of/feed", partitions: days, observe: fileExists("/landing/{partition}.json"), owner: "team:partners" });
export const clean = asset({ key: "of/clean", partitions: days, automation: eager(), deps: { feed } },
  async (ctx, { feed }) => ({ day: ctx.partition.key, feed }));
`;

describePostgres("source observations end to end: reconciler tasks, a fired trigger, eager readers", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("a fired observation trigger materialises the source partition; its eager reader runs with { observedAt, payload } and lineage; a timed-out one runs nothing", async () => {
    h = await Harness.create({
      files: { "feed.ts": defs },
      tasks: (s) => [
        new ObservationsTask({ store: new PgObservationStore(s.handle.db), graphs: s.graphs, definitions: s.definitions }),
        new AutomationTask({
          store: new PgAutomationStore(s.handle.db),
          runs: s.runs,
          graphs: s.graphs,
          definitions: s.definitions,
          owner: `node-${s.index}`,
          minIntervalMs: 0,
        }),
      ],
    });
    h.clockShiftMs = Date.parse("2025-03-12T04:00:00Z") - Date.now();
    const trigger = (partition: string) =>
      h!.until(
        async () =>
          (
            await sql<{ id: string }>`
              select id from triggers where asset_key = 'of/feed' and partition_key = ${partition} and status = 'waiting'`.execute(h!.db)
          ).rows[0],
        15_000,
        `the observation trigger of ${partition}`,
      );
    const [t11, t10] = [Number((await trigger("2025-03-11")).id), Number((await trigger("2025-03-10")).id)];

    // What the triggerer does when the file appears (fire) or the wait ends (expire), in its transaction.
    const payload: JsonValue = { path: "/landing/2025-03-11.json", size: 42 };
    const now = new Date(Date.now() + h.clockShiftMs);
    await h.db.transaction().execute(async (trx) => {
      await sql`update triggers set status = 'fired', payload = ${toJson(payload)}::jsonb, ended_at = ${now} where id = ${t11}`.execute(
        trx,
      );
      await recordObservationsIn(trx, [{ triggerId: t11, assetKey: "of/feed", partitionKey: "2025-03-11", payload }], now);
    });
    await h.db.transaction().execute(async (trx) => {
      await sql`update triggers set status = 'timed_out', ended_at = ${now} where id = ${t10}`.execute(trx);
      await recordObservationTimeoutsIn(trx, [{ triggerId: t10, assetKey: "of/feed", partitionKey: "2025-03-10" }], now);
    });

    const output = await h.until(
      async () =>
        (
          await sql<{ inline_value: { day: string; feed: { observedAt: string; payload: JsonValue } }; event_id: string }>`
            select o.inline_value, e.id as event_id from outputs o
            join steps s on s.id = o.step_id and s.state = 'success'
            join events e on e.step_id = s.id and e.kind = 'materialization'
            where o.asset_key = 'of/clean' and o.partition_key = '2025-03-11'`.execute(h!.db)
        ).rows[0],
      30_000,
      "the eager reader of the observed partition",
    );
    const observation = await h.db.selectFrom("events").selectAll().where("kind", "=", "observation").executeTakeFirstOrThrow();
    expect(output.inline_value).toEqual({ day: "2025-03-11", feed: { observedAt: observation.created_at.toISOString(), payload } });
    const lineage = await h.db.selectFrom("event_inputs").selectAll().where("event_id", "=", Number(output.event_id)).execute();
    expect(lineage).toMatchObject([
      { upstream_asset_key: "of/feed", upstream_partition_key: "2025-03-11", upstream_event_id: observation.id },
    ]);

    // Readers never run on missing data: the timed-out day has no step, and its status says why.
    const steps = await sql<{ partition_key: string }>`select partition_key from steps where asset_key = 'of/clean'`.execute(h.db);
    expect(steps.rows.map((r) => r.partition_key)).toEqual(["2025-03-11"]);
    const status = await h.db
      .selectFrom("partition_status")
      .select(["partition_key", "status"])
      .where("asset_key", "=", "of/feed")
      .orderBy("partition_key")
      .execute();
    expect(status).toEqual([
      { partition_key: "2025-03-10", status: "timed_out" },
      { partition_key: "2025-03-11", status: "materialized" },
    ]);
    expect(h.errors()).toEqual([]);
  });
});

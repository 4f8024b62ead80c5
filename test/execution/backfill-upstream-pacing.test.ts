import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { launchBackfill } from "../../src/api/index.js";
import { BackfillTask } from "../../src/reconciler/index.js";
import { PgBackfillStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// clicks (hourly) → daily_clicks (daily, reads its 24 hours)
const DEFS = `
import { asset, daily, dep, hourly, timeWindow } from "tributary";
export const clicks = asset({ key: "pc/clicks", partitions: hourly({ start: "2025-02-01" }) }, async () => 1);
export const daily_ = asset(
  { key: "pc/daily_clicks", partitions: daily({ start: "2025-02-01" }), deps: { clicks: dep(clicks, timeWindow()) } },
  async (_ctx, { clicks }) => clicks.length,
);
`;

describePostgres("execution: a backfill paces the upstream partitions --include-upstream adds", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("holds at most maxPartitionsPerRun upstream partitions per run, plus the day they complete", async () => {
    const errors: string[] = [];
    h = await Harness.create({
      files: { "clicks.ts": DEFS },
      tasks: (s) => [
        new BackfillTask({
          backfills: new PgBackfillStore(s.handle.db),
          graphs: s.graphs,
          definitions: s.definitions,
          log: (level, message) => {
            if (level === "error") errors.push(message);
          },
        }),
      ],
    });
    const backfills = new PgBackfillStore(h.db);
    const services = { graphs: h.graphs, runs: h.runs, definitions: h.definitions, backfills };
    const b = await launchBackfill(
      services,
      {
        assetKeys: ["pc/daily_clicks"],
        from: "2025-02-01",
        to: "2025-02-03",
        includeUpstream: true,
        maxConcurrentRuns: 1,
        maxPartitionsPerRun: 24,
      },
      new Date(),
    );
    expect(b).toMatchObject({ requested: 3 + 72 });
    // Three runs of a day's 24 hours and the day, not one run of 75 steps.
    const done = await h.until(
      async () => {
        const r = await backfills.get(b.id);
        return r && ["completed", "failed", "canceled"].includes(r.status) ? r : undefined;
      },
      120_000,
      "the backfill to end",
    );
    expect(done).toMatchObject({ status: "completed", done: 75, failed: 0 });
    const { rows } = await sql<{ steps: number; days: string[] }>`
      select count(*)::int as steps,
             array_agg(s.partition_key order by s.partition_key) filter (where s.asset_key = 'pc/daily_clicks') as days
      from runs r join steps s on s.run_id = r.id
      where r.backfill_id = ${b.id}::uuid group by r.id order by min(r.created_at), (min(r.tags->>'tributary/chunk'))::int`.execute(h.db);
    expect(rows).toEqual([
      { steps: 25, days: ["2025-02-01"] },
      { steps: 25, days: ["2025-02-02"] },
      { steps: 25, days: ["2025-02-03"] },
    ]);
    expect(errors).toEqual([]);
  }, 240_000);
});

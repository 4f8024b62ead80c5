// Housekeeping has Postgres analyse `steps` once it has grown well past what its statistics describe (a backfill's
// steps, say): claims are planned from them, and the embedded database has no autovacuum to refresh them.
import { sql, type Kysely } from "kysely";
import { describe, expect, it } from "vitest";
import { RUN_DECISIONS } from "../../src/planner/index.js";
import { PgRunStore, type Database } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { useTestPglite } from "../support/pglite.js";
import { oneStepRunInput, retries } from "./failure-classes.contract.js";

const NOW = new Date("2025-06-01T10:00:00Z");
const STEPS = 20_000;

function statisticsContract(db: () => Kysely<Database>): void {
  const housekeeping = () =>
    new PgRunStore(db(), RUN_DECISIONS).housekeeping({ now: NOW, zombieAfterMs: 60_000, queuedTimeoutMs: 300_000 });
  const estimate = async () =>
    Number((await sql<{ n: number }>`select reltuples as n from pg_class where oid = 'steps'::regclass`.execute(db())).rows[0]!.n);
  /** `n` pending steps of the run, partition keys `prefix1`…`prefixN`. */
  const insertSteps = (runId: string, n: number, prefix: string) =>
    sql`insert into steps (run_id, asset_key, partition_key) select ${runId}::uuid, 'stats/b', ${prefix} || i from generate_series(1, ${n}::int) i`.execute(
      db(),
    );

  it("analyses steps after a large run is created, and not while the statistics still hold", async () => {
    // Only housekeeping analyses the table here: autovacuum could otherwise do it in between, on its own schedule.
    await sql`alter table steps set (autovacuum_enabled = false)`.execute(db());
    const { runId } = await new PgRunStore(db(), RUN_DECISIONS).createRun(oneStepRunInput(retries(0)), NOW);
    await sql`analyze steps`.execute(db());
    await housekeeping();
    expect(await estimate()).toBe(1);

    // A backfill's worth of steps, scheduled at once.
    await sql`
      insert into steps (run_id, asset_key, partition_key, state, scheduled_at)
      select ${runId}::uuid, 'stats/a', 'p-' || i, 'scheduled', ${NOW} from generate_series(1, ${STEPS}::int) i`.execute(db());
    expect(await estimate()).toBe(1);
    await housekeeping();
    expect(await estimate()).toBeGreaterThanOrEqual(STEPS * 0.9);

    // Half as many again does not make the statistics wrong enough: no analysis (the estimate stays as it was).
    await insertSteps(runId, STEPS / 2, "half-");
    const before = await estimate();
    await housekeeping();
    expect(await estimate()).toBe(before);

    // Past twice the size it was analysed at: analysed again.
    await insertSteps(runId, STEPS, "double-");
    await housekeeping();
    expect(await estimate()).toBeGreaterThanOrEqual(STEPS * 2.5 * 0.9);
  });

  it("analyses again sooner when the statistics saw less than a row a page (rows dead or not yet committed)", async () => {
    await sql`alter table steps set (autovacuum_enabled = false)`.execute(db());
    const { runId } = await new PgRunStore(db(), RUN_DECISIONS).createRun(oneStepRunInput(retries(0)), NOW);
    await insertSteps(runId, STEPS, "gone-");
    // Analysed with nearly all its rows dead: its pages counted, its rows not (as when a run's steps were still
    // being inserted by another transaction).
    await sql`delete from steps`.execute(db());
    await sql`analyze steps`.execute(db());
    expect(await estimate()).toBeLessThan(10);

    // Half as many rows again: not doubled, but the statistics describe next to nothing, so they are taken again.
    await insertSteps(runId, STEPS / 2, "new-");
    await housekeeping();
    expect(await estimate()).toBeGreaterThanOrEqual((STEPS / 2) * 0.9);
  });
}

describePostgres("housekeeping keeps the statistics of steps current (Postgres)", () => {
  const database = useTestDatabase();
  statisticsContract(() => database.db);
});

describe("housekeeping keeps the statistics of steps current (embedded)", () => {
  const embedded = useTestPglite();
  statisticsContract(() => embedded.db);
});

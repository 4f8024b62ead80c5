// Housekeeping asks once which chores have anything to do: an idle database costs one statement a pass, and a
// chore with work still does it.
import { sql, type KyselyPlugin } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RUN_DECISIONS } from "../../src/planner/index.js";
import { PgRunStore, type PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";
import { oneStepRunInput, retries } from "./failure-classes.contract.js";

const T0 = new Date("2025-06-01T10:00:00Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);

describe("housekeeping on an idle database", () => {
  let handle: PgliteHandle;
  let statements: string[] = [];
  /** Records the start of every statement the store runs (transactions' begin and commit are not statements here). */
  const recording: KyselyPlugin = {
    transformQuery(args) {
      statements.push(
        args.node.kind === "RawNode"
          ? (args.node as unknown as { sqlFragments: string[] }).sqlFragments.join("?").replace(/\s+/g, " ").slice(0, 80)
          : args.node.kind,
      );
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  let runs: PgRunStore;

  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle.close();
  });
  beforeEach(async () => {
    await resetDatabase(handle.db);
    runs = new PgRunStore(handle.db.withPlugin(recording), RUN_DECISIONS);
    statements = [];
  });

  const options = (now: Date) => ({ now, zombieAfterMs: 60_000, queuedTimeoutMs: 300_000, holderDeadAfterMs: 30_000 });
  const oneStepRun = async () => (await runs.createRun(oneStepRunInput(retries(2)), T0)).runId;

  it("costs one statement when no chore has anything to do, and does the chores that have", async () => {
    // The first call also prunes the change rows of partition statuses, which the store does once a minute.
    await runs.housekeeping(options(at(0)));
    statements = [];
    const idle = await runs.housekeeping(options(at(1)));
    expect(idle).toEqual({ retriesDue: 0, zombies: 0, requeued: 0, holderLost: 0, runsStarted: 0, toAbort: [], runsCanceled: 0 });
    expect(statements).toHaveLength(1);

    // A step whose retry is due, and a run being canceled: both chores run, the others do not.
    const retrying = await oneStepRun();
    const canceled = await oneStepRun();
    await sql`update steps set state = 'up_for_retry', next_retry_at = ${at(2)} where run_id = ${retrying}`.execute(handle.db);
    await sql`update runs set status = 'running' where id = ${retrying}`.execute(handle.db);
    await sql`update runs set cancel_requested_at = ${at(2)} where id = ${canceled}`.execute(handle.db);
    statements = [];
    const busy = await runs.housekeeping(options(at(3)));
    expect(busy).toMatchObject({ retriesDue: 1, runsCanceled: 1, zombies: 0, requeued: 0, holderLost: 0, runsStarted: 0 });
    expect(statements.length).toBeGreaterThan(2);
    const states = await sql<{ run_id: string; state: string }>`select run_id, state from steps order by id`.execute(handle.db);
    expect(states.rows).toEqual([
      { run_id: retrying, state: "scheduled" },
      { run_id: canceled, state: "skipped" },
    ]);

    // Nothing left to do: one statement again.
    statements = [];
    await runs.housekeeping(options(at(4)));
    expect(statements).toHaveLength(1);
  });
});

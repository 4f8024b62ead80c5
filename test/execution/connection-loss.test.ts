import { sql } from "kysely";
import { afterEach, expect, inject, it } from "vitest";
import { withAdminClient } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness, sleep } from "./harness.js";

const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01" });
const nap = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A try whose heartbeats could not be written for zombieAfterMs (a loaded machine, connections dying) is retried as a
// zombie: that costs a try, so the steps have some to spare.
export const a = asset({ key: "x/a", partitions: days, retries: { max: 2, delay: 0 } }, async (ctx) => { await nap(40); return ctx.partition.key; });
export const b = asset({ key: "x/b", partitions: days, deps: { a }, retries: { max: 2, delay: 0 } }, async (_ctx, { a }) => { await nap(40); return a + "!"; });
`;

/** Kills every session of the database but the admin one doing it: a Postgres restart as the clients see it. */
async function terminateBackends(dbName: string): Promise<number> {
  const context = inject("postgres");
  if (!context.available) throw new Error("no Postgres");
  const adminUrl = context.adminUrl;
  return withAdminClient(adminUrl, async (client) => {
    const { rows } = await client.query<{ killed: boolean }>(
      `select pg_terminate_backend(pid) as killed from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`,
      [dbName],
    );
    return rows.filter((r) => r.killed).length;
  });
}

describePostgres("execution: Postgres connection loss mid-run", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("reconnects every component and completes the run", async () => {
    h = await Harness.create({
      files: { "x.ts": DEFS },
      nodes: 2,
      node: { capacity: 4 },
      queuedTimeoutMs: 2_000,
      zombieAfterMs: 3_000,
    });
    const runId = await h.launch(["x/a", "x/b"], { from: "2025-01-01", to: "2025-01-30" });
    await h.until(
      async () => {
        const { rows } = await sql<{
          n: number;
        }>`select count(*)::int as n from steps where run_id = ${runId} and state = 'success'`.execute(h!.db);
        return rows[0]!.n >= 10;
      },
      20_000,
      "the run to get going",
    );
    const listenersBefore = h.nodes.map((n) => n.handle.listener.backendPid);
    expect(listenersBefore.every((pid) => pid !== undefined)).toBe(true);
    let killed = 0;
    // Several times, moments apart: connections re-opened after a kill die too.
    for (let i = 0; i < 6; i++) {
      killed += await terminateBackends(h.dbName);
      await sleep(60 + Math.random() * 100);
    }
    expect(killed).toBeGreaterThan(2);

    const run = await h.waitForRun(runId, 45_000);
    // Tries lost with a connection (handed out in a commit whose answer never arrived) were handed out again; on a
    // loaded machine a running try whose heartbeats could not be written for zombieAfterMs is retried as a zombie.
    const lost = await sql<{ code: string | null; state: string }>`
      select distinct error->>'code' as code, state from step_tries where run_id = ${runId} and state <> 'success'`.execute(h.db);
    expect(lost.rows.filter((r) => r.code !== "STEP_QUEUED_TIMEOUT" && r.code !== "STEP_ZOMBIE")).toEqual([]);
    expect(run.status).toBe("success");
    expect(run).toMatchObject({ stepsTotal: 60, stepsDone: 60, stepsFailed: 0, stepsActive: 0 });
    // Every step succeeded once; a try lost with the connection was handed out again, never run twice to success.
    const { rows } = await sql<{ outputs: number; events: number; occupied: number }>`
      select (select count(*)::int from outputs where run_id = ${runId}) as outputs,
             (select count(*)::int from events where run_id = ${runId} and kind = 'materialization') as events,
             (select occupied_slots from pools where name = 'default_pool') as occupied`.execute(h.db);
    expect(rows[0]).toEqual({ outputs: 60, events: 60, occupied: 0 });
    const b30 = await sql<{ inline_value: unknown }>`
      select inline_value from outputs where run_id = ${runId} and asset_key = 'x/b' and partition_key = '2025-01-30'`.execute(h.db);
    expect(b30.rows[0]!.inline_value).toBe("2025-01-30!");

    // The reconcilers listen again, on new sessions, and later work runs as usual.
    await h.until(
      async () =>
        h!.nodes.every((n, i) => n.handle.listener.backendPid !== undefined && n.handle.listener.backendPid !== listenersBefore[i]),
      10_000,
      "the listeners to reconnect",
    );
    const again = await h.waitForRun(await h.launch(["x/a"], { partition: "2025-02-01" }), 10_000);
    expect(again.status).toBe("success");
  });
});

import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { deadlineCursorName, PgAlertStore, toJson, type DeadlineCandidate, type PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";

// The store on PGlite (the embedded database of `tributary dev`); the
// Postgres paths run in test/execution/alerts.test.ts and deadlines.test.ts.
const NOW = new Date("2025-03-12T12:00:00Z");
const later = (ms: number) => new Date(NOW.getTime() + ms);

let handle: PgliteHandle;
let store: PgAlertStore;

beforeAll(async () => {
  handle = await openTestPglite();
});
afterAll(async () => {
  await handle.close();
});
beforeEach(async () => {
  await resetDatabase(handle.db);
  store = new PgAlertStore(handle.db);
});

async function insertAlert(causeKey: string, owner: string | null = "team:a"): Promise<number> {
  const row = await handle.db
    .insertInto("alerts")
    .values({ cause_key: causeKey, kind: "step_failed", asset_key: "a/x", owner, payload: toJson({ asset: "a/x" }), next_attempt_at: NOW })
    .returning("id")
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

async function brokenFile(path: string, sourceHash: string, assets: unknown[]): Promise<void> {
  await sql`
    insert into definition_files (path, source_hash, status, error, assets, last_success_at)
    values (${path}, ${sourceHash}, 'error', ${toJson({ code: "LOAD_IMPORT_FAILED", message: "SyntaxError: nope", stack: "…" })}::jsonb,
            ${toJson(assets)}::jsonb, ${NOW})
    on conflict (path) do update set source_hash = excluded.source_hash, status = 'error', error = excluded.error`.execute(handle.db);
}

describe("PgAlertStore", () => {
  it("claims due alerts under a lease, and settles only the current attempt", async () => {
    const id = await insertAlert("step_failed:1:1");
    const [claimed] = await store.claimDue({ now: NOW, limit: 10, leaseMs: 60_000 });
    expect(claimed).toMatchObject({ id, attempts: 1, status: "pending", nextAttemptAt: later(60_000), sentTo: [] });
    // Leased: nobody else gets it until the lease ends.
    expect(await store.claimDue({ now: later(59_000), limit: 10, leaseMs: 60_000 })).toEqual([]);
    const [again] = await store.claimDue({ now: later(60_000), limit: 10, leaseMs: 60_000 });
    expect(again!.attempts).toBe(2);
    // The first claimer finishing late changes nothing.
    await store.settle([{ id, attempt: 1, sent: true, sentTo: ["log"] }], later(61_000));
    expect((await store.list())[0]).toMatchObject({ status: "pending", attempts: 2, sentTo: [] });
    await store.settle(
      [{ id, attempt: 2, sent: false, sentTo: ["log"], error: { message: "HTTP 500" }, nextAttemptAt: later(120_000) }],
      later(61_000),
    );
    expect((await store.list())[0]).toMatchObject({
      status: "pending",
      sentTo: ["log"],
      lastError: { message: "HTTP 500" },
      nextAttemptAt: later(120_000),
    });
    expect(await store.claimDue({ now: later(119_000), limit: 10, leaseMs: 60_000 })).toEqual([]);
    const [third] = await store.claimDue({ now: later(120_000), limit: 10, leaseMs: 60_000 });
    expect(third).toMatchObject({ attempts: 3, sentTo: ["log"] });
    await store.settle([{ id, attempt: 3, sent: true, sentTo: ["log", "hook"] }], later(121_000));
    expect((await store.list())[0]).toMatchObject({ status: "sent", sentAt: later(121_000), sentTo: ["log", "hook"] });
    expect(await store.claimDue({ now: later(999_000), limit: 10, leaseMs: 60_000 })).toEqual([]);
  });

  it("gives up when told to (no next attempt)", async () => {
    const id = await insertAlert("step_failed:2:1");
    await store.claimDue({ now: NOW, limit: 10, leaseMs: 1_000 });
    await store.settle([{ id, attempt: 1, sent: false, sentTo: [], error: { message: "down" }, nextAttemptAt: null }], NOW);
    expect((await store.list())[0]).toMatchObject({ status: "failed", lastError: { message: "down" } });
    expect(await store.claimDue({ now: later(3_600_000), limit: 10, leaseMs: 1_000 })).toEqual([]);
  });

  it("records one alert per broken definitions file and source hash, routed to the owners of its last good assets", async () => {
    await brokenFile("sales.ts", "h1", [
      { key: "sales/orders", owner: "team:sales" },
      { key: "sales/refunds", owner: "team:finance" },
      { key: "sales/misc", owner: null },
    ]);
    expect(await store.recordLoadErrors(NOW)).toBe(1);
    expect(await store.recordLoadErrors(NOW)).toBe(0);
    const [alert] = await store.list();
    expect(alert).toMatchObject({
      causeKey: "load_error:sales.ts:h1",
      kind: "load_error",
      owner: "team:finance",
      assetKey: null,
      payload: {
        file: "sales.ts",
        sourceHash: "h1",
        owners: ["team:finance", "team:sales"],
        assets: ["sales/misc", "sales/orders", "sales/refunds"],
        error: { code: "LOAD_IMPORT_FAILED", message: "SyntaxError: nope" },
      },
    });
    await brokenFile("sales.ts", "h2", []);
    await brokenFile("new.ts", "h3", []);
    expect(await store.recordLoadErrors(NOW)).toBe(2);
    const ids = (await sql<{ id: number }>`select id from alerts order by id`.execute(handle.db)).rows.map((r) => Number(r.id));
    // No sequence value is drawn for a cause that is already there.
    expect(ids).toEqual([1, 2, 3]);
  });

  it("records deadline misses for partitions not materialised, and moves cursors only forward", async () => {
    await sql`
      insert into events (id, kind, asset_key, partition_key) values (7, 'external', 'd/feed', '2025-03-11-01:00');
      insert into partition_status (asset_key, partition_key, status, last_materialization_event_id)
      values ('d/feed', '2025-03-11-01:00', 'failed', 7), ('d/feed', '2025-03-11-02:00', 'failed', null)`.execute(handle.db);
    const candidate = (partitionKey: string): DeadlineCandidate => ({
      assetKey: "d/feed",
      partitionKey,
      owner: "team:sales",
      windowStart: "2025-03-11T01:00:00.000Z",
      windowEnd: "2025-03-11T02:00:00.000Z",
      deadlineAt: "2025-03-11T05:00:00.000Z",
      deadlineMs: 10_800_000,
    });
    const cursors = new Map([["d/feed", NOW]]);
    expect(
      await store.recordDeadlineChecks(["2025-03-11-00:00", "2025-03-11-01:00", "2025-03-11-02:00"].map(candidate), cursors, NOW),
    ).toBe(2);
    expect((await store.list()).map((a) => a.causeKey).sort()).toEqual([
      "deadline:d/feed:2025-03-11-00:00",
      "deadline:d/feed:2025-03-11-02:00",
    ]);
    expect(await store.recordDeadlineChecks([candidate("2025-03-11-00:00")], cursors, NOW)).toBe(0);
    expect(await store.deadlineCursors(["d/feed", "d/other"])).toEqual(new Map([["d/feed", NOW]]));
    await store.recordDeadlineChecks([], new Map([["d/feed", later(-1)]]), NOW);
    expect((await store.deadlineCursors(["d/feed"])).get("d/feed")).toEqual(NOW);
    await store.recordDeadlineChecks([], new Map([["d/feed", later(1)]]), NOW);
    expect((await store.deadlineCursors(["d/feed"])).get("d/feed")).toEqual(later(1));
    const row = await handle.db
      .selectFrom("cursors")
      .selectAll()
      .where("name", "=", deadlineCursorName("d/feed"))
      .executeTakeFirstOrThrow();
    expect(row.value).toEqual({ until: later(1).toISOString() });
  });

  it("lists newest first, by asset and status", async () => {
    await insertAlert("a");
    await insertAlert("b");
    await sql`update alerts set asset_key = 'b/y', status = 'sent' where cause_key = 'b'`.execute(handle.db);
    expect((await store.list()).map((a) => a.causeKey)).toEqual(["b", "a"]);
    expect((await store.list({ assetKey: "a/x" })).map((a) => a.causeKey)).toEqual(["a"]);
    expect((await store.list({ status: "sent" })).map((a) => a.causeKey)).toEqual(["b"]);
    expect((await store.list({ first: 1 })).map((a) => a.causeKey)).toEqual(["b"]);
  });
});

import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { PgTriggerStore, TRIGGER_MAX_BACKOFF_MS, TRIGGERS_CHANNEL, WAKE_CHANNEL, type NewTrigger } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";
import { deferredRun as deferredRunIn } from "../triggerer/deferred-run.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

const NOW = new Date("2025-03-12T12:00:00Z");
const LEASE = 30_000;
const at = (ms: number) => new Date(NOW.getTime() + ms);

describePostgres("PgTriggerStore", () => {
  const database = useTestDatabase();
  let store: PgTriggerStore;

  beforeEach(async () => {
    await resetDatabase(database.db);
    store = new PgTriggerStore(database.db, RUN_DECISIONS);
  });

  const deferredRun = (count: number, options: { downstream?: boolean } = {}) =>
    deferredRunIn(database.db, count, { ...options, now: NOW });

  const stepTriggers = (steps: readonly number[], extra: Partial<NewTrigger> = {}): NewTrigger[] =>
    steps.map((stepId) => ({ kind: "file", args: { path: `/data/${stepId}` }, stepId, ...extra }) as NewTrigger);

  const stepRow = (id: number) => database.db.selectFrom("steps").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  const runRow = (id: string) => database.db.selectFrom("runs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

  it("creates step and observation triggers idempotently and links the step to its trigger", async () => {
    const { steps } = await deferredRun(2);
    const rows: NewTrigger[] = [
      ...stepTriggers(steps),
      { kind: "file", args: { path: "/in/a" }, assetKey: "src/a", partitionKey: "2025-03-01" },
      { kind: "file", args: { path: "/in/b" }, assetKey: "src/b" },
    ];
    const first = await store.createTriggers(rows, NOW);
    expect(first.map((c) => c.created)).toEqual([true, true, true, true]);
    const again = await store.createTriggers([...rows].reverse(), NOW);
    expect(again.map((c) => c.created)).toEqual([false, false, false, false]);
    expect(again.map((c) => c.id)).toEqual(first.map((c) => c.id).reverse());
    expect(Number((await stepRow(steps[0]!)).trigger_id)).toBe(first[0]!.id);
    const count = await sql<{ n: number }>`select count(*)::int as n from triggers`.execute(database.db);
    expect(count.rows[0]!.n).toBe(4);
  });

  it("rejects a trigger with neither a step nor an asset", async () => {
    await expect(store.createTriggers([{ kind: "file" } as unknown as NewTrigger], NOW)).rejects.toMatchObject({ code: "TRIGGER_INVALID" });
  });

  it("never hands the same trigger to two owners claiming at once", async () => {
    const { steps } = await deferredRun(200);
    await store.createTriggers(stepTriggers(steps), NOW);
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, i) => store.claimDue(`owner-${i % 2}`, NOW, { limit: 50, leaseMs: LEASE })),
    );
    // Whatever SKIP LOCKED left to a later claim is still there for one.
    const rest = await store.claimDue("owner-2", NOW, { limit: 200, leaseMs: LEASE });
    const ids = [...claims.flat(), ...rest].map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(200);
    const owners = await sql<{ owner: string; n: number }>`
      select lease_owner as owner, count(*)::int as n from triggers group by lease_owner`.execute(database.db);
    expect(owners.rows.every((r) => r.owner !== null)).toBe(true);
  });

  it("only claims due triggers, lets a lapsed lease be taken over, and renew keeps a lease", async () => {
    const { steps } = await deferredRun(3);
    const [a, b, later] = await store.createTriggers(
      [...stepTriggers(steps.slice(0, 2)), { kind: "file", stepId: steps[2]!, nextCheckAt: at(60_000) }],
      NOW,
    );
    const mine = await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    expect(mine.map((c) => c.id).sort()).toEqual([a!.id, b!.id].sort());
    expect(mine[0]!.leaseExpiresAt.toISOString()).toBe(at(LEASE).toISOString());
    // Held: nobody else gets them; the not-yet-due one is not handed out.
    expect(await store.claimDue("t2", at(1000), { limit: 10, leaseMs: LEASE })).toEqual([]);

    // t1 heartbeats at +20 s: its leases now run to +50 s, so t2 at +40 s finds nothing.
    expect(await store.renewLeases("t1", at(20_000), LEASE)).toBe(2);
    expect(await store.claimDue("t2", at(40_000), { limit: 10, leaseMs: LEASE })).toEqual([]);

    // t1 stops heartbeating: after +50 s its triggers (and the now due third) go to t2.
    const taken = await store.claimDue("t2", at(61_000), { limit: 10, leaseMs: LEASE });
    expect(taken.map((c) => c.id).sort()).toEqual([a!.id, b!.id, later!.id].sort());
    // t1 comes back: its renewal and results are ignored, t2's stand.
    expect(await store.renewLeases("t1", at(62_000), LEASE)).toBe(0);
    const late = await store.recordChecks("t1", [{ triggerId: a!.id, outcome: "fired", payload: { by: "t1" } }], at(62_000));
    expect(late).toMatchObject({ applied: 0, ignored: [a!.id] });
    const [rowA] = await store.getTriggers([a!.id]);
    expect(rowA).toMatchObject({ status: "waiting", leaseOwner: "t2" });

    expect(await store.releaseLeases("t2")).toBe(3);
    expect((await store.claimDue("t3", at(62_000), { limit: 10, leaseMs: LEASE })).length).toBe(3);
  });

  it("a fired trigger schedules its deferred step, keeps the payload reachable, and wakes the reconcilers", async () => {
    const { steps } = await deferredRun(2);
    const [t] = await store.createTriggers(stepTriggers(steps.slice(0, 1)), NOW);
    const wakes: string[] = [];
    const unlisten = await database.handle.listen(WAKE_CHANNEL, (p) => wakes.push(p));
    try {
      await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
      const result = await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "fired", payload: { size: 42 } }], at(5000));
      expect(result).toMatchObject({ applied: 1, fired: [t!.id], canceled: [], scheduledSteps: [steps[0]] });
      const step = await stepRow(steps[0]!);
      expect(step.state).toBe("scheduled");
      expect(step.scheduled_at?.toISOString()).toBe(at(5000).toISOString());
      const [trigger] = await store.getTriggers([Number(step.trigger_id)]);
      expect(trigger).toMatchObject({ status: "fired", payload: { size: 42 }, leaseOwner: null, leaseExpiresAt: null });
      expect(trigger!.endedAt?.toISOString()).toBe(at(5000).toISOString());
      expect((await stepRow(steps[1]!)).state).toBe("deferred");
      await expect.poll(() => wakes.includes("trigger"), { timeout: 5000 }).toBe(true);
    } finally {
      await unlisten();
    }
  });

  it("a trigger that fires after its run was canceled is marked canceled and changes nothing else", async () => {
    const { runId, steps } = await deferredRun(1);
    const [t] = await store.createTriggers(stepTriggers(steps), NOW);
    await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    // What run cancellation does to a deferred step.
    await sql`update steps set state = 'skipped', skip_reason = 'run canceled', ended_at = ${NOW} where id = ${steps[0]!}`.execute(
      database.db,
    );
    await sql`update runs set status = 'canceled', steps_done = 1, ended_at = ${NOW} where id = ${runId}::uuid`.execute(database.db);
    const before = await runRow(runId);
    const result = await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "fired", payload: { x: 1 } }], at(1000));
    expect(result).toMatchObject({ applied: 1, fired: [], canceled: [t!.id], scheduledSteps: [] });
    const [trigger] = await store.getTriggers([t!.id]);
    expect(trigger).toMatchObject({ status: "canceled", payload: null, leaseOwner: null });
    expect((await stepRow(steps[0]!)).state).toBe("skipped");
    expect(await runRow(runId)).toEqual(before);
  });

  it("records waiting checks and backs off exponentially, capped, after failed ones", async () => {
    const { steps } = await deferredRun(1);
    const [t] = await store.createTriggers(stepTriggers(steps), NOW);
    await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    const poll = 10_000;
    await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "waiting", result: { exists: false }, pollIntervalMs: poll }], NOW);
    let [row] = await store.getTriggers([t!.id]);
    expect(row).toMatchObject({ attempts: 1, lastResult: { exists: false }, error: null, status: "waiting", leaseOwner: "t1" });
    expect(row!.nextCheckAt.toISOString()).toBe(at(poll).toISOString());

    const error = { name: "Error", code: "USER_CODE", message: "ENOTFOUND s3.example" };
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "error", error, pollIntervalMs: poll }], NOW);
      [row] = await store.getTriggers([t!.id]);
      delays.push(row!.nextCheckAt.getTime() - NOW.getTime());
    }
    expect(delays.slice(0, 5)).toEqual([poll, 2 * poll, 4 * poll, 8 * poll, 16 * poll]);
    expect(Math.max(...delays)).toBe(TRIGGER_MAX_BACKOFF_MS);
    expect(row).toMatchObject({ attempts: 11, status: "waiting", error: { code: "USER_CODE", consecutiveFailures: 10 } });

    // A good check resets the failure count.
    await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "waiting", pollIntervalMs: poll }], NOW);
    [row] = await store.getTriggers([t!.id]);
    expect(row).toMatchObject({ error: null, attempts: 12 });
    await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "error", error, pollIntervalMs: poll }], NOW);
    [row] = await store.getTriggers([t!.id]);
    expect(row!.nextCheckAt.toISOString()).toBe(at(poll).toISOString());
  });

  it("expiry fails the deferred step (TRIGGER_TIMED_OUT) through the step completion path", async () => {
    const { runId, steps, downstream } = await deferredRun(1, { downstream: true });
    const [t] = await store.createTriggers(stepTriggers(steps, { timeoutAt: at(60_000) }), NOW);
    await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    expect(await store.expire(at(59_000))).toMatchObject({ timedOut: [] });

    const result = await store.expire(at(60_000));
    expect(result).toEqual({ timedOut: [t!.id], failedSteps: [steps[0]], skippedSteps: [] });
    const [trigger] = await store.getTriggers([t!.id]);
    expect(trigger).toMatchObject({ status: "timed_out", leaseOwner: null });
    const step = await stepRow(steps[0]!);
    expect(step.state).toBe("failed");
    expect(step.error).toMatchObject({ code: "TRIGGER_TIMED_OUT" });
    // Downstream does not run on missing data; the run ends failed.
    expect((await stepRow(downstream!)).state).toBe("upstream_failed");
    expect(await runRow(runId)).toMatchObject({ status: "failed", steps_done: 2, steps_failed: 2 });
    const alerts = await sql<{ kind: string }>`select kind from alerts`.execute(database.db);
    expect(alerts.rows.map((r) => r.kind)).toEqual(["step_failed"]);
    // The holder's late result is ignored.
    const late = await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "fired", payload: {} }], at(61_000));
    expect(late.ignored).toEqual([t!.id]);
  });

  it("expiry with softFail skips the step instead", async () => {
    const { runId, steps, downstream } = await deferredRun(1, { downstream: true });
    const [t] = await store.createTriggers(stepTriggers(steps, { softFail: true, timeoutAt: at(1000) }), NOW);
    const result = await store.expire(at(2000));
    expect(result).toEqual({ timedOut: [t!.id], failedSteps: [], skippedSteps: [steps[0]] });
    const step = await stepRow(steps[0]!);
    expect(step.state).toBe("skipped");
    expect(step.skip_reason).toMatch(/timed out \(softFail\)/);
    expect((await stepRow(downstream!)).state).toBe("skipped");
    expect(await runRow(runId)).toMatchObject({ status: "success", steps_done: 2, steps_failed: 0 });
    const alerts = await sql<{ n: number }>`select count(*)::int as n from alerts`.execute(database.db);
    expect(alerts.rows[0]!.n).toBe(0);
  });

  it("expires observation triggers without touching steps", async () => {
    const [t] = await store.createTriggers([{ kind: "file", assetKey: "src/a", partitionKey: "x", timeoutAt: at(1000) }], NOW);
    expect(await store.expire(at(1000))).toEqual({ timedOut: [t!.id], failedSteps: [], skippedSteps: [] });
    // The source partition shows the timeout.
    const status = await database.db.selectFrom("partition_status").select("status").where("asset_key", "=", "src/a").execute();
    expect(status).toEqual([{ status: "timed_out" }]);
    // A new wait for the same partition can be created once the old one ended.
    const [again] = await store.createTriggers([{ kind: "file", assetKey: "src/a", partitionKey: "x" }], at(2000));
    expect(again!.created).toBe(true);
  });

  it("1 000 triggers claimed in batches by two owners: none lost, none twice, all fired", async () => {
    const { runId, steps } = await deferredRun(1000);
    await store.createTriggers(stepTriggers(steps), NOW);
    const seen: number[] = [];
    const worker = async (owner: string) => {
      for (;;) {
        const batch = await store.claimDue(owner, NOW, { limit: 64, leaseMs: LEASE });
        if (batch.length === 0) return;
        seen.push(...batch.map((c) => c.id));
        const result = await store.recordChecks(
          owner,
          batch.map((c) => ({ triggerId: c.id, outcome: "fired" as const, payload: { owner } })),
          NOW,
        );
        expect(result.ignored).toEqual([]);
      }
    };
    await Promise.all([worker("a"), worker("b")]);
    expect(seen.length).toBe(1000);
    expect(new Set(seen).size).toBe(1000);
    const states = await sql<{ state: string; n: number }>`
      select state, count(*)::int as n from steps where run_id = ${runId}::uuid group by state`.execute(database.db);
    expect(states.rows).toEqual([{ state: "scheduled", n: 1000 }]);
    const fired = await sql<{ n: number }>`select count(*)::int as n from triggers where status = 'fired'`.execute(database.db);
    expect(fired.rows[0]!.n).toBe(1000);
  });

  it("keeps a trigger's partition window, poll interval, softFail and the deferring try, and names a step trigger's asset", async () => {
    const { steps } = await deferredRun(1);
    const window = { start: "2025-03-11T00:00:00.000Z", end: "2025-03-12T00:00:00.000Z" };
    const [t] = await store.createTriggers(stepTriggers(steps, { partitionWindow: window, pollIntervalMs: 250, softFail: true }), NOW);
    const [claimed] = await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    expect(claimed).toMatchObject({
      id: t!.id,
      assetKey: "src/wait",
      partitionKey: "p00001",
      partitionWindow: window,
      pollIntervalMs: 250,
      softFail: true,
      tryNumber: 1,
    });
    const [obs] = await store.createTriggers([{ kind: "file", assetKey: "src/a" }], NOW);
    expect((await store.getTriggers([obs!.id]))[0]).toMatchObject({
      partitionWindow: null,
      pollIntervalMs: 5000,
      softFail: false,
      tryNumber: null,
    });
  });

  it("rejects a poll interval that is not a positive whole number of milliseconds, naming the field", async () => {
    const err = await store.createTriggers([{ kind: "file", assetKey: "src/a", pollIntervalMs: 0 }], NOW).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "TRIGGER_INVALID", location: { assetKey: "src/a", field: "pollIntervalMs" } });
    expect((err as Error).message).toContain("pollIntervalMs must be a whole number of milliseconds above 0, not 0");
  });

  it("notifies triggerers on the triggers channel when it creates a trigger, inside the transaction", async () => {
    const { steps } = await deferredRun(1);
    const heard: string[] = [];
    const unlisten = await database.handle.listen(TRIGGERS_CHANNEL, (p) => heard.push(p));
    try {
      await store.createTriggers(stepTriggers(steps), NOW);
      await expect.poll(() => heard.length, { timeout: 5000 }).toBe(1);
      // Already there: nothing new, no notification.
      await store.createTriggers(stepTriggers(steps), NOW);
      await new Promise((r) => setTimeout(r, 200));
      expect(heard.length).toBe(1);
    } finally {
      await unlisten();
    }
  });

  it("a failed trigger fails its deferred step for good, naming the asset, partition and field", async () => {
    const { runId, steps, downstream } = await deferredRun(1, { downstream: true });
    const [t] = await store.createTriggers(stepTriggers(steps), NOW);
    const [obs] = await store.createTriggers([{ kind: "nope", assetKey: "src/a", partitionKey: "x" }], NOW);
    await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    const error = {
      name: "TriggerError",
      code: "TRIGGER_TEMPLATE_FIELD_MISSING",
      message: 'trigger fileExists args.path "/in/{start}.csv" uses {start}, but partition "p00001" has no time window',
      location: { field: "args.path" },
    };
    const result = await store.recordChecks(
      "t1",
      [
        { triggerId: t!.id, outcome: "failed", error },
        {
          triggerId: obs!.id,
          outcome: "failed",
          error: { ...error, code: "TRIGGER_KIND_UNKNOWN", message: 'trigger kind "nope" is not registered' },
        },
      ],
      at(1000),
    );
    expect(result).toMatchObject({ applied: 2, failed: [t!.id, obs!.id], failedSteps: [steps[0]], fired: [], scheduledSteps: [] });
    const step = await stepRow(steps[0]!);
    expect(step.state).toBe("failed");
    expect(step.next_retry_at).toBeNull();
    expect(step.error).toMatchObject({
      code: "TRIGGER_TEMPLATE_FIELD_MISSING",
      location: { assetKey: "src/wait", partitionKey: "p00001", field: "args.path" },
    });
    expect((step.error as { message: string }).message).toBe(
      `asset "src/wait" partition "p00001" cannot wait on its "file" trigger (id ${t!.id}): ${error.message}`,
    );
    expect((await stepRow(downstream!)).state).toBe("upstream_failed");
    expect(await runRow(runId)).toMatchObject({ status: "failed" });
    const rows = await store.getTriggers([t!.id, obs!.id]);
    expect(rows.map((r) => [r.status, r.leaseOwner, (r.error as { code: string }).code])).toEqual([
      ["failed", null, "TRIGGER_TEMPLATE_FIELD_MISSING"],
      ["failed", null, "TRIGGER_KIND_UNKNOWN"],
    ]);
  });

  it("a fired step trigger gives back the pool slot its step held while deferred (pools that count deferred steps)", async () => {
    await sql`insert into pools (name, slots, include_deferred) values ('partner', 2, true)`.execute(database.db);
    const { steps } = await deferredRun(1);
    await sql`update steps set pool = 'partner' where id = ${steps[0]!}`.execute(database.db);
    await sql`update pools set occupied_slots = 1 where name = 'partner'`.execute(database.db);
    const [t] = await store.createTriggers(stepTriggers(steps), NOW);
    await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "fired", payload: {} }], NOW);
    const pool = await database.db.selectFrom("pools").selectAll().where("name", "=", "partner").executeTakeFirstOrThrow();
    expect(pool.occupied_slots).toBe(0);
  });

  it("a fired observation trigger records the observation of its source partition", async () => {
    const [t] = await store.createTriggers([{ kind: "file", assetKey: "src/a", partitionKey: "2025-03-01" }], NOW);
    await store.claimDue("t1", NOW, { limit: 10, leaseMs: LEASE });
    const result = await store.recordChecks("t1", [{ triggerId: t!.id, outcome: "fired", payload: { size: 3 } }], NOW);
    expect(result).toMatchObject({ fired: [t!.id], scheduledSteps: [] });
    const { rows } = await sql<{ kind: string; asset_key: string; partition_key: string }>`
      select kind, asset_key, partition_key from events`.execute(database.db);
    expect(rows).toEqual([{ kind: "observation", asset_key: "src/a", partition_key: "2025-03-01" }]);
  });
});

import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { z } from "zod";
import { PgTriggerStore, type NewTrigger, type TriggerRecord, type TriggerStore } from "../../src/storage/index.js";
import { Triggerer, type TriggererOptions } from "../../src/triggerer/index.js";
import { builtInTriggers, defineTriggerCheck, type TriggerRegistry } from "../../src/trigger-checks/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";
import { deferredRun } from "./deferred-run.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

/** A check that answers when the test says so, counting how many run at once. */
function gatedCheck() {
  let running = 0;
  let maxRunning = 0;
  let open = false;
  const waiting: (() => void)[] = [];
  const check = defineTriggerCheck({
    schema: z.object({}).passthrough(),
    async check() {
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (!open) await new Promise<void>((resolve) => waiting.push(resolve));
        return { fired: true, payload: { ok: true } };
      } finally {
        running--;
      }
    },
  });
  return {
    check,
    get running() {
      return running;
    },
    get maxRunning() {
      return maxRunning;
    },
    open() {
      open = true;
      for (const w of waiting.splice(0)) w();
    },
  };
}

describePostgres("Triggerer", () => {
  const database = useTestDatabase();
  let store: PgTriggerStore;
  let dir: string;
  const started: Triggerer[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-triggerer-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await resetDatabase(database.db);
    store = new PgTriggerStore(database.db, RUN_DECISIONS);
    errors.length = 0;
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((t) => t.stop()));
  });

  async function startTriggerer(registry: TriggerRegistry, options: Partial<TriggererOptions> = {}): Promise<Triggerer> {
    const triggerer = new Triggerer({
      store,
      registry,
      listen: (channel, handler) => database.handle.listen(channel, handler),
      claimIntervalMs: 100,
      expireIntervalMs: 100,
      onError: (err, what) => errors.push(`${what}: ${(err as Error).message}`),
      ...options,
    });
    started.push(triggerer);
    await triggerer.start();
    return triggerer;
  }

  const stepTriggers = (steps: readonly number[], make: (stepId: number, i: number) => Partial<NewTrigger>): NewTrigger[] =>
    steps.map((stepId, i) => ({ kind: "fileExists", stepId, pollIntervalMs: 100, ...make(stepId, i) }) as NewTrigger);

  const triggers = async (): Promise<TriggerRecord[]> => {
    const { rows } = await sql<{ id: string }>`select id from triggers order by id`.execute(database.db);
    return store.getTriggers(rows.map((r) => Number(r.id)));
  };
  const stepStates = async (runId: string) => {
    const { rows } = await sql<{ state: string; n: number }>`
      select state, count(*)::int as n from steps where run_id = ${runId}::uuid group by state order by state`.execute(database.db);
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  };
  const step = (id: number) => database.db.selectFrom("steps").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

  it("fires a file trigger once the file appears, checking every poll interval, and schedules the step", async () => {
    const { runId, steps } = await deferredRun(database.db, 2);
    const file = path.join(dir, "a-{partition}.csv");
    await store.createTriggers(
      stepTriggers(steps, () => ({ args: { path: file } })),
      new Date(),
    );
    await startTriggerer(builtInTriggers());
    // Checked every 100 ms while the file is missing; the unchanged "not yet" is written once, not after every check.
    await expect.poll(async () => Math.min(...(await triggers()).map((t) => t.attempts)), { timeout: 10_000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await triggers()).map((t) => t.attempts)).toEqual([1, 1]);
    expect(
      (await triggers()).every((t) => t.status === "waiting" && (t.lastResult as { detail: string }).detail.includes("does not exist")),
    ).toBe(true);
    // Written, then renamed into place: a check must not see it half written.
    await writeFile(path.join(dir, "tmp"), "x");
    await rename(path.join(dir, "tmp"), path.join(dir, "a-p00001.csv"));
    await expect.poll(() => stepStates(runId), { timeout: 10_000 }).toEqual({ deferred: 1, scheduled: 1 });
    const [fired] = (await triggers()).filter((t) => t.status === "fired");
    expect(fired).toMatchObject({ stepId: steps[0], payload: { path: path.join(dir, "a-p00001.csv"), size: 1 }, leaseOwner: null });
    // The checks that were not written one by one still count.
    expect(fired!.attempts).toBeGreaterThanOrEqual(5);
    expect(errors).toEqual([]);
  });

  it("writes only the latest result of a trigger checked several times between two writes", async () => {
    const { runId, steps } = await deferredRun(database.db, 1);
    const file = path.join(dir, "coalesced");
    await store.createTriggers([{ kind: "fileExists", args: { path: file }, stepId: steps[0]!, pollIntervalMs: 20 }], new Date());
    let checks = 0;
    const counted = builtInTriggers();
    const registry = {
      ...counted,
      fileExists: defineTriggerCheck({
        ...counted.fileExists!,
        check(args: never, context) {
          checks++;
          return counted.fileExists!.check(args, context);
        },
      }),
    };
    // Writes a second apart, checks every 20 ms: "waiting" results pile up before the "fired" one.
    await startTriggerer(registry, { flushMs: 1000 });
    await expect.poll(() => checks, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    await writeFile(file, "");
    await expect.poll(() => stepStates(runId), { timeout: 10_000 }).toEqual({ scheduled: 1 });
  });

  it("checks a trigger created while it runs at once (NOTIFY), not at its next claim round", async () => {
    const { runId, steps } = await deferredRun(database.db, 1);
    await writeFile(path.join(dir, "ready"), "");
    // Claim rounds an hour apart: only the notification can make it look.
    await startTriggerer(builtInTriggers(), { claimIntervalMs: 3_600_000 });
    await store.createTriggers([{ kind: "fileExists", args: { path: path.join(dir, "ready") }, stepId: steps[0]! }], new Date());
    await expect.poll(() => stepStates(runId), { timeout: 10_000 }).toEqual({ scheduled: 1 });
  });

  it("never runs more checks at once than its concurrency, nor holds more triggers than its capacity", async () => {
    const gate = gatedCheck();
    const { runId, steps } = await deferredRun(database.db, 30);
    await store.createTriggers(
      stepTriggers(steps, () => ({ kind: "gated" })),
      new Date(),
    );
    const triggerer = await startTriggerer({ gated: gate.check }, { concurrency: 5, capacity: 20, claimBatch: 3 });
    await expect.poll(() => gate.running, { timeout: 10_000 }).toBe(5);
    await expect.poll(() => triggerer.held, { timeout: 10_000 }).toBe(20);
    // Held triggers are leased (the rest are free for another triggerer); five checks run, fifteen wait their turn.
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from triggers where lease_owner is not null`.execute(database.db);
    expect(rows[0]!.n).toBe(20);
    expect(gate.running).toBe(5);
    gate.open();
    await expect.poll(() => stepStates(runId), { timeout: 20_000 }).toEqual({ scheduled: 30 });
    expect(gate.maxRunning).toBe(5);
  });

  it("records a check that throws, retries it with backoff, and carries on with the others", async () => {
    const { runId, steps } = await deferredRun(database.db, 3);
    let calls = 0;
    const registry = {
      ...builtInTriggers(),
      boom: defineTriggerCheck({
        schema: z.object({}),
        async check() {
          calls++;
          throw new Error("partner API is down");
        },
      }),
    };
    await writeFile(path.join(dir, "b"), "");
    await store.createTriggers(
      stepTriggers(steps, (_, i) => (i === 0 ? { kind: "boom", args: {}, pollIntervalMs: 100 } : { args: { path: path.join(dir, "b") } })),
      new Date(),
    );
    await startTriggerer(registry);
    await expect.poll(() => calls, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect(await stepStates(runId)).toEqual({ deferred: 1, scheduled: 2 });
    const boom = (await triggers()).find((t) => t.kind === "boom")!;
    expect(boom).toMatchObject({ status: "waiting", error: { code: "TRIGGER_CHECK_FAILED" } });
    expect((boom.error as { message: string }).message).toContain("partner API is down");
    // Recorded after each failed check: the count in the database catches up with the calls.
    await expect
      .poll(async () => ((await triggers()).find((t) => t.kind === "boom")!.error as { consecutiveFailures: number }).consecutiveFailures, {
        timeout: 10_000,
      })
      .toBeGreaterThanOrEqual(2);
    // Backoff: the gaps between checks double (100, 200, 400 ms…), so few checks fit in a second.
    const before = calls;
    await new Promise((r) => setTimeout(r, 1000));
    expect(calls - before).toBeLessThanOrEqual(3);
    expect(errors.some((e) => e.includes("partner API is down"))).toBe(true);
  });

  it("gives a hanging check its own timeout (TRIGGER_CHECK_TIMEOUT) while the others fire", async () => {
    const { runId, steps } = await deferredRun(database.db, 2);
    const registry = {
      ...builtInTriggers(),
      hang: defineTriggerCheck({ schema: z.object({}), check: () => new Promise(() => undefined) }),
    };
    await writeFile(path.join(dir, "c"), "");
    await store.createTriggers(
      stepTriggers(steps, (_, i) => (i === 0 ? { kind: "hang", args: {} } : { args: { path: path.join(dir, "c") } })),
      new Date(),
    );
    await startTriggerer(registry, { checkTimeoutMs: 200 });
    await expect
      .poll(async () => (await triggers()).find((t) => t.kind === "hang")?.error, { timeout: 10_000 })
      .toMatchObject({
        code: "TRIGGER_CHECK_TIMEOUT",
      });
    expect(await stepStates(runId)).toEqual({ deferred: 1, scheduled: 1 });
  });

  it("logs a storage error and writes the results again later; claims that fail are retried too", async () => {
    const { runId, steps } = await deferredRun(database.db, 3);
    await writeFile(path.join(dir, "d"), "");
    await store.createTriggers(
      stepTriggers(steps, () => ({ args: { path: path.join(dir, "d") } })),
      new Date(),
    );
    // The first two claims and the first two writes fail.
    let claimFailures = 2;
    let writeFailures = 2;
    const reset = () => Promise.reject(new Error("connection reset"));
    const flaky: TriggerStore = {
      createTriggers: (...a) => store.createTriggers(...a),
      claimDue: (...a) => (claimFailures-- > 0 ? reset() : store.claimDue(...a)),
      renewLeases: (...a) => store.renewLeases(...a),
      releaseLeases: (...a) => store.releaseLeases(...a),
      recordChecks: (...a) => (writeFailures-- > 0 ? reset() : store.recordChecks(...a)),
      expire: (...a) => store.expire(...a),
      getTriggers: (...a) => store.getTriggers(...a),
    };
    await startTriggerer(builtInTriggers(), { store: flaky });
    await expect.poll(() => stepStates(runId), { timeout: 10_000 }).toEqual({ scheduled: 3 });
    expect(errors.filter((e) => e.startsWith("claiming triggers: connection reset"))).toHaveLength(2);
    expect(errors.filter((e) => /^writing \d+ trigger check result\(s\): connection reset$/.test(e))).toHaveLength(2);
    expect(errors).toHaveLength(4);
  });

  it("fails the step at once, for good, when its trigger kind is not registered", async () => {
    const { runId, steps, downstream } = await deferredRun(database.db, 1, { downstream: true });
    await store.createTriggers([{ kind: "partnerReady", args: { url: "x" }, stepId: steps[0]! }], new Date());
    await startTriggerer(builtInTriggers());
    await expect.poll(async () => (await step(steps[0]!)).state, { timeout: 10_000 }).toBe("failed");
    const failed = await step(steps[0]!);
    expect(failed.error).toMatchObject({
      code: "TRIGGER_KIND_UNKNOWN",
      location: { assetKey: "src/wait", partitionKey: "p00001", field: "kind" },
    });
    const message = (failed.error as { message: string }).message;
    expect(message).toContain('asset "src/wait" partition "p00001"');
    expect(message).toContain('trigger kind "partnerReady" is not registered');
    expect(message).toContain("fileExists");
    expect(failed.next_retry_at).toBeNull();
    expect((await step(downstream!)).state).toBe("upstream_failed");
    expect(await database.db.selectFrom("runs").select("status").where("id", "=", runId).executeTakeFirst()).toEqual({ status: "failed" });
    const [trigger] = await triggers();
    expect(trigger).toMatchObject({ status: "failed", leaseOwner: null, error: { code: "TRIGGER_KIND_UNKNOWN" } });
    expect(errors).toEqual([]);
  });

  it("fails the step with the template field when a path template names a field its partition lacks", async () => {
    const { steps } = await deferredRun(database.db, 1);
    // p00001 is a static partition: no time window, so no {start}.
    await store.createTriggers([{ kind: "fileExists", args: { path: "/in/{start}.csv" }, stepId: steps[0]! }], new Date());
    await startTriggerer(builtInTriggers());
    await expect.poll(async () => (await step(steps[0]!)).state, { timeout: 10_000 }).toBe("failed");
    const { error } = await step(steps[0]!);
    expect(error).toMatchObject({
      code: "TRIGGER_TEMPLATE_FIELD_MISSING",
      location: { assetKey: "src/wait", partitionKey: "p00001", field: "args.path" },
    });
    expect((error as { message: string }).message).toMatch(
      /asset "src\/wait" partition "p00001".*args\.path "\/in\/\{start\}\.csv" uses \{start\}.*no time window/,
    );
  });

  it("renders {start} and {end} from the trigger's partition window", async () => {
    const { runId, steps } = await deferredRun(database.db, 1);
    await writeFile(path.join(dir, "2025-03-15T00:00:00.000Z_2025-03-16T00:00:00.000Z"), "");
    await store.createTriggers(
      [
        {
          kind: "fileExists",
          args: { path: path.join(dir, "{start}_{end}") },
          stepId: steps[0]!,
          partitionWindow: { start: "2025-03-15T00:00:00.000Z", end: "2025-03-16T00:00:00.000Z" },
        },
      ],
      new Date(),
    );
    await startTriggerer(builtInTriggers());
    await expect.poll(() => stepStates(runId), { timeout: 10_000 }).toEqual({ scheduled: 1 });
  });

  it("two triggerers share 1 000 triggers: disjoint claims, every trigger fired once", async () => {
    const { runId, steps } = await deferredRun(database.db, 1000);
    const checkedBy = new Map<number, string[]>();
    const counting = (owner: string) => ({
      count: defineTriggerCheck({
        schema: z.object({ stepId: z.number() }),
        async check(args: { stepId: number }) {
          checkedBy.set(args.stepId, [...(checkedBy.get(args.stepId) ?? []), owner]);
          await new Promise((r) => setTimeout(r, 5));
          return { fired: true, payload: { owner } };
        },
      }),
    });
    await store.createTriggers(
      stepTriggers(steps, (stepId) => ({ kind: "count", args: { stepId } })),
      new Date(),
    );
    await Promise.all([
      startTriggerer(counting("a"), { owner: "a", concurrency: 200, claimBatch: 50 }),
      startTriggerer(counting("b"), { owner: "b", concurrency: 200, claimBatch: 50 }),
    ]);
    await expect.poll(() => stepStates(runId), { timeout: 30_000 }).toEqual({ scheduled: 1000 });
    expect(checkedBy.size).toBe(1000);
    expect([...checkedBy.values()].every((owners) => owners.length === 1)).toBe(true);
    const owners = new Set([...checkedBy.values()].map((o) => o[0]));
    expect(owners).toEqual(new Set(["a", "b"]));
    const { rows } = await sql<{ status: string; n: number }>`select status, count(*)::int as n from triggers group by status`.execute(
      database.db,
    );
    expect(rows).toEqual([{ status: "fired", n: 1000 }]);
  });

  it("ignores cleanly a trigger that fires after its step's run was canceled", async () => {
    const gate = gatedCheck();
    const { runId, steps } = await deferredRun(database.db, 1);
    await store.createTriggers([{ kind: "gated", args: {}, stepId: steps[0]! }], new Date());
    const triggerer = await startTriggerer({ gated: gate.check });
    await expect.poll(() => gate.running, { timeout: 10_000 }).toBe(1);
    // What run cancellation does to a deferred step, while its check runs.
    await sql`update steps set state = 'skipped', skip_reason = 'run canceled', ended_at = now() where id = ${steps[0]!}`.execute(
      database.db,
    );
    await sql`update runs set status = 'canceled', steps_done = 1, ended_at = now() where id = ${runId}::uuid`.execute(database.db);
    gate.open();
    await expect.poll(async () => (await triggers())[0]!.status, { timeout: 10_000 }).toBe("canceled");
    expect((await step(steps[0]!)).state).toBe("skipped");
    expect(triggerer.held).toBe(0);
    expect(errors).toEqual([]);
  });

  it("times out an expired wait it holds: the step fails with TRIGGER_TIMED_OUT (skipped with softFail)", async () => {
    const { steps } = await deferredRun(database.db, 2);
    const soon = new Date(Date.now() + 300);
    await store.createTriggers(
      stepTriggers(steps, (_, i) => ({ args: { path: path.join(dir, "never") }, timeoutAt: soon, softFail: i === 1 })),
      new Date(),
    );
    const triggerer = await startTriggerer(builtInTriggers());
    await expect
      .poll(async () => [(await step(steps[0]!)).state, (await step(steps[1]!)).state], { timeout: 10_000 })
      .toEqual(["failed", "skipped"]);
    expect((await step(steps[0]!)).error).toMatchObject({ code: "TRIGGER_TIMED_OUT" });
    await expect.poll(() => triggerer.held, { timeout: 5_000 }).toBe(0);
  });

  it("stop() gives its leases back so another triggerer takes over at once", async () => {
    const { steps } = await deferredRun(database.db, 3);
    await store.createTriggers(
      stepTriggers(steps, () => ({ args: { path: path.join(dir, "later") }, pollIntervalMs: 500 })),
      new Date(),
    );
    const first = await startTriggerer(builtInTriggers(), { owner: "first", leaseMs: 3_600_000 });
    await expect.poll(() => first.held, { timeout: 10_000 }).toBe(3);
    await first.stop();
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from triggers where lease_owner is not null`.execute(database.db);
    expect(rows[0]!.n).toBe(0);
    // Released, not lapsed: the first one's hour-long lease does not hold them back.
    const second = await startTriggerer(builtInTriggers(), { owner: "second" });
    await expect.poll(() => second.held, { timeout: 10_000 }).toBe(3);
  });
});
